// zbrun end to end, in-process (--local: one thread per rank): training makes progress, losses
// and final weights are bit-identical across schedule methods and the no-pipeline run, and bad
// input or a failing rank ends the run with a located message instead of a hang.
#include "cli/zbrun_cli.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/zbplan_cli.h"
#include "tests/planner/early_recv.h"
#include "tests/runtime/cli_helpers.h"

using namespace zbpp;
using namespace zbpp::test;


TEST_CASE("zbrun: losses and weights are bit-identical across schedules and equal the no-pipeline run") {
  // The synchronous optimizer here; post_validation_test.cpp compares post-validation with it.
  const int m = 8, steps = 4;
  auto plan = [](const std::string& tag, const std::string& method, int p, int m, std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--optimizer", "sync"});
    return zbpp::test::plan(tag, method, p, m, extra);
  };
  auto reference = train(plan("same", "1f1b", 1, m), steps);
  for (int p : {2, 4}) {
    std::vector<std::pair<std::string, std::string>> runs = {
        {"1f1b", plan("same", "1f1b", p, m)},
        {"zb-h1", plan("same", "zb-h1", p, m)},
        {"zb-h2", plan("same", "zb-h2", p, m)},
        {"heuristic", plan("same", "heuristic", p, m, {"--mem-limit", "2p"})},
        {"ilp", plan("same", "ilp", p, m, {"--mem-limit", "2p", "--ilp-seconds", "1"})},
        {"zb-v", plan("same", "zb-v", p, m)},
        {"dualpipe-v", plan("same", "dualpipe-v", p, m)},
        {"v-min", plan("same", "v-min", p, m)},
        {"v-half", plan("same", "v-half", p, m)},
        {"v-zb", plan("same", "v-zb", p, m)},
        {"heuristic-v", plan("same", "heuristic", p, m, {"--chunks", "2", "--mem-limit", "0.5p"})},
        {"1f1b-i", plan("same", "1f1b-i", p, m, {"--chunks", "2"})},
    };
    for (const auto& [method, path] : runs) {
      INFO("p=" << p << " " << method);
      auto result = train(path, steps);
      CHECK(result.first == reference.first);
      CHECK(result.second == reference.second);
    }
  }
}

TEST_CASE("zbrun: a schedule PyTorch wrote (DualPipeV, compute+comms CSV), imported, trains bit-identically") {
  // tests/golden/pytorch/README.md says how the CSV was made; p = 4, m = 8.
  const int steps = 4;
  auto reference = train(plan("pytorch", "1f1b", 1, 8, {"--optimizer", "sync"}), steps);
  const std::string path = tmp("pytorch_dualpipev.json");
  Run r = call(run_zbplan, {"zbplan", "import", std::string(ZBPP_GOLDEN_DIR) + "/pytorch/dualpipev_p4_m8.csv", "--tf",
                            "1", "--tb", "1", "--tw", "0.5", "--optimizer", "sync", "-o", path});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(train(path, steps) == reference);
}

TEST_CASE("zbrun: the loss decreases over 20 steps") {
  auto [losses, digest] = train(plan("learn", "zb-h1", 2, 4), 20, "0.01");
  double first = std::stod(losses.front()), last = std::stod(losses.back());
  INFO("first " << first << ", last " << last);
  CHECK(last < first - 1.0);  // 5.54 -> 2.15 with these settings
}

