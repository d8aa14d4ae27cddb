// zbrun --profile-layers: the layer-cost file it writes (schema/layers.schema.json) holds the
// model's layers in order with plausible figures, and its flags are refused where they do not fit.
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
    CHECK(layer.at("activation_bytes_w").get<double>() <= layer.at("activation_bytes").get<double>());
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
