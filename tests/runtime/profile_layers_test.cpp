// zbrun --profile-layers: the layer-cost file it writes (schema/layers.schema.json) holds the
// model's layers in order with plausible figures, and its flags are refused where they do not fit.
#include <algorithm>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/runtime/cli_helpers.h"

using namespace zbpp;
using namespace zbpp::test;

namespace {

// Runs zbrun --profile-layers on `model` and returns the parsed file.
nlohmann::json profile(const std::string& model, const std::string& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"zbrun", "--profile-layers", out, "--model", model, "--profile-repeats", "3"};
  args.insert(args.end(), extra.begin(), extra.end());
  Run r = call(zbrun_local, args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("wrote " + out + " ") != std::string::npos);
  for (const char* kind : {"embedding ", "block ", "head "}) CHECK(r.out.find(kind) != std::string::npos);
  return nlohmann::json::parse(read_all(out));
}

}  // namespace

TEST_CASE("zbrun --profile-layers: embedding, one block per layer, head, with times and bytes") {
  // vocab * channels (65536) above a block's 12 C^2 + 13 C (12704): the head's parameters outweigh a block's.
  const std::string model = tmp("profile_layers_heavy_head.json");
  std::ofstream(model) << R"({"vocab": 2048, "seq": 16, "channels": 32, "heads": 4, "layers": 3, "batch": 2})";
  const nlohmann::json j = profile(model, tmp("profile_layers_heavy_head.layers.json"));
  CHECK(j.at("format") == "zbpp-layers-1");
  CHECK(j.at("model") == model);
  CHECK(j.at("source").get<std::string>().find("median of 3") != std::string::npos);
  const auto& layers = j.at("layers");
  REQUIRE(layers.size() == 3 + 2);
  CHECK(layers[0].at("name") == "embedding");
  CHECK(layers[0].at("kind") == "embedding");
  for (int l = 0; l < 3; ++l) {
    CHECK(layers[1 + l].at("name") == "h" + std::to_string(l));
    CHECK(layers[1 + l].at("kind") == "block");
    auto same = layers[1 + l];
    same.erase("name");
    auto first = layers[1];
    first.erase("name");
    CHECK(same == first);  // every block is the one measured
  }
  CHECK(layers[4].at("name") == "head");
  CHECK(layers[4].at("kind") == "head");
  for (const auto& layer : layers) {
    INFO(layer.dump());
    CHECK(layer.at("t_f").get<double>() > 0);
    CHECK(layer.at("t_b").get<double>() >= 0);
    CHECK(layer.at("t_w").get<double>() >= 0);
    CHECK(layer.at("activation_bytes_w").get<double>() >= 0);
    CHECK(layer.at("gradient_bytes") == layer.at("parameter_bytes"));
    CHECK(layer.at("optimizer_bytes").get<double>() == 2 * layer.at("parameter_bytes").get<double>());
  }
  // The block's stash and parameters (fp32 on the CPU), the tensors sent between stages.
  CHECK(layers[1].at("activation_bytes").get<double>() > 0);
  CHECK(layers[1].at("parameter_bytes") == 4 * (12 * 32 * 32 + 13 * 32));
  CHECK(layers[4].at("parameter_bytes").get<double>() > layers[1].at("parameter_bytes").get<double>());
  CHECK(layers[0].at("parameter_bytes") == 4 * (2048 * 32 + 16 * 32));  // wte and wpe
  CHECK(layers[0].at("output_bytes") == 4 * 2 * 16 * 32);
  CHECK(layers[1].at("output_bytes") == 4 * 2 * 16 * 32);
  CHECK(layers[4].at("output_bytes") == 0);  // the head sends nothing on
}