TEST_CASE("zbrun: bad inputs are refused with a message and exit 1") {
  std::string compute_only = plan("compute", "zb-h1", 2, 4, {"--compute-only"});
  Run r = call(zbrun_local, {"zbrun", compute_only, "--local"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + compute_only +
                     ": the schedule is compute-only; plan it without --compute-only so it holds send/recv\n");
  std::string corrupt = tmp("corrupt.json");
  std::ofstream(corrupt) << "{\"p\": 2, \"stages\": [";
  r = call(zbrun_local, {"zbrun", corrupt, "--local"});
  CHECK(r.code == 1);
  CHECK(r.err.find("zbrun: " + corrupt + ":1:21: invalid JSON") == 0);
  std::string good = plan("bad", "zb-h1", 2, 4);
  std::string bad_model = tmp("bad_model.json");
  std::ofstream(bad_model) << R"({"channels": 30, "heads": 4})";
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", bad_model});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + bad_model + ": channels (30) must be a multiple of heads (4)\n");
  // A directory given as the model file (found by fuzz_zbrun_cli: reading it threw past the
  // JSON error handling and aborted), and a model file with a syntax error, located.
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", ZBPP_TEST_TMP});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + std::string(ZBPP_TEST_TMP) + ": not a regular file\n");
  std::string broken_model = tmp("broken_model.json");
  std::ofstream(broken_model) << "{\"layers\": 2,}";
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", broken_model});
  CHECK(r.code == 1);
  CHECK(r.err.find("zbrun: " + broken_model + ":1:14: invalid JSON") == 0);
  // A model whose parameters, gradients and AdamW state cannot fit this machine's memory: refused,
  // --check included, with the figure, before a run dies of std::bad_alloc (207 G parameters: 3 TiB
  // of state, beyond any machine these tests run on).
  std::string huge_model = tmp("huge_model.json");
  std::ofstream(huge_model) << R"({"vocab": 32000, "seq": 512, "channels": 8192, "heads": 64, "layers": 256, "batch": 1})";
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", huge_model, "--check"});
  CHECK(r.code == 1);
  CHECK(r.err.find("zbrun: " + huge_model + ": the model's 2.067e+11 parameters need 3080 GiB for their values, "
                   "gradients and AdamW state (16 bytes each on the CPU backend), more than the ") == 0);
  // --check runs the same checks and stops before training.
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", bad_model, "--check"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + bad_model + ": channels (30) must be a multiple of heads (4)\n");
  // A flag after a file option is not taken as its file name.
  r = call(zbrun_local, {"zbrun", good, "--local", "--metrics", "--check"});
  CHECK(r.code == 2);
  CHECK(r.err.find("--metrics: '--check' looks like a flag, not a file name") != std::string::npos);
  r = call(zbrun_local, {"zbrun", good, "--local", "--check", "--steps", "1000000"});
  CHECK(r.code == 0);
  CHECK(r.out == good + ": ok: zb-h1 (post-validation) on 2 ranks (p=2, m=4, chunks=1), model tiny (4 layers), "
                        "1000000 steps on cpu in one process\n");
  r = call(zbrun_local, {"zbrun", good, "--local", "--data", tmp("no_such_corpus.txt")});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + tmp("no_such_corpus.txt") + ": cannot open data file: No such file or directory (give a "
                 "text file, or --data synthetic)\n");
  std::string short_data = tmp("short_corpus.txt");
  std::ofstream(short_data) << std::string(64, 'x');
  std::string long_seq = tmp("long_seq.json");
  std::ofstream(long_seq) << R"({"seq": 63})";
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", long_seq, "--data", short_data});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + short_data + ": 64 bytes, but a sequence of the model needs seq + 2 = 65\n");
  // A text file is read as bytes, one token each: a vocabulary below a byte it holds would fold it
  // into another token in silence (issue 34).
  std::string small_vocab = tmp("small_vocab.json"), wide_bytes = tmp("wide_bytes.txt");
  std::ofstream(small_vocab) << R"({"vocab": 128})";
  std::ofstream(wide_bytes) << std::string(100, 'x') << "caf\xc3\xa9 " << std::string(100, '\xff');
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", small_vocab, "--data", wide_bytes, "--check"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + wide_bytes + ": byte 0xc3 at offset 103 (and 101 more bytes of 128 or above) is no token "
                 "of model " + small_vocab + " (vocab 128): a text file's bytes are its tokens; give a model with vocab 256, "
                 "or data whose bytes are all below 128\n");
  std::ofstream(wide_bytes) << std::string(100, 'x');
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", small_vocab, "--data", wide_bytes, "--check"});
  CHECK(r.code == 0);
  r = call(zbrun_local, {"zbrun", good, "--local", "--data", ZBPP_TEST_TMP});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + std::string(ZBPP_TEST_TMP) + ": not a regular file\n");
  std::string typo = tmp("typo_model.json");
  std::ofstream(typo) << R"({"layer": 8})";
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", typo});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + typo + ": /layer: unknown field (expected vocab, seq, channels, heads, layers, batch)\n");
  std::string huge = tmp("huge_model.json");
  std::ofstream(huge) << R"({"vocab": 2000000000})";
  r = call(zbrun_local, {"zbrun", good, "--local", "--model", huge});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: " + huge + ": /vocab: expected an integer 1..1048576, got 2000000000\n");
  r = call(zbrun_local, {"zbrun", good, "--local", "--fail-at", "5:0"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --fail-at 5:0: no such rank and op in this schedule (p = 2)\n");
  // A step beyond --steps is wrong whatever the file (exit 2); a rank beyond the file's is not (exit 1).
  r = call(zbrun_local, {"zbrun", good, "--local", "--steps", "3", "--inject-nonfinite", "3:0"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbrun: --inject-nonfinite 3:0: no step 3 (--steps 3 runs steps 0..2)\nrun 'zbrun --help' for usage\n");
  r = call(zbrun_local, {"zbrun", good, "--local", "--steps", "3", "--inject-nonfinite", "2:2"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --inject-nonfinite 2:2: no rank 2 in this schedule (ranks 0..1)\n");
  r = call(zbrun_local, {"zbrun", good, "--local", "--steps", "3", "--fail-at", "0:1@3"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbrun: --fail-at 0:1@3: no step 3 (--steps 3 runs steps 0..2)\nrun 'zbrun --help' for usage\n");
  r = call(zbrun_local, {"zbrun", good, "--local", "--lr", "nan"});
  CHECK(r.code == 2);
  r = call(zbrun_local, {"zbrun", good, "--local", "--trace", "/nonexistent/dir/t.json"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --trace: cannot write /nonexistent/dir/t.json: No such file or directory (the directory "
                 "/nonexistent/dir)\n");
}

TEST_CASE("zbrun: a failing rank stops every rank quickly, each naming its op") {
  std::string s = plan("fail", "zb-h1", 4, 8);
  auto start = std::chrono::steady_clock::now();
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--fail-at", "2:5", "--timeout", "30"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.code == 1);
  CHECK(r.err.find("zbrun: step 0, rank 2, op 5 (SEND_F1 to rank 3): injected failure (--fail-at)\n") != std::string::npos);
  // The others name the rank that failed first and why.
  CHECK(r.err.find("zbrun: step 0, rank 3, op 6 (RECV_F1 from rank 2): stopped: rank 2 failed: step 0, rank 2, op 5 "
                   "(SEND_F1 to rank 3): injected failure (--fail-at)\n") != std::string::npos);
  CHECK(seconds < 5);  // the others were told; nobody waited out the 30 s timeout
}

TEST_CASE("zbrun: --trace writes the planned and the measured timeline, one slice per compute op each") {
  std::string s = plan("trace", "zb-h1", 2, 4);
  std::string trace = tmp("trace_measured.json");
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--quiet", "--trace", trace});
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::string t = read_all(trace);
  // 2 stages x 4 microbatches x (F, B, W) = 24 compute ops, planned (pid 0) and measured (pid 1).
  CHECK(occurrences(t, "\"ph\":\"X\",\"pid\":0") == 24);
  CHECK(occurrences(t, "\"ph\":\"X\",\"pid\":1") == 24);
  // zbplan show draws the measured run under the plan: one thin block per compute op.
  std::string svg = tmp("trace_measured.svg");
  Run shown = call(run_zbplan, {"zbplan", "show", s, "--measured", trace, "-o", svg});
  INFO(shown.err);
  REQUIRE(shown.code == 0);
  std::string picture = read_all(svg);
  CHECK(occurrences(picture, "class=\"measured op-") == 24);
  CHECK(occurrences(picture, "class=\"op op-") == 24);
  Run wrong = call(run_zbplan, {"zbplan", "show", s, "--measured", s, "-o", svg});
  CHECK(wrong.code == 1);
  CHECK(wrong.err == "zbplan: " + s + ": not a trace: expected {\"traceEvents\": [...]} as zbrun --trace writes\n");
}

TEST_CASE("zbrun: profile -> plan -> run, and the plan's peak memory is the measured one") {
  std::string s = plan("profile", "zb-h1", 2, 6);
  std::string problem = tmp("profiled.problem.json");
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "3", "--quiet", "--profile", problem});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("wrote profile " + problem) != std::string::npos);
  std::string planned = tmp("profiled_plan.json");
  Run p = call(run_zbplan, {"zbplan", "plan", "--method", "heuristic", "--problem", problem, "--mem-limit", "2p", "-o", planned});
  INFO(p.err);
  REQUIRE(p.code == 0);
  Run run = call(zbrun_local, {"zbrun", planned, "--local", "--steps", "2"});
  REQUIRE(run.code == 0);
  // "measured [a MiB, b MiB], planned [a', b']": the same numbers to the printed precision.
  auto line_at = run.out.find("peak activation memory per rank: measured [");
  REQUIRE(line_at != std::string::npos);
  std::string line = run.out.substr(line_at, run.out.find('\n', line_at) - line_at);
  double m0 = 0, m1 = 0, p0 = 0, p1 = 0;
  REQUIRE(std::sscanf(line.c_str(), "peak activation memory per rank: measured [%lf MiB, %lf MiB], planned [%lf, %lf]", &m0, &m1,
                      &p0, &p1) == 4);
  CHECK(m0 == Approx(p0).margin(1e-4));
  CHECK(m1 == Approx(p1).margin(1e-4));
  // A fused-BW schedule cannot be profiled: B and W are not timed apart.
  Run bw = call(zbrun_local, {"zbrun", plan("profile", "1f1b", 2, 6), "--local", "--profile", problem});
  CHECK(bw.code == 1);
  CHECK(bw.err == "zbrun: --profile needs a schedule with separate B and W ops (zb-h1, zb-h2, heuristic, zb-v), not 1f1b\n");
  // Three ranks: T_comm of each link, and the planner reads them back.
  Run three = call(zbrun_local, {"zbrun", plan("profile3", "zb-h1", 3, 6), "--local", "--steps", "2", "--quiet", "--profile",
                                 problem});
  INFO(three.err);
  REQUIRE(three.code == 0);
  const auto links = nlohmann::json::parse(read_all(problem))["t_comm"];
  REQUIRE(links.is_array());
  CHECK(links.size() == 2);
  for (const auto& l : links) CHECK(l.get<double>() > 0);
  Run again = call(run_zbplan, {"zbplan", "plan", "--method", "zb-h1", "--problem", problem, "-o", planned});
  CHECK(again.code == 0);
}

TEST_CASE("zbrun: --layer-split moves blocks between stages without changing the training") {
  // sync: with post-validation the split decides which partial norms each rank sees, and so which
  // speculative steps are rolled back (equal then only to a few ulps).
  std::string s = plan("split", "zb-h1", 2, 4, {"--optimizer", "sync"});
  auto digest_of = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"zbrun", s, "--local", "--steps", "2", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    Run r = call(zbrun_local, args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return r.out.substr(r.out.find("weights digest"));
  };
  CHECK(digest_of({"--layer-split", "1,3"}) == digest_of({}));
  CHECK(digest_of({"--layer-split", "0,4"}) == digest_of({}));
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--layer-split", "1,2,1"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --layer-split gives 3 counts, but the schedule has 2 virtual stages (p x chunks)\n");
  r = call(zbrun_local, {"zbrun", s, "--local", "--layer-split", "1,2"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --layer-split sums to 3 blocks, but the model has 4\n");
  // Counts beyond the model (which once overflowed the sum) are refused one by one.
  r = call(zbrun_local, {"zbrun", s, "--local", "--layer-split", "2147483647,2147483647"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --layer-split: 2147483647 is not a block count of this model (0..4)\n");
  r = call(zbrun_local, {"zbrun", s, "--local", "--layer-split", "-1,5"});
  CHECK(r.code == 2);  // not a count at all: a malformed command line
  CHECK(r.err == "zbrun: --layer-split: '-1,5', item 1: '-1' is out of range; expected an integer 0..2147483647\n"
                 "run 'zbrun --help' for usage\n");
}

TEST_CASE("zbrun: the CPU backend gives the same bits on 1, 2 or 3 threads") {
  // The head's GEMMs span two column tiles (vocab 300 > kTileCols), attention four (sequence, head)
  // pairs: enough for threads to share. OpenBLAS's Haswell and Prescott kernels gave three digests
  // here when OpenBLAS split the GEMMs over its own threads (CI runs this under each OPENBLAS_CORETYPE).
  const std::string model = tmp("threads_model.json");
  std::ofstream(model) << R"({"vocab": 300, "seq": 80, "channels": 96, "heads": 4, "layers": 2, "batch": 1})";
  std::string s = plan("threads", "zb-h1", 2, 4, {"--optimizer", "sync"});
  auto digest_of = [&](const char* threads) {
    Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--quiet", "--model", model, "--threads", threads});
    INFO(r.err);
    REQUIRE(r.code == 0);
    return r.out.substr(r.out.find("weights digest"));
  };
  const std::string one = digest_of("1");
  CHECK(digest_of("2") == one);
  CHECK(digest_of("3") == one);
}

TEST_CASE("zbrun: a NaN gradient on one rank skips that step on every rank, and training goes on") {
  std::string s = plan("nan", "zb-h1", 4, 4);
  std::string metrics = tmp("nan.metrics.jsonl");
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "6", "--lr", "0.01", "--inject-nonfinite", "2:1",
                             "--metrics", metrics});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("step 2: loss ") != std::string::npos);
  CHECK(r.out.find("(skipped: non-finite gradient)") != std::string::npos);
  std::ifstream in(metrics);
  std::string line;
  int skipped = 0, steps = 0;
  double last = 0;
  while (std::getline(in, line)) {
    if (line.find("\"step\"") == std::string::npos) continue;
    ++steps;
    if (line.find("\"skipped\": true") != std::string::npos) {
      ++skipped;
      CHECK(line.find("\"step\": 2,") != std::string::npos);
    }
    last = std::stod(line.substr(line.find("\"loss\": ") + 8));
  }
  CHECK(steps == 6);
  CHECK(skipped == 1);
  CHECK(std::isfinite(last));
  CHECK(last < 5.5);  // still learning after the skipped step
  Run bad = call(zbrun_local, {"zbrun", s, "--local", "--inject-nonfinite", "two"});
  CHECK(bad.code == 2);
}

// Issue 19, class 9: a schedule with W ops out of microbatch order ran silently, its weights
// differing from every other schedule's. It still runs; zbrun says it breaks the promise.
TEST_CASE("zbrun: a schedule with W ops out of microbatch order runs with a warning naming them") {
  std::string path = plan("w_order", "zb-h1", 2, 4, {"--optimizer", "sync"});
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  auto& ops = j["stages"][1];  // the last stage: its last two W's come after all of its F's
  std::vector<size_t> ws;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i]["type"] == "W") ws.push_back(i);
  REQUIRE(ws.size() == 4);
  std::swap(ops[ws[2]], ops[ws[3]]);
  std::ofstream(path) << j.dump(1);
  Run r = call(zbrun_local, {"zbrun", path, "--local", "--steps", "1", "--quiet"});
  INFO(r.err);
  CHECK(r.code == 0);
  const std::string warning = "zbrun: " + path + ": stage 1, op " + std::to_string(ws[2]) +
                              " (W3): warning: W3 runs before W2 (op " + std::to_string(ws[3]) +
                              "): this file does not keep bit-identity";
  CHECK(r.err.rfind(warning, 0) == 0);
  // zbplan's own files keep the order: no warning.
  Run clean = call(zbrun_local, {"zbrun", plan("w_order_clean", "zb-h1", 2, 4), "--local", "--steps", "1", "--quiet"});
  CHECK(clean.code == 0);
  CHECK(clean.err.find("warning") == std::string::npos);
}

// Issue 22: one exit-code rule for both programs, messages that say what to do, and --help
// showing every default.
TEST_CASE("zbrun: usage errors exit 2 naming the closest flag or value, --help shows the defaults, --version") {
  std::string s = plan("usage", "zb-h1", 2, 4);
  const std::string help = "\nrun 'zbrun --help' for usage\n";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--stpes", "3"}, "zbrun: unknown flag --stpes; did you mean --steps?"},
      {{"--backend", "cdua"}, "zbrun: --backend: unknown backend 'cdua'; did you mean 'cuda'? (known: cpu, cuda)"},
      {{"--backend", "opencl"}, "zbrun: --backend: unknown backend 'opencl' (known: cpu, cuda)"},
      {{"--checkpoint", "--resume"}, "zbrun: --checkpoint: '--resume' looks like a flag, not a directory name"},
      {{"--steps"}, "zbrun: --steps needs a value (INT)"},
  };
  for (const auto& [extra, message] : cases) {
    INFO(extra[0]);
    std::vector<std::string> args = {"zbrun", s, "--local"};
    args.insert(args.end(), extra.begin(), extra.end());
    Run r = call(zbrun_local, args);
    CHECK(r.code == 2);
    CHECK(r.err == message + help);
  }
  Run r = call(zbrun_local, {"zbrun", "--local"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbrun: schedule is required (lowered schedule file from zbplan plan), or --profile-layers FILE" + help);
  // Values are read in any case.
  r = call(zbrun_local, {"zbrun", s, "--local", "--backend", "CPU", "--check"});
  CHECK(r.code == 0);
  CHECK(r.out.find(" steps on cpu in one process\n") != std::string::npos);
  // A mistyped preset or data name is not taken for a missing file alone.
  r = call(zbrun_local, {"zbrun", s, "--local", "--model", "tny"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: tny: not a preset (tiny, small, c256; did you mean 'tiny'?), and cannot open it as a model file: "
                 "No such file or directory\n");
  r = call(zbrun_local, {"zbrun", s, "--local", "--data", "synthetc"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: synthetc: cannot open data file: No such file or directory; did you mean --data synthetic?\n");

  r = call(zbrun_local, {"zbrun", "--help"});
  CHECK(r.code == 0);
  for (const char* described : {"training steps (default 20)\n", "initialisation seed (default 1)\n",
                                "AdamW learning rate (default 0.001)\n", "gradient-norm clip (<= 0: off) (default 1)\n",
                                "seconds any wait may take before the run fails (default 10)\n",
                                "layers, batch} (default tiny)\n", "read as bytes (default synthetic)\n",
                                "under mpirun) (default cpu)\n", "the same bits) (default 1)\n"})
    CHECK(r.out.find(described) != std::string::npos);
  for (const char* shown : {"  --checkpoint DIR ", "  --dump-weights DIR ", "  --steps INT ", "  --lr NUMBER ",
                            "  --backend cpu|cuda ", "  --model PRESET|FILE ", "  --data synthetic|FILE ",
                            "  --fail-at RANK:OP[@STEP] ", "  schedule FILE ",
                            "  --profile-repeats N "})
    CHECK(r.out.find(shown) != std::string::npos);
  CHECK(r.out.find("TEXT") == std::string::npos);  // CLI11's type names: a metavar says what to give
  CHECK(r.out.find("INT:") == std::string::npos);

  r = call(zbrun_local, {"zbrun", "--version"});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("zbrun 0.1.0 (git ", 0) == 0);
  CHECK(r.out.find("\n  OpenBLAS: ") != std::string::npos);
}

// Issue 22: the tiny model's 4 blocks over 8 stages left two with nothing to do, silently.
TEST_CASE("zbrun: stages that hold no transformer block are named in a warning, by a run and by --check") {
  std::string p8 = plan("empty_stages", "zb-h1", 8, 8);
  const std::string warning = "zbrun: warning: model tiny has 4 transformer blocks for 8 stages: stages 5 and 6 hold "
                              "none and only pass activations on, so the run does not follow the plan's times; use a "
                              "model with at least 6 layers, or plan fewer stages\n";
  Run r = call(zbrun_local, {"zbrun", p8, "--local", "--check"});
  CHECK(r.code == 0);
  CHECK(r.err == warning);
  CHECK(r.out == p8 + ": ok: zb-h1 (post-validation) on 8 ranks (p=8, m=8, chunks=1), model tiny (4 layers), 20 steps "
                      "on cpu in one process\n");
  r = call(zbrun_local, {"zbrun", p8, "--local", "--steps", "1", "--quiet"});
  CHECK(r.code == 0);
  CHECK(r.err == warning);
  // c256 has 8 blocks: one each, no warning.
  r = call(zbrun_local, {"zbrun", p8, "--local", "--check", "--model", "c256"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  // An explicit split is the user's: the hint says where to move blocks.
  r = call(zbrun_local, {"zbrun", p8, "--local", "--check", "--layer-split", "0,2,1,0,0,0,1,0"});
  CHECK(r.code == 0);
  CHECK(r.err == "zbrun: warning: model tiny has 4 transformer blocks for 8 stages: stages 3, 4 and 5 hold none and "
                 "only pass activations on, so the run does not follow the plan's times; give every stage a block in "
                 "--layer-split\n");
  // Interleaved: virtual stages, and the ranks that hold them.
  std::string v = plan("empty_stages", "zb-v", 4, 8);
  r = call(zbrun_local, {"zbrun", v, "--local", "--check"});
  CHECK(r.code == 0);
  CHECK(r.err == "zbrun: warning: model tiny has 4 transformer blocks for 8 virtual stages: virtual stages 5 (rank 2) "
                 "and 6 (rank 1) hold none and only pass activations on, so the run does not follow the plan's times; "
                 "use a model with at least 6 layers, or plan fewer stages\n");
  r = call(zbrun_local, {"zbrun", plan("empty_stages", "zb-h1", 4, 8), "--local", "--check"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
}

// Issue 18: a lowered file's planned figures include the waits its SEND/RECV order causes, and the
// run agrees. Moving stage 0's RECV_B1 before its W0 (zbplan_cli_test.cpp: the planned span goes
// from 7 to 8) makes rank 0 wait for stage 1's B1 before W0. Paced (each compute op lasts its
// planned time or longer, waits follow the file), stage 0's measured span cannot be under 8 units:
// the chain F0, ..., B1 on stage 1, RECV_B1, W0, ... runs through the wait.
TEST_CASE("zbrun: a RECV moved earlier makes the paced run wait as planned (trace span >= the planned 8)") {
  std::string s = tmp("early_recv_run.json"), edited = tmp("early_recv_run_edited.json");
  Run planned = call(run_zbplan, {"zbplan", "plan", "--method", "zb-h1", "-p", "2", "-m", "2", "--tf", "1", "--tb", "1",
                                  "--tw", "1", "-o", s});
  REQUIRE(planned.code == 0);
  auto j = with_early_recv(s);
  drop_recorded_figures(&j);
  std::ofstream(edited) << j.dump(1);
  const double pace = 0.02;  // seconds per time unit
  std::string trace = tmp("early_recv_run_trace.json");
  Run r = call(zbrun_local, {"zbrun", edited, "--local", "--steps", "1", "--pace", "0.02", "--trace", trace});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("planned per iteration: period 8 (steady state), one alone 8 ") != std::string::npos);
  auto events = nlohmann::json::parse(std::ifstream(trace))["traceEvents"];
  double planned_end = 0, first = 1e300, last = 0;
  for (const auto& e : events) {
    if (e["ph"] != "X" || e["tid"] != 0) continue;
    if (e["pid"] == 0) planned_end = std::max(planned_end, e["ts"].get<double>() + e["dur"].get<double>());
    if (e["pid"] == 1) {
      first = std::min(first, e["ts"].get<double>());
      last = std::max(last, e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  CHECK(planned_end == Approx(8e3));  // 8 units, drawn as ms
  CHECK((last - first) / 1e6 >= 8 * pace * 0.999);
}

// Issue 37: --quiet is quiet: the result in one line, with the same digest as the whole report's.
TEST_CASE("zbrun: --quiet prints the result in one line, the digest of the full report") {
  const std::string s = plan("quiet_line", "zb-h1", 2, 4);
  Run quiet = call(zbrun_local, {"zbrun", s, "--local", "--steps", "3", "--quiet"});
  Run full = call(zbrun_local, {"zbrun", s, "--local", "--steps", "3"});
  INFO(quiet.err);
  REQUIRE(quiet.code == 0);
  REQUIRE(full.code == 0);
  CHECK(quiet.err.empty());
  CHECK(std::count(quiet.out.begin(), quiet.out.end(), '\n') == 1);
  CHECK(quiet.out.rfind("done: 3 steps of zb-h1 on 2 ranks, iteration time ", 0) == 0);
  CHECK(quiet.out.find(" planned), weights digest ") != std::string::npos);
  auto digest = [](const std::string& out) {
    const auto at = out.find("weights digest ");
    return at == std::string::npos ? std::string() : out.substr(at + 15, out.find_first_of(" \n", at + 15) - at - 15);
  };
  CHECK(!digest(quiet.out).empty());
  CHECK(digest(quiet.out) == digest(full.out));
  CHECK(full.out.find("step 2: loss ") != std::string::npos);  // the full report has its step lines
}