TEST_CASE("zbrun --profile-layers: the tiny preset, and flags that do not fit refused") {
  const nlohmann::json j = profile("tiny", tmp("profile_layers_tiny.json"), {"--threads", "1"});
  CHECK(j.at("model") == "tiny");
  CHECK(j.at("layers").size() == 4 + 2);

  const std::string help = "\nrun 'zbrun --help' for usage\n";
  const std::string schedule = plan("profile_layers", "zb-h1", 2, 4);
  Run r = call(zbrun_local, {"zbrun", schedule, "--profile-layers", tmp("profile_layers_x.json")});
  CHECK(r.code == 2);
  CHECK(r.err == "zbrun: --profile-layers measures the model's layers alone and takes no schedule file (drop " +
                     schedule + ")" + help);
  r = call(zbrun_local, {"zbrun", schedule, "--local", "--profile-repeats", "3"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbrun: --profile-repeats needs --profile-layers FILE" + help);
  r = call(zbrun_local, {"zbrun", "--profile-layers", tmp("profile_layers_x.json"), "--profile-repeats", "0"});
  CHECK(r.code == 2);
  r = call(zbrun_local, {"zbrun", "--profile-layers", tmp("no_such_dir/layers.json")});
  CHECK(r.code == 1);
  CHECK(r.err.rfind("zbrun: --profile-layers: cannot write ", 0) == 0);
  r = call(zbrun_local, {"zbrun", "--profile-layers", tmp("profile_layers_x.json"), "--model", "tny"});
  CHECK(r.code == 1);
  CHECK(r.err.rfind("zbrun: tny: not a preset", 0) == 0);
}

TEST_CASE("zbrun: profile the layers -> plan the partition -> run it: the file's split, refused where it does not fit") {
  // A head of eight blocks' weight (vocab 2048 against 32 channels) on 3 stages of 4 blocks.
  const std::string model = tmp("partition_model.json");
  std::ofstream(model) << R"({"vocab": 2048, "seq": 16, "channels": 32, "heads": 4, "layers": 4, "batch": 2})";
  const std::string layers = tmp("partition_layers.json");
  profile(model, layers, {});
  const std::string s = tmp("partition_zb-h1.json");
  Run r = call(run_zbplan, {"zbplan", "plan", "--layers", layers, "-p", "3", "-m", "6", "--method", "zb-h1", "-o", s});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto file = nlohmann::json::parse(std::ifstream(s));
  std::vector<int> blocks;  // the block layers of each stage's range
  int at = 0;
  for (int count : file["partition"]["counts"].get<std::vector<int>>()) {
    int n = 0;
    for (int l = at; l < at + count; ++l) n += file["partition"]["layers"]["layers"][l]["kind"] == "block";
    blocks.push_back(n);
    at += count;
  }
  std::string split;
  for (size_t i = 0; i < blocks.size(); ++i) split += (i ? "," : "") + std::to_string(blocks[i]);
  // zbrun runs the file's split: the same bits as that split given by hand on the same schedule's plain twin.
  auto digest = [&](const std::string& schedule, std::vector<std::string> extra) {
    std::vector<std::string> args = {"zbrun", schedule, "--local", "--steps", "2", "--model", model};
    args.insert(args.end(), extra.begin(), extra.end());
    Run run = call(zbrun_local, args);
    INFO(run.err);
    REQUIRE(run.code == 0);
    return run.out;
  };
  const std::string out = digest(s, {});
  std::string slashed = split;
  std::replace(slashed.begin(), slashed.end(), ',', '/');
  CHECK(out.find("  blocks per virtual stage: " + slashed + " (the schedule's partition)\n") != std::string::npos);
  CHECK(out.find(" MiB, ") != std::string::npos);
  CHECK(out.find(": every rank within its plan") != std::string::npos);
  // Bits do not depend on the split (every stage's sums run in the same order): the same as any split.
  const std::string plain = plan("partition_plain", "zb-h1", 3, 6);
  auto digest_line = [](const std::string& text) { return text.substr(text.find("weights digest")); };
  CHECK(digest_line(out) == digest_line(digest(plain, {"--layer-split", split})));
  // The same split again is fine; another one is refused, naming both.
  CHECK(digest(s, {"--layer-split", split}).find("blocks per virtual stage: " + slashed + " (the schedule's partition)") !=
        std::string::npos);
  const std::string other = split == "2,1,1" ? "1,1,2" : "2,1,1";
  r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "1", "--model", model, "--layer-split", other});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --layer-split " + other + " contradicts the split the schedule was planned for (" + split +
                     " blocks per stage, from its partition): drop --layer-split, or plan again\n");
  // Another model's layers.
  r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "1"});
  CHECK(r.code == 1);
  CHECK(r.err.find("was planned from layer costs of model " + model + ", but this run's model is tiny: give --model " +
                   model) != std::string::npos);
}
