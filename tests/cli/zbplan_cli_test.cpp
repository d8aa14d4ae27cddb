// Tests for the zbplan command line, run in-process: plan -> simulate -> validate, the done
// criterion of the planner core, and bad input giving a one-line error and a non-zero exit.
#include "cli/zbplan_cli.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/ticks.h"
#include "tests/planner/early_recv.h"

using namespace zbpp;

namespace {
struct Run {
  int code;
  std::string out, err;
};

Run zbplan(std::vector<std::string> args) {
  args.insert(args.begin(), "zbplan");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = run_zbplan(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

std::string tmp(const std::string& name) { return std::string(ZBPP_TEST_TMP) + "/" + name; }

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
}  // namespace

TEST_CASE("zbplan: plan zb-h1 at 1.5B/p8/m24 then simulate reports span bubble rate 0.1585") {
  std::string s = tmp("cli_zbh1.json");
  Run plan = zbplan({"plan", "--method", "zb-h1", "-p", "8", "-m", "24", "--tf", "18.522", "--tb", "18.086", "--tw",
                     "9.337", "--tcomm", "0.601", "-o", s});
  INFO(plan.err);
  REQUIRE(plan.code == 0);
  Run sim = zbplan({"simulate", s, "--trace", tmp("cli_zbh1_trace.json")});
  INFO(sim.err);
  REQUIRE(sim.code == 0);
  CHECK(sim.out.find("  span bubble rate  0.1585  ((span - busy) / span; 0.158520)\n") != std::string::npos);
  CHECK(sim.out.find("  span              1310.405  (") != std::string::npos);
  CHECK(sim.out.find("  peak memory       [8, 7.5, 7, 6.5, 6, 5.5, 5, 4.5]") != std::string::npos);
  // The period and the wall clock, each with its own bubble rate.
  CHECK(sim.out.find("  period            1310.405  (3 iterations back to back, optimizer post-validation; period "
                     "bubble rate 0.1585)\n") != std::string::npos);
  // The trace holds one slice per op: 8 stages x 24 microbatches x (F, B, W).
  auto trace = nlohmann::json::parse(std::ifstream(tmp("cli_zbh1_trace.json")));
  int slices = 0;
  for (const auto& e : trace["traceEvents"]) slices += e["ph"] == "X";
  CHECK(slices == 8 * 24 * 3);
  Run ok = zbplan({"validate", s});
  CHECK(ok.code == 0);
  // 576 compute ops, 4 x 168 sends and receives between neighbours, 8 optimizer steps.
  CHECK(ok.out == s + ": ok (zb-h1, lowered, p=8, m=24, chunks=1, 1292 ops)\n");
}

TEST_CASE("zbplan: plan from a problem file, with flags overriding it") {
  std::string problem = tmp("cli_problem.json");
  write(problem, R"({"p": 4, "m": 8, "t_f": [1.2, 1, 1, 1.2], "t_b": 1, "t_w": 0.5, "t_comm": 0.05, "mem_limit": "1p"})");
  Run plan = zbplan({"plan", "--method", "1f1b", "--problem", problem, "-m", "12", "-o", tmp("cli_from_file.json")});
  INFO(plan.err);
  REQUIRE(plan.code == 0);
  CHECK(plan.out.find("(p=4, m=12, chunks=1)") != std::string::npos);
  CHECK(plan.out.find("(limit 4 = 1p)") != std::string::npos);
}

TEST_CASE("zbplan: --tcomm per link reaches every method's file, validated, and a slow link costs time") {
  const std::vector<std::string> base = {"-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "0.5", "--time-limit", "0"};
  for (const auto& method : std::vector<std::vector<std::string>>{{"--method", "zb-h1"},
                                                                 {"--method", "heuristic", "--mem-limit", "2p"},
                                                                 {"--method", "heuristic", "--chunks", "2"},
                                                                 {"--method", "v-zb"},
                                                                 {"--method", "1f1b-i", "--chunks", "2"}}) {
    double period[2] = {0, 0};
    for (int slow = 0; slow < 2; ++slow) {
      std::vector<std::string> args = {"plan"};
      args.insert(args.end(), method.begin(), method.end());
      args.insert(args.end(), base.begin(), base.end());
      // Link 1 (stages 1-2) slow, and the link from stage 3 back to 0 slower still.
      for (const std::string& a : {std::string("--tcomm"), std::string(slow ? "0.1,1.5,0.1,2" : "0.1")}) args.push_back(a);
      const std::string file = tmp("cli_links_" + std::to_string(slow) + ".json");
      args.insert(args.end(), {"-o", file});
      Run plan = zbplan(args);
      INFO(method[1] << (method.size() > 2 ? " " + method[2] + " " + method[3] : "") << ": " << plan.err);
      REQUIRE(plan.code == 0);
      Run ok = zbplan({"validate", file});
      CHECK(ok.code == 0);
      auto j = nlohmann::json::parse(std::ifstream(file));
      CHECK(j["problem"]["t_comm"].dump() == (slow ? "[0.1,1.5,0.1,2.0]" : "0.1"));
      period[slow] = j["iterations"]["period"].get<double>();
    }
    CHECK(period[1] > period[0]);
  }
  Run bad = zbplan({"plan", "--method", "zb-h1", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "0.5", "--tcomm",
                    "0.1,0.2", "-o", tmp("cli_links_bad.json")});
  CHECK(bad.code == 1);
  CHECK(bad.err == "zbplan: t_comm has 2 values; give one, one per link between neighbouring stages (p - 1 = 3), or p = 4 "
                   "where the last is the link from stage 3 back to stage 0\n");
}

TEST_CASE("zbplan: bad flags and impossible inputs give one-line errors and non-zero exits") {
  std::string out = tmp("cli_bad.json");
  auto plan_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"plan", "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    return zbplan(args);
  };
  Run r = plan_with({"--method", "zb-h1", "-p", "4", "-m", "0", "--tf", "1", "--tb", "1", "--tw", "1"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbplan: m (microbatches) must be at least 1, got 0\n");
  r = zbplan({"plan", "--method", "zb-h1", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1", "-o", "--quiet"});
  CHECK(r.code == 2);  // not a file named "--quiet"
  CHECK(r.err.find("'--quiet' looks like a flag, not a file name") != std::string::npos);
  r = plan_with({"--method", "zb-h1", "-p", "4", "-m", "8", "--tf", "-1", "--tb", "1", "--tw", "1"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbplan: t_f must be positive and finite, got -1.0\n");
  r = plan_with({"--method", "zb-h1", "-p", "4", "-m", "8", "--tf", "1,x", "--tb", "1", "--tw", "1"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: --tf: '1,x', item 2: 'x' is not a number; expected a decimal number like 2 or 0.5\n"
                 "run 'zbplan plan --help' for usage\n");
  r = plan_with({"--method", "zb-h1", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1", "--mem-limit", "0.1p"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbplan: memory limit 0.4 is below 1, the activation memory of a single microbatch (M_B); no schedule fits\n");
  // A problem given by flags with some left out is a usage error naming them (a --problem file that
  // lacks a field is an invalid input, exit 1: problem_test.cpp).
  r = plan_with({"--method", "zb-h1", "-p", "4", "-m", "8", "--tf", "1"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: no --tb and --tw: give the problem with -p, -m, --tf, --tb and --tw, or with --problem FILE\n"
                 "run 'zbplan plan --help' for usage\n");
  r = plan_with({"--method", "zb-h1", "-p", "4", "--tf", "1", "--tb", "1", "--tw", "1"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: no -m (microbatches): give the problem with -p, -m, --tf, --tb and --tw, or with --problem "
                 "FILE\nrun 'zbplan plan --help' for usage\n");
  // An unknown method is a usage error (exit 2), with the closest name when one is near.
  r = plan_with({"--method", "zb-h9", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: --method: unknown method 'zb-h9'; did you mean 'zb-h1'? (known: 1f1b, 1f1b-i, zb-h1, zb-h2, "
                 "heuristic, ilp, zb-v, dualpipe-v, v-min, v-half, v-zb, heuristic-v, ilp-v, auto, zb-1p, zb-2p)\nrun 'zbplan plan --help' for usage\n");
  r = plan_with({"--method", "heurstic", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1"});
  CHECK(r.code == 2);
  CHECK(r.err.find("unknown method 'heurstic'; did you mean 'heuristic'?") != std::string::npos);
  r = plan_with({"--method", "pipedream", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1"});
  CHECK(r.code == 2);
  CHECK(r.err.find("unknown method 'pipedream' (known: ") != std::string::npos);  // nothing close: no guess
  // The paper's names: ZB-2p is the heuristic at 2p, and a contradicting --mem-limit is refused.
  r = plan_with({"--method", "zb-2p", "--mem-limit", "1p", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: --method zb-2p is the heuristic at --mem-limit 2p, not 1p: drop --mem-limit, or use --method "
                 "heuristic --mem-limit 1p\nrun 'zbplan plan --help' for usage\n");
  r = plan_with({"-p", "4", "-m", "8"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: --method is required (schedule method: 1f1b, 1f1b-i, zb-h1, zb-h2, heuristic, ilp, zb-v, dualpipe-v, v-min, v-half, v-zb, heuristic-v, ilp-v, auto; "
                 "or the paper's names, in any case (ZB-H1, ZB-H2, 1F1B, ZB-V; ZB-1p and ZB-2p: the heuristic at "
                 "--mem-limit 1p and 2p); zbplan methods says what each is)\nrun 'zbplan plan --help' for usage\n");
  r = zbplan({"plan", "--method", "zb-h1", "-p", "4", "-m", "8", "--bogus", "-o", out});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: unknown flag --bogus\nrun 'zbplan plan --help' for usage\n");
  // A method whose schedule needs more memory than the limit says where it crosses it, what limit
  // it needs, and that the heuristic plans within this one.
  r = plan_with({"--method", "zb-h2", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1", "--mem-limit", "1p"});
  CHECK(r.code == 1);
  CHECK(r.err ==
        "zbplan: the zb-h2 schedule does not fit this problem:\n"
        "zbplan: stage 0, op 4 (F4): activation memory reaches 5, over the limit 4 = 1p\n"
        "zbplan: stage 1, op 4 (F4): activation memory reaches 5, over the limit 4 = 1p\n"
        "zbplan: stage 2, op 8 (F5): activation memory reaches 4.5, over the limit 4 = 1p\n"
        "zbplan: zb-h2 needs a memory limit of at least 7 (1.75p, stage 0's peak), not 4 = 1p: raise --mem-limit to "
        "1.75p, or use --method heuristic (or auto), which plans within 4 = 1p\n");
}

// Issue 22: every usage error exits 2, says what is wrong and what to do, and names the closest
// flag, subcommand or value for a typo.
TEST_CASE("zbplan: usage errors exit 2 with the closest name for a typo and the subcommand's help") {
  const std::vector<std::string> problem = {"-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "1", "-o",
                                            tmp("cli_usage.json")};
  auto plan_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"plan", "--method", "zb-h1"};
    args.insert(args.end(), problem.begin(), problem.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return zbplan(args);
  };
  const std::string plan_help = "\nrun 'zbplan plan --help' for usage\n";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--mem-limt", "2p"}, "zbplan: unknown flag --mem-limt; did you mean --mem-limit?"},
      {{"--optimiser=sync"}, "zbplan: unknown flag --optimiser; did you mean --optimizer?"},
      {{"--optimizer", "foo"}, "zbplan: --optimizer: unknown optimizer 'foo' (known: post-validation, sync)"},
      {{"--optimizer", "snyc"},
       "zbplan: --optimizer: unknown optimizer 'snyc'; did you mean 'sync'? (known: post-validation, sync)"},
      {{"--objective", "walls"}, "zbplan: --objective: unknown objective 'walls'; did you mean 'wall'? (known: period, wall)"},
      {{"--post-validation-at", "first-backwards"},
       "zbplan: --post-validation-at: unknown place 'first-backwards'; did you mean 'first-backward'? (known: "
       "first-backward, start)"},
      {{"--validate-at", "first-backwards"},
       "zbplan: --validate-at: unknown place 'first-backwards'; did you mean 'first-backward'? (known: first-backward, "
       "start)"},
      {{"--mem-limit", "2x"}, "zbplan: --mem-limit: '2x' is neither a number nor a multiple of p*M_B like 1p, 1.5p or 2p"},
      {{"--mem-limit", "0p"}, "zbplan: --mem-limit: '0p' must be above 0"},
      {{"-p", "two"}, "zbplan: --stages: 'two' is not a number; expected a decimal integer"},
      {{"--tf", "abc"}, "zbplan: --tf: 'abc' is not a number; expected a decimal number like 2 or 0.5"},
      {{"--tcomm"}, "zbplan: --tcomm needs a value (LIST)"},
  };
  for (const auto& [extra, message] : cases) {
    INFO(extra[0]);
    Run r = plan_with(extra);
    CHECK(r.code == 2);
    CHECK(r.err == message + plan_help);
  }
  // The enum values and the memory limit are read in any case.
  Run upper = plan_with({"--mem-limit", "2P", "--optimizer", "SYNC"});
  INFO(upper.err);
  CHECK(upper.code == 0);
  CHECK(upper.out.find("(limit 4 = 2p)") != std::string::npos);
  CHECK(upper.out.find("back to back, optimizer sync; ") != std::string::npos);

  Run r = zbplan({"plna"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: unknown subcommand 'plna'; did you mean 'plan'? (subcommands: plan, methods, simulate, validate, show, "
                 "export, import)\nrun 'zbplan --help' for usage\n");
  r = zbplan({});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: give a subcommand: plan, methods, simulate, validate, show, export, import\nrun 'zbplan --help' for "
                 "usage\n");
  r = zbplan({"validate", tmp("a.json"), tmp("b.json")});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: unexpected argument '" + tmp("b.json") + "'\nrun 'zbplan validate --help' for usage\n");
  r = zbplan({"export", tmp("a.json"), "--format", "pytorch", "-o", tmp("a.csv")});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: --format: unknown format 'pytorch' (known: pytorch-csv, layout)\nrun 'zbplan export --help' for usage\n");
  r = zbplan({"show", tmp("a.json"), "-o", tmp("a.png")});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: --output: '" + tmp("a.png") + "': a picture's name ends in .svg or .html (the kind of picture "
                 "written)\nrun 'zbplan show --help' for usage\n");
}

TEST_CASE("zbplan: --version names the version, the git commit and the libraries the build found") {
  Run r = zbplan({"--version"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  const std::string first = r.out.substr(0, r.out.find('\n'));
  CHECK(first.rfind("zbplan 0.1.0 (git ", 0) == 0);
  CHECK(first.back() == ')');
  CHECK(r.out.find("\nbuilt with:\n  CBC: ") != std::string::npos);
  for (const char* line : {"\n  OpenBLAS: ", "\n  MPI: ", "\n  CUDA: ", "\n  NCCL: "}) CHECK(r.out.find(line) != std::string::npos);
#ifdef ZBPP_HAVE_CBC
  CHECK(r.out.find("  CBC: not found") == std::string::npos);
#else
  CHECK(r.out.find("  CBC: not found") != std::string::npos);
#endif
  // Even where a subcommand is required, and after one.
  CHECK(zbplan({"plan", "--version"}).out == r.out);
}

TEST_CASE("zbplan: validate rejects a broken file with the stage and op, and simulate refuses it too") {
  std::string s = tmp("cli_broken.json");
  Run plan = zbplan({"plan", "--method", "1f1b", "-p", "2", "-m", "2", "--tf", "1", "--tb", "1", "--tw", "1", "--compute-only", "-o", s});
  REQUIRE(plan.code == 0);
  auto j = nlohmann::json::parse(std::ifstream(s));
  j["stages"][1].erase(1);  // drop stage 1's BW0
  write(s, j.dump(1));
  Run v = zbplan({"validate", s});
  CHECK(v.code == 1);
  CHECK(v.err == "zbplan: " + s + ": stage 1: B0 (or BW0) is missing\nzbplan: " + s + ": invalid schedule (1 error)\n");
  Run sim = zbplan({"simulate", s});
  CHECK(sim.code == 1);
  write(s, "{\"p\": 2,");
  v = zbplan({"validate", s});
  CHECK(v.code == 1);
  CHECK(v.err.find(s + ":1:9: invalid JSON") != std::string::npos);
  v = zbplan({"validate", ZBPP_TEST_TMP});
  CHECK(v.code == 1);
  CHECK(v.err == "zbplan: " + std::string(ZBPP_TEST_TMP) + ": not a regular file\n");
  v = zbplan({"validate", tmp("does_not_exist.json")});
  CHECK(v.code == 1);
  CHECK(v.err == "zbplan: " + tmp("does_not_exist.json") + ": cannot open file: No such file or directory\n");
}

TEST_CASE("zbplan: the paper's names are methods: ZB-H1, 1F1B and ZB-V in any case, ZB-1p and ZB-2p the heuristic") {
  const std::vector<std::string> problem = {"-p", "8", "-m", "24", "--tf", "18.522", "--tb", "18.086", "--tw", "9.337",
                                            "--tcomm", "0.601", "--mem-b", "1", "--mem-w", "0.3664"};
  auto out_of = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "plan");
    args.insert(args.end(), problem.begin(), problem.end());
    args.insert(args.end(), {"-o", tmp("cli_alias.json")});
    Run r = zbplan(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return r.out;
  };
  CHECK(out_of({"--method", "ZB-2p"}) == out_of({"--method", "heuristic", "--mem-limit", "2p"}));
  CHECK(out_of({"--method", "ZB-1P", "--mem-limit", "1p"}) == out_of({"--method", "heuristic", "--mem-limit", "1p"}));
  CHECK(out_of({"--method", "ZB-H1"}) == out_of({"--method", "zb-h1"}));
  CHECK(out_of({"--method", "1F1B"}).find("method            1f1b (p=8") != std::string::npos);
  CHECK(out_of({"--method", "ZB-V"}).find("method            zb-v (p=8") != std::string::npos);
  CHECK(out_of({"--method", "ZB-2p"}).find("span bubble rate  0.0433") != std::string::npos);
}

TEST_CASE("zbplan: heuristic at 2p and auto at 1p on 1.5B/p8/m24") {
  std::vector<std::string> problem = {"-p", "8", "-m", "24", "--tf", "18.522", "--tb", "18.086", "--tw", "9.337",
                                      "--tcomm", "0.601", "--mem-b", "1", "--mem-w", "0.3664"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), problem.begin(), problem.end());
    return zbplan(args);
  };
  Run h = with({"plan", "--method", "heuristic", "--mem-limit", "2p", "-o", tmp("cli_zb2p.json")});
  INFO(h.err);
  REQUIRE(h.code == 0);
  CHECK(h.out.find("span bubble rate  0.0433") != std::string::npos);
  CHECK(h.out.find("search: 12 candidates (8 switch combinations, the warm-up bound's, 3 handcrafted seeds): 3 finished within the memory limit, 9 stopped once sure to lose;") != std::string::npos);
  Run sim = zbplan({"simulate", tmp("cli_zb2p.json")});
  CHECK(sim.out.find("span bubble rate  0.0433") != std::string::npos);

  Run a = with({"plan", "--method", "auto", "--mem-limit", "1p", "--ilp-seconds", "1", "-o", tmp("cli_auto.json")});
  INFO(a.err);
  REQUIRE(a.code == 0);
  CHECK(a.out.find("auto: zb-h2 does not fit: stage 0, op 8 (F8): activation memory reaches 9, over the limit 8 = 1p") !=
        std::string::npos);
  // The interleaved placement competes too, each stage split in halves: 1f1b-i holds more than
  // 1p; the interleaved search fits, its line like the others.
  CHECK(a.out.find("  auto: 1f1b-i does not fit: stage 0, op 16 (F8): activation memory reaches 8.5, over the limit 8 = 1p\n") !=
        std::string::npos);
  CHECK(a.out.find("  auto: heuristic --placement interleaved under post-validation: interleaved (2 chunks), peak memory 8 of 8 = 1p, "
                   "span 1236.434, period 1236.434 (period bubble rate 0.1082), wall 1247.254 (wall bubble rate 0.1159)\n") !=
        std::string::npos);
  CHECK(a.out.find("  auto: zb-h1 under post-validation: 1 chunk, peak memory 8 of 8 = 1p, span 1310.405, period 1310.405 (period bubble rate 0.1585), "
                   "wall 1314.612 (wall bubble rate 0.1612)\n  auto: zb-h1 under post-validation, validated at the "
                   "start: 1 chunk, peak memory 8 of 8 = 1p, span 1310.405, period 1318.819 (period bubble rate 0.1639), wall 1314.612 (wall bubble rate "
                   "0.1612)\n  auto: zb-h1 under sync: "
                   "1 chunk, peak memory 8 of 8 = 1p, span 1310.405, period 1314.011 (period bubble rate 0.1608), "
                   "wall 1314.011 (wall bubble rate 0.1608)\n") != std::string::npos);
  // ZB-V's period under post-validation is its span (issue 20), below the synchronous step's.
  CHECK(a.out.find("  auto: zb-v under post-validation: V (2 chunks), peak memory 8 of 8 = 1p, span 1189.271, period 1189.271 (period bubble rate 0.0728), "
                   "wall 1193.478 (wall bubble rate 0.0761)\n") != std::string::npos);
  CHECK(a.out.find("  auto: zb-v under sync: V (2 chunks), peak memory 8 of 8 = 1p, span 1189.271, period 1192.877 (period bubble rate 0.0756), "
                   "wall 1192.877 (wall bubble rate 0.0756)\n") != std::string::npos);
  // V-ZB and the V search both take the round-by-round V-ZB (docs/v-shape.md), the authors' own
  // order on these times: they tie, again with the span as period; v-zb, listed first, wins.
  for (const std::string method : {"v-zb", "heuristic-v"})
    CHECK(a.out.find("  auto: " + method + " under post-validation: V (2 chunks), peak memory 8 of 8 = 1p, span 1186.0225, "
                     "period 1186.0225 (period bubble rate 0.0703), wall 1190.2295 (wall bubble rate 0.0736)\n") !=
          std::string::npos);
  CHECK(a.out.find("auto: best by period (optimizer included) is v-zb (post-validation)") != std::string::npos);
  CHECK(a.out.find("  period            1186.0225  (3 iterations back to back, optimizer post-validation") !=
        std::string::npos);
  CHECK(a.out.find("  method            v-zb (p=8, m=24, chunks=2)") != std::string::npos);
  Run v = zbplan({"validate", tmp("cli_auto.json")});
  CHECK(v.code == 0);
}

TEST_CASE("zbplan: --help lists the subcommands and exits 0") {
  Run r = zbplan({"--help"});
  CHECK(r.code == 0);
  CHECK(r.out.find("plan") != std::string::npos);
  CHECK(r.out.find("simulate") != std::string::npos);
  r = zbplan({"plan", "--help"});
  CHECK(r.code == 0);
  CHECK(r.out.find("--mem-limit") != std::string::npos);
  // Issue 22: the subcommand's usage line, a metavar (not CLI11's "TEXT:FILE") and every default.
  CHECK(r.out.rfind("plan a schedule for a problem and write the schedule file\nUsage: zbplan plan [OPTIONS]\n", 0) == 0);
  for (const char* shown : {"  --method METHOD REQUIRED ", "  -o,--output FILE REQUIRED ", "  --mem-limit LIMIT ",
                            "  --optimizer post-validation|sync\n", "  --objective period|wall "})
    CHECK(r.out.find(shown) != std::string::npos);
  for (const char* described : {"iterations simulated back to back for the period (default 3)\n",
                                "CBC threads for the ILP (default 1)\n", "(M_W), as --tf (default 0.5)\n",
                                "the last for stage p-1 back to 0 (default 0)\n"})
    CHECK(r.out.find(described) != std::string::npos);
  CHECK(r.out.find("TEXT") == std::string::npos);
  CHECK(r.out.find("INT:") == std::string::npos);
  // show draws one iteration unless told: its help says so, not simulate's default of 3.
  r = zbplan({"show", "--help"});
  CHECK(r.code == 0);
  CHECK(r.out.find("  --iterations K ") != std::string::npos);
  CHECK(r.out.find("draw K iterations back to back, timed by the K-iteration simulation (default: one iteration "
                   "alone); needs a lowered file\n") != std::string::npos);
  CHECK(r.out.find("(default 3)") == std::string::npos);
}

TEST_CASE("zbplan: --post-validation-at places VALIDATE, and its old spelling --validate-at still works, unlisted") {
  std::vector<std::string> problem = {"-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1", "--tcomm", "0.5"};
  auto plan = [&](const std::string& method, const std::string& flag, const std::string& out) {
    std::vector<std::string> args = {"plan", "--method", method, flag, "start", "-o", tmp(out)};
    args.insert(args.end(), problem.begin(), problem.end());
    return zbplan(args);
  };
  auto read = [](const std::string& path) { return nlohmann::json::parse(std::ifstream(path)); };
  Run current = plan("zb-h1", "--post-validation-at", "cli_pv_at.json");
  INFO(current.err);
  REQUIRE(current.code == 0);
  // Held at the start: stage 0 receives the verdict and post-validates before its first F.
  const auto held = read(tmp("cli_pv_at.json"));
  CHECK(held["stages"][0][0]["type"] == "RECV_VALID");
  CHECK(held["stages"][0][1]["type"] == "VALIDATE");
  Run old = plan("zb-h1", "--validate-at", "cli_pv_at_old.json");
  INFO(old.err);
  REQUIRE(old.code == 0);
  CHECK(read(tmp("cli_pv_at_old.json")) == held);
  // Each spelling fixes the placement for auto: only the one given is tried.
  for (const std::string flag : {"--post-validation-at", "--validate-at"}) {
    Run a = plan("auto", flag, "cli_pv_at_auto.json");
    INFO(flag << ": " << a.err);
    REQUIRE(a.code == 0);
    CHECK(a.out.find("under post-validation, validated at the start:") != std::string::npos);
    CHECK(a.out.find("under sync:") == std::string::npos);
  }
  std::vector<std::string> both = {"plan", "--method", "zb-h1", "--post-validation-at", "start", "--validate-at",
                                   "start", "-o", tmp("cli_pv_at_both.json")};
  both.insert(both.end(), problem.begin(), problem.end());
  Run twice = zbplan(both);
  CHECK(twice.code == 2);
  CHECK(twice.err == "zbplan: --post-validation-at excludes --validate-at\nrun 'zbplan plan --help' for usage\n");
  Run help = zbplan({"plan", "--help"});
  CHECK(help.out.find("  --post-validation-at first-backward|start") != std::string::npos);
  CHECK(help.out.find("--validate-at") == std::string::npos);
}

// Issue 37: at p = 32, m = 256 every block at 6 px made a 4600 px, 7.9 MB picture that fitted to a
// screen showed nothing; without --width it is an overview, which says so.
TEST_CASE("zbplan: show draws a big schedule as an overview that says so, and every block at --width") {
  const std::string s = tmp("cli_show_big.json"), overview = tmp("cli_show_big.svg"), every = tmp("cli_show_all.svg");
  REQUIRE(zbplan({"plan", "--method", "zb-h1", "-p", "32", "-m", "256", "--tf", "1", "--tb", "1", "--tw", "1", "-o", s})
              .code == 0);
  auto read = [](const std::string& path) {
    std::stringstream text;
    text << std::ifstream(path).rdbuf();
    return text.str();
  };
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const size_t ops = 32 * 3 * 256;
  Run r = zbplan({"show", s, "-o", overview});
  CHECK(r.code == 0);
  CHECK(r.out == "wrote " + overview + " (an overview: neighbouring blocks under 5 px drawn as one; --width PX draws "
                                       "every block, an .html page zooms to each)\n");
  const std::string small = read(overview);
  CHECK(small.find("an overview: neighbouring blocks under 5 px drawn as one") != std::string::npos);
  CHECK(count(small, "class=\"run\"") > 0);
  CHECK(count(small, "class=\"op ") + count(small, "class=\"run\"") < ops * 2 / 3);
  CHECK(count(small, "width=\"1\" height=\"5\"") == 0);  // no send/recv ticks; the optimizer's bars stay
  CHECK(count(small, "width=\"3\"") > 0);
  CHECK(small.size() < 2'000'000);
  r = zbplan({"show", s, "-o", every, "--width", "1200"});
  CHECK(r.out == "wrote " + every + "\n");
  const std::string all = read(every);
  CHECK(count(all, "class=\"op ") == ops);
  CHECK(count(all, "class=\"run\"") == 0);
  CHECK(count(all, "width=\"1\" height=\"5\"") > 0);
}

TEST_CASE("zbplan: show writes SVG and self-contained HTML, export/import round-trip through the CLI") {
  std::string s = tmp("cli_show.json");
  REQUIRE(zbplan({"plan", "--method", "zb-h1", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1", "-o", s}).code == 0);
  Run svg = zbplan({"show", s, "-o", tmp("cli_show.svg")});
  CHECK(svg.code == 0);
  Run html = zbplan({"show", s, "-o", tmp("cli_show.html")});
  CHECK(html.code == 0);
  std::ifstream page(tmp("cli_show.html"));
  std::stringstream text;
  text << page.rdbuf();
  // The viewer: the schedule as data (F5 on stage 2 as kind 0, microbatch 5, chunk 0, then its
  // times) and the script that draws it (tests/check_viewer.py runs it in Chromium).
  CHECK(text.str().find("<script id=\"zbpp-data\" type=\"application/json\">{") != std::string::npos);
  CHECK(text.str().find("function setView(") != std::string::npos);
  CHECK(text.str().find("src=") == std::string::npos);  // nothing loaded from elsewhere
  Run bad = zbplan({"show", s, "-o", tmp("cli_show.png")});
  CHECK(bad.code == 2);
  CHECK(bad.err == "zbplan: --output: '" + tmp("cli_show.png") + "': a picture's name ends in .svg or .html (the kind "
                   "of picture written)\nrun 'zbplan show --help' for usage\n");
  REQUIRE(zbplan({"export", s, "--format", "pytorch-csv", "-o", tmp("cli_show.csv")}).code == 0);
  Run back = zbplan({"import", tmp("cli_show.csv"), "-o", tmp("cli_back.json")});
  INFO(back.err);
  REQUIRE(back.code == 0);
  // Times not given are 1, and import says so (issue 22).
  CHECK(back.out.find("  import: assumed --tf 1 --tb 1 --tw 1 (not given): the figures below count in that unit; give "
                      "--tf, --tb and --tw for real ones\n") != std::string::npos);
  Run partly = zbplan({"import", tmp("cli_show.csv"), "--tf", "2", "-o", tmp("cli_back_tf.json")});
  CHECK(partly.code == 0);
  CHECK(partly.out.find("  import: assumed --tb 1 --tw 1 (not given)") != std::string::npos);
  Run given = zbplan({"import", tmp("cli_show.csv"), "--tf", "2", "--tb", "2", "--tw", "1", "-o", tmp("cli_back_tf.json")});
  CHECK(given.code == 0);
  CHECK(given.out.find("assumed") == std::string::npos);
  Run v = zbplan({"validate", tmp("cli_back.json")});
  CHECK(v.out == tmp("cli_back.json") + ": ok (pytorch-csv, lowered, p=4, m=8, chunks=1, 212 ops)\n");  // 96 compute, 4 x 24 send/recv, 4 steps, 16 post-validation
  // What PyTorch writes for DualPipeV (compute+comms format): the notes say what was read and not kept.
  const std::string pytorch = std::string(ZBPP_GOLDEN_DIR) + "/pytorch/dualpipev_p4_m8.csv";
  Run dual = zbplan({"import", pytorch, "--tf", "1", "--tb", "1", "--tw", "1", "-o", tmp("cli_dual.json")});
  INFO(dual.err);
  CHECK(dual.code == 0);
  CHECK(dual.out.find("  import: 192 SEND_F/RECV_F/SEND_B/RECV_B cells match the messages zbplan's lowering sends; "
                      "dropped, and the schedule lowered again\n") != std::string::npos);
  CHECK(dual.out.find("  import: 25 OVERLAP_F_B cells: each runs its actions one after the other") != std::string::npos);
  Run compute = zbplan({"import", pytorch, "--tf", "1", "--tb", "1", "--tw", "1", "--compute-only", "-o", tmp("cli_dual_c.json")});
  CHECK(compute.out.find("cells match the messages zbplan's lowering sends; dropped (--compute-only)\n") !=
        std::string::npos);
  Run unknown = zbplan({"export", s, "--format", "csv2", "-o", tmp("x.csv")});
  CHECK(unknown.code == 2);
  CHECK(unknown.err == "zbplan: --format: unknown format 'csv2' (known: pytorch-csv, layout)\nrun 'zbplan export --help' for usage\n");
}

TEST_CASE("zbplan import: a rank that takes another's messages out of the order sent is named by CSV cell") {
  // Rank 1 sends the gradient of microbatch 1 first; rank 0 needs microbatch 0's first. The
  // validator would name "stage 0, op 2"; the CSV's reader is told its row, column and cell, with
  // or without lowering (a compute-only file that crosses would not validate when read back).
  write(tmp("cli_crossing.csv"), "0F0,0F1,0I0,0I1,0W0,0W1\n1F0,1F1,1I1,1I0,1W0,1W1\n");
  for (bool compute_only : {false, true}) {
    std::vector<std::string> args = {"import", tmp("cli_crossing.csv"), "-o", tmp("cli_crossing.json")};
    if (compute_only) args.push_back("--compute-only");
    Run r = zbplan(args);
    INFO(compute_only);
    CHECK(r.code == 1);
    CHECK(r.err == "zbplan: " + tmp("cli_crossing.csv") +
                       ": row 1 (rank 0), column 3 (step 2), cell '0I0': 0I0 needs stage 1's gradient of microbatch 0 "
                       "from rank 1, which sends 1I1's first (column 3): messages between two ranks arrive in the "
                       "order they are sent\n");
  }
}

TEST_CASE("zbplan: show keys only the kinds present, shades a V schedule's chunks, outlines only wide blocks") {
  auto picture = [](const std::vector<std::string>& plan, const std::string& name, std::vector<std::string> show = {}) {
    std::vector<std::string> args = {"plan", "-o", tmp(name + ".json"), "--tf", "1", "--tb", "1", "--tw", "0.5"};
    args.insert(args.end(), plan.begin(), plan.end());
    REQUIRE(zbplan(args).code == 0);
    show.insert(show.begin(), {"show", tmp(name + ".json"), "-o", tmp(name)});
    REQUIRE(zbplan(show).code == 0);
    std::ifstream in(tmp(name));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  auto has = [](const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; };
  // The fills of one kind's blocks, sorted.
  auto fills = [](const std::string& svg, const std::string& kind) {
    std::vector<std::string> seen;
    const std::string tag = "class=\"op op-" + kind + "\"";
    for (size_t at = svg.find(tag); at != std::string::npos; at = svg.find(tag, at + 1)) {
      size_t f = svg.find("fill=\"", at) + 6;
      std::string fill = svg.substr(f, 7);
      if (std::find(seen.begin(), seen.end(), fill) == seen.end()) seen.push_back(fill);
    }
    std::sort(seen.begin(), seen.end());
    return seen;
  };
  for (const std::string ext : {"svg", "html"}) {
    INFO(ext);
    std::string split = picture({"--method", "zb-h1", "-p", "4", "-m", "8"}, "cli_key_split." + ext);
    CHECK((has(split, "F forward") && has(split, "B input grad") && has(split, "W weight grad")));
    CHECK_FALSE(has(split, "BW fused"));
    CHECK_FALSE(has(split, "shades: chunk"));
    std::string fused = picture({"--method", "1f1b", "-p", "4", "-m", "8"}, "cli_key_fused." + ext);
    CHECK((has(fused, "F forward") && has(fused, "BW fused")));
    CHECK_FALSE((has(fused, "B input grad") || has(fused, "W weight grad")));
    std::string v = picture({"--method", "zb-v", "-p", "4", "-m", "8"}, "cli_key_v." + ext);
    CHECK(has(v, "shades: chunk 0 to 1, light to dark"));
  }
  std::string v = picture({"--method", "zb-v", "-p", "4", "-m", "8", "--compute-only"}, "cli_v.svg");
  // Two shades a kind: chunk 1 darker (#2f6db0, #55933c, #d6a21e) than chunk 0.
  CHECK(fills(v, "F") == std::vector<std::string>{"#2f6db0", "#6fa8dc"});
  CHECK(fills(v, "B") == std::vector<std::string>{"#55933c", "#93c47d"});
  CHECK(fills(v, "W") == std::vector<std::string>{"#d6a21e", "#ffd966"});
  CHECK(fills(picture({"--method", "1f1b", "-p", "4", "-m", "8"}, "cli_1f1b.svg"), "BW") ==
        std::vector<std::string>{"#b4a7d6"});
  // 32 blocks of each kind: wide by default, all outlined; in 100 px (span 23) W's 0.5 is about
  // 2 px, F's 1 about 4 px: only F and B keep an outline.
  auto outlined = [](const std::string& svg, const std::string& kind) {
    size_t n = 0;
    const std::string tag = "class=\"op op-" + kind + "\"", stroke = "stroke=\"#ffffff\" stroke-width=\"1\">";
    for (size_t at = svg.find(tag); at != std::string::npos; at = svg.find(tag, at + 1))
      n += svg.compare(svg.find('>', at) + 1 - stroke.size(), stroke.size(), stroke) == 0;
    return n;
  };
  std::vector<std::string> h1 = {"--method", "zb-h1", "-p", "4", "-m", "8", "--compute-only"};
  std::string wide = picture(h1, "cli_wide.svg"), thin = picture(h1, "cli_thin.svg", {"--width", "100"});
  CHECK(outlined(wide, "F") == 32);
  CHECK(outlined(wide, "W") == 32);
  CHECK(outlined(thin, "F") == 32);
  CHECK(outlined(thin, "W") == 0);
}

TEST_CASE("zbplan: plan and simulate report iterations back to back, and show --iterations draws them") {
  std::string post = tmp("cli_iter_post.json"), sync = tmp("cli_iter_sync.json");
  std::vector<std::string> problem = {"--method", "heuristic", "--mem-limit", "2p", "-p", "4", "-m", "8",
                                      "--tf", "1", "--tb", "1", "--tw", "1", "--tcomm", "0.1"};
  auto plan = [&](const std::string& out, const std::string& optimizer) {
    std::vector<std::string> args = {"plan", "-o", out, "--optimizer", optimizer};
    args.insert(args.end(), problem.begin(), problem.end());
    Run r = zbplan(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return r.out;
  };
  // With post-validation the period is the span (24.2: bubble 0.0083, the warm-up bound); sync waits for the
  // all-reduce (2 * 2 hops * 0.1) after the last op anywhere.
  const std::string post_out = plan(post, "post-validation");
  CHECK(post_out.find("  period            24.2  (3 iterations back to back, optimizer post-validation; period "
                      "bubble rate 0.0083)\n  wall              27.3  (one iteration alone, first op to last optimizer "
                      "step; wall bubble rate 0.1209)\n") != std::string::npos);
  CHECK(post_out.find("  bound: period >= 24.2 (warm-up), period bubble rate >= 0.0083, gap 0.0000 % (optimal)\n") !=
        std::string::npos);
  // With sync every printed rate of the objective is the wall clock's (issue 22).
  const std::string sync_out = plan(sync, "sync");
  CHECK(sync_out.find("  period            27.7  (3 iterations back to back, optimizer sync; period bubble rate "
                      "0.1336)\n") != std::string::npos);
  CHECK(sync_out.find("  bound: wall >= 27.7 (ramp), wall bubble rate >= 0.1336, gap 0.0000 % (optimal)\n") !=
        std::string::npos);
  CHECK(sync_out.find("  objective         wall (minimised): 27.7, wall bubble rate 0.1336\n") != std::string::npos);
  Run sim = zbplan({"simulate", post, "--iterations", "5", "--state-latency", "0"});
  CHECK(sim.out.find("  period            24.2  (5 iterations back to back") != std::string::npos);
  // simulate says what the file was planned for, and the makespan against the ramp bound (3
  // forwards and hops of 1.1, then 24 busy: 27.3).
  CHECK(sim.out.find("  objective         period (minimised): 24.2, period bubble rate 0.0083\n  ramp bound        "
                     "27.3  (no makespan is shorter; this one's gap 0.0000)\n") != std::string::npos);
  Run sim_sync = zbplan({"simulate", sync});
  CHECK(sim_sync.out.find("  objective         wall (minimised): 27.7, wall bubble rate 0.1336\n") !=
        std::string::npos);
  Run shown = zbplan({"show", post, "--iterations", "3", "-o", tmp("cli_iter.svg")});
  REQUIRE(shown.code == 0);
  std::ifstream in(tmp("cli_iter.svg"));
  std::stringstream svg;
  svg << in.rdbuf();
  CHECK(svg.str().find("period 24.2") != std::string::npos);
  // 3 iterations of 4 stages x 8 microbatches x (F, B, W).
  size_t blocks = 0;
  for (size_t at = svg.str().find("class=\"op op-"); at != std::string::npos; at = svg.str().find("class=\"op op-", at + 1))
    ++blocks;
  CHECK(blocks == 3 * 4 * 8 * 3);
  std::string compute = tmp("cli_iter_compute.json");
  std::vector<std::string> args = {"plan", "-o", compute, "--compute-only"};
  args.insert(args.end(), problem.begin(), problem.end());
  REQUIRE(zbplan(args).code == 0);
  Run bad = zbplan({"show", compute, "--iterations", "3", "-o", tmp("cli_iter2.svg")});
  CHECK(bad.code == 1);  // the command line is right; the file cannot do it
  CHECK(bad.err == "zbplan: show: " + compute + ": --iterations needs a lowered file (one with the optimizer's ops): "
                   "plan it without --compute-only, or drop --iterations\n");
}

TEST_CASE("zbplan: every plan records its certified bound, and ilp takes --time-limit, --threads, --quiet") {
  std::vector<std::string> problem = {"-p", "4", "-m", "8", "--tf", "1.5,1,1.2,1", "--tb", "1.4,1,1,1.1", "--tw",
                                      "0.5,0.6,0.4,0.5", "--tcomm", "0.05", "--mem-limit", "2p"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), problem.begin(), problem.end());
    return zbplan(args);
  };
  auto solver_of = [](const std::string& path) { return nlohmann::json::parse(std::ifstream(path))["solver"]; };
  Run h = with({"plan", "--method", "zb-h1", "-o", tmp("cli_bound_h1.json")});
  REQUIRE(h.code == 0);
  CHECK(h.out.find("  bound: period >= ") != std::string::npos);
  auto sh = solver_of(tmp("cli_bound_h1.json"));
  CHECK(sh["status"] == "not_run");
  CHECK(sh["seconds"] == 0);
  CHECK(sh["best_bound"].get<double>() <= sh["objective"].get<double>());

#ifdef ZBPP_HAVE_CBC
  Run i = with({"plan", "--method", "ilp", "--time-limit", "1", "--threads", "1", "-o", tmp("cli_ilp.json")});
  INFO(i.err);
  REQUIRE(i.code == 0);
  CHECK(i.err.rfind("ilp: ", 0) == 0);  // progress lines on stderr
  CHECK(i.err.find("incumbent") != std::string::npos);
  auto si = solver_of(tmp("cli_ilp.json"));
  for (const char* key : {"status", "objective", "best_bound", "gap", "seconds", "nodes", "bubble_rate_bound"})
    CHECK(si.contains(key));
  CHECK(si["objective"].get<double>() <= sh["objective"].get<double>() + 1e-9);
  CHECK(si["gap"].get<double>() >= 0);
  CHECK(zbplan({"validate", tmp("cli_ilp.json")}).code == 0);

  CHECK(si["cost"] == "period");

  // --objective wall under post-validation: the ILP's model minimises the makespan, and a schedule
  // is kept by its true wall clock (the state's last messages come after the makespan); the report
  // measures the wall: the value is the file's one iteration alone, the bound at least the ramp
  // bound and at most the value.
  Run w = with({"plan", "--method", "ilp", "--objective", "wall", "--time-limit", "1", "--quiet", "-o",
                tmp("cli_ilp_wall.json")});
  INFO(w.err);
  REQUIRE(w.code == 0);
  CHECK(w.out.find("  bound: wall >= ") != std::string::npos);
  CHECK(w.out.find("minimising the makespan, keeping a schedule by its wall (lowered: post-validation)), "
                   "warm-started from the heuristic: makespan ") != std::string::npos);
  auto wall_file = nlohmann::json::parse(std::ifstream(tmp("cli_ilp_wall.json")));
  auto sw = wall_file["solver"];
  CHECK(sw["cost"] == "wall");
  CHECK(sw["objective"].get<double>() == Approx(wall_file["iterations"]["wall"].get<double>()).margin(1e-9));
  CHECK(sw["best_bound"].get<double>() <= sw["objective"].get<double>() + 1e-9);
  CHECK(sw["best_bound"].get<double>() >= wall_file["wall_lower_bound"].get<double>() - 1e-9);
  Run hw = with({"plan", "--method", "heuristic", "--objective", "wall", "-o", tmp("cli_heuristic_wall.json")});
  REQUIRE(hw.code == 0);
  CHECK(hw.out.find("best by wall (lowered: post-validation): ") != std::string::npos);
  auto heuristic_wall = nlohmann::json::parse(std::ifstream(tmp("cli_heuristic_wall.json")));
  CHECK(heuristic_wall["solver"]["cost"] == "wall");
  CHECK(sw["objective"].get<double>() <= heuristic_wall["iterations"]["wall"].get<double>() + 1e-9);

  Run q = with({"plan", "--method", "ilp", "--ilp-seconds", "0.5", "--quiet", "-o", tmp("cli_ilp_quiet.json")});
  CHECK(q.code == 0);
  CHECK(q.err.empty());

  // auto runs the ILP only when given a time budget.
  Run a = with({"plan", "--method", "auto", "-o", tmp("cli_auto_nolimit.json")});
  CHECK(a.out.find("auto: ilp under") == std::string::npos);
  CHECK(a.out.find("auto: ilp, ilp-v: left out: the ILP runs only with a time budget: give --time-limit SECONDS") !=
        std::string::npos);
  // Time enough that the ILPs start before the searches' share of it is spent, under ASan too.
  Run at = with({"plan", "--method", "auto", "--time-limit", "5", "--quiet", "-o", tmp("cli_auto_limit.json")});
  CHECK(at.out.find("auto: ilp under post-validation: 1 chunk, peak memory ") != std::string::npos);
  CHECK(at.out.find("auto: ilp-v under post-validation: V (2 chunks), peak memory ") != std::string::npos);  // the V search refined
  CHECK(a.out.find("auto: ilp-v under") == std::string::npos);
#endif
}

// Issue 18: a lowered file's figures include the waits its SEND/RECV order causes. Moving stage 0's
// RECV_B1 before W0 (lower_test.cpp times the same file by hand) makes the stage wait one unit:
// validate refuses the recorded span, and without recorded figures simulate prints the longer one.
TEST_CASE("zbplan: a RECV moved earlier lengthens the planned span, and validate refuses the stale recorded figure") {
  std::string s = tmp("cli_early_recv.json"), edited = tmp("cli_early_recv_edited.json");
  REQUIRE(zbplan({"plan", "--method", "zb-h1", "-p", "2", "-m", "2", "--tf", "1", "--tb", "1", "--tw", "1", "-o", s})
              .code == 0);
  auto j = test::with_early_recv(s);
  write(edited, j.dump(1));
  Run v = zbplan({"validate", edited});
  CHECK(v.code == 1);
  CHECK(v.err.find("zbplan: " + edited + ": /span: recorded 7, recomputed 8 (the file was edited after it was "
                   "written: plan it again)\n") != std::string::npos);
  test::drop_recorded_figures(&j);
  write(edited, j.dump(1));
  CHECK(zbplan({"validate", edited}).code == 0);
  Run sim = zbplan({"simulate", edited});
  CHECK(sim.code == 0);
  CHECK(sim.out.find("\n  span              8  (") != std::string::npos);
  CHECK(sim.out.find("\n  wall              8  (") != std::string::npos);
}

// Issue 19, class 8: validate said ok for a file whose recorded figures had been edited.
TEST_CASE("zbplan: validate recomputes every figure a file records and locates each that disagrees") {
  std::string s = tmp("cli_figures.json"), edited = tmp("cli_figures_edited.json");
  // Uneven stages: zb-h1 does not meet the bound, so its solver record says "not_run".
  REQUIRE(zbplan({"plan", "--method", "zb-h1", "-p", "4", "-m", "8", "--tf", "1.5,1,1.2,1", "--tb", "1.4,1,1,1.1",
                  "--tw", "0.5,0.6,0.4,0.5", "--tcomm", "0.05", "--mem-limit", "2p", "-o", s}).code == 0);
  Run ok = zbplan({"validate", s});
  INFO(ok.err);
  REQUIRE(ok.code == 0);
  CHECK(ok.err.empty());
  const auto j = nlohmann::json::parse(std::ifstream(s));
  // The first error line validate prints for the file with `pointer` set to `value`.
  auto first_error = [&](const std::string& pointer, const nlohmann::json& value) {
    auto copy = j;
    copy[nlohmann::json::json_pointer(pointer)] = value;
    write(edited, copy.dump(1));
    Run v = zbplan({"validate", edited});
    CHECK(v.code == 1);
    return v.err.substr(0, v.err.find('\n'));
  };
  auto figure = [&](const std::string& pointer) { return j[nlohmann::json::json_pointer(pointer)].get<double>(); };
  auto shown = [](double v) {  // as the message shows a number: "12", "12.25"
    std::string text = nlohmann::json(v).dump();
    return text.substr(0, text.size() - (text.size() > 2 && text.substr(text.size() - 2) == ".0" ? 2 : 0));
  };
  auto recomputed = [&](const std::string& pointer, double value) {
    return "zbplan: " + edited + ": " + pointer + ": recorded " + shown(value) + ", recomputed " +
           format_quanta(*to_quanta(figure(pointer))) + " (the file was edited after it was written: plan it again)";
  };
  for (const char* pointer : {"/makespan", "/span", "/peak_memory/1", "/wall_lower_bound", "/iterations/period",
                              "/iterations/wall", "/solver/objective"})
    CHECK(first_error(pointer, figure(pointer) + 0.25) == recomputed(pointer, figure(pointer) + 0.25));
  // A figure off by less than half a quantum (1e-6) is the same figure, printed by another writer.
  auto copy = j;
  copy["span"] = figure("/span") + 4e-7;
  write(edited, copy.dump(1));
  CHECK(zbplan({"validate", edited}).code == 0);
  for (const char* pointer :
       {"/span_bubble_rate", "/iterations/period_bubble_rate", "/iterations/wall_bubble_rate", "/solver/gap",
        "/solver/bubble_rate_bound"}) {
    const std::string prefix = "zbplan: " + edited + ": " + pointer + ": recorded ";
    CHECK(first_error(pointer, figure(pointer) + 0.01).rfind(prefix, 0) == 0);
  }
  CHECK(first_error("/peak_memory", {1, 2}) == "zbplan: " + edited + ": /peak_memory: recorded 2 stages, recomputed 4 "
                                               "(the file was edited after it was written: plan it again)");
  // The solver record: a bound above the cost it bounds, "optimal" without meeting it, a bound's source.
  CHECK(first_error("/solver/best_bound", figure("/solver/objective") + 1) ==
        "zbplan: " + edited + ": /solver/best_bound: recorded " + shown(figure("/solver/objective") + 1) +
            " is above the schedule's period " + format_quanta(*to_quanta(figure("/solver/objective"))) +
            ", which it claims to bound from below");
  REQUIRE(j["solver"]["status"] == "not_run");
  REQUIRE(figure("/solver/best_bound") < figure("/solver/objective"));
  CHECK(first_error("/solver/status", "optimal").rfind("zbplan: " + edited + ": /solver/status: \"optimal\", but the "
                                                       "schedule's period ", 0) == 0);
  CHECK(first_error("/solver/best_bound", figure("/solver/best_bound") - 0.5)
            .rfind("zbplan: " + edited + ": /solver/best_bound: recorded ", 0) == 0);
  CHECK(first_error("/solver/bound_source", j["solver"]["bound_source"] == "busy" ? "memory" : "busy")
            .rfind("zbplan: " + edited + ": /solver/bound_source: recorded \"", 0) == 0);
  // The schema's types, enforced on load.
  CHECK(first_error("/makespan", "fast") == "zbplan: " + edited + ": /makespan: expected a number >= 0, got \"fast\"");
  CHECK(first_error("/method", 42) == "zbplan: " + edited + ": /method: expected a string, got 42");
  CHECK(first_error("/solver/gap", 2) == "zbplan: " + edited + ": /solver/gap: expected a number in 0..1, got 2");
  CHECK(first_error("/solver/status", "great") == "zbplan: " + edited + ": /solver/status: expected \"optimal\", "
                                                   "\"time_limit\", \"local_optimum\" or \"not_run\", got \"great\"");
  CHECK(first_error("/solver/nodes", -1) ==
        "zbplan: " + edited + ": /solver/nodes: expected a non-negative integer, got -1");
  CHECK(first_error("/iterations/k", 1000000) == "zbplan: " + edited + ": /iterations/k: expected an integer 2..100, "
                                                 "got 1000000");
  CHECK(first_error("/iterations/spare", 1) == "zbplan: " + edited + ": /iterations/spare: unknown field 'spare'");
  CHECK(first_error("/peak_memory/0", "1") == "zbplan: " + edited + ": /peak_memory/0: expected a number, got \"1\"");
  // The solver's cost names its figure (here the period, 30.2: the wall is 30.35); a compute-level
  // file has no period or wall to name.
  CHECK(first_error("/solver/cost", "wall") == "zbplan: " + edited + ": /solver/objective: recorded 30.2, recomputed "
                                               "30.35 (the file was edited after it was written: plan it again)");
  CHECK(first_error("/solver/cost", "time") == "zbplan: " + edited + ": /solver/cost: expected \"span\", "
                                               "\"makespan\", \"period\" or \"wall\", got \"time\"");
  std::string compute = tmp("cli_figures_compute.json");
  REQUIRE(zbplan({"plan", "--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "0.5",
                  "--compute-only", "-o", compute}).code == 0);
  auto compute_doc = nlohmann::json::parse(std::ifstream(compute));
  CHECK(compute_doc["solver"]["cost"] == "span");
  compute_doc["solver"]["cost"] = "period";
  write(edited, compute_doc.dump(1));
  Run c = zbplan({"validate", edited});
  CHECK(c.code == 1);
  CHECK(c.err.substr(0, c.err.find('\n')) ==
        "zbplan: " + edited + ": /solver/cost: a compute-level schedule has no optimizer step to repeat: it records no "
        "iterations, and its solver cost is the span or the makespan (the period and the wall need a lowered file)");
  // simulate, show and export read through the same check.
  copy = j;
  copy["span"] = 1;
  write(edited, copy.dump(1));
  CHECK(zbplan({"simulate", edited}).code == 1);
}

// Issue 19, class 5: a trace field of the wrong JSON type ended in std::terminate (exit 134).
TEST_CASE("zbplan: show --measured locates every wrong field of the trace instead of aborting") {
  std::string s = tmp("cli_measured.json"), trace = tmp("cli_measured_trace.json");
  REQUIRE(zbplan({"plan", "--method", "1f1b", "-p", "2", "-m", "2", "--tf", "1", "--tb", "1", "--tw", "1", "-o", s})
              .code == 0);
  auto show = [&](const std::string& event) {
    write(trace, R"({"traceEvents": [{"ph": "M", "pid": 1}, )" + event + "]}");
    return zbplan({"show", s, "-o", tmp("cli_measured.svg"), "--measured", trace});
  };
  Run good = show(R"({"ph": "X", "pid": 1, "tid": 1, "ts": 1000, "dur": 500, "args": {"op_index": 0}})");
  INFO(good.err);
  CHECK(good.code == 0);
  const std::string at = "zbplan: " + trace + ": /traceEvents/1";
  auto error = [&](const std::string& event) {
    Run r = show(event);
    CHECK(r.code == 1);
    return r.err;
  };
  CHECK(error(R"({"ph": 5, "pid": 1})") == at + "/ph: expected an event phase string like \"X\", got 5\n");
  CHECK(error(R"({"ph": "X", "pid": "1"})") == at + "/pid: expected an integer process id, got \"1\"\n");
  CHECK(error(R"({"ph": "X", "pid": 1, "tid": "0", "ts": 0, "dur": 1})") ==
        at + "/tid: measured event for stage \"0\" does not fit this schedule (p = 2)\n");
  CHECK(error(R"({"ph": "X", "pid": 1, "tid": 0, "ts": "0", "dur": 1})") ==
        at + "/ts: expected a number of microseconds 0..1e15, got \"0\"\n");
  CHECK(error(R"({"ph": "X", "pid": 1, "tid": 0, "ts": 0})") ==
        at + ": missing 'dur': a number of microseconds 0..1e15\n");
  CHECK(error(R"({"ph": "X", "pid": 1, "tid": 0, "ts": 1e300, "dur": 1})") ==
        at + "/ts: expected a number of microseconds 0..1e15, got 1e+300\n");
  CHECK(error(R"({"ph": "X", "pid": 1, "tid": 0, "ts": 0, "dur": 1, "args": {"op_index": "a"}})") ==
        at + "/args/op_index: expected an op index (an integer 0..1000000000), got \"a\"\n");
  CHECK(error(R"({"ph": "X", "pid": 1, "tid": 0, "ts": 0, "dur": 1, "args": 3})") ==
        at + "/args: expected an object, got 3\n");
  // A trace of another schedule (issue 34, class 7): an op named otherwise at its place, or more ops.
  Run other = show(R"({"ph": "X", "name": "F1", "pid": 1, "tid": 1, "ts": 0, "dur": 1, "args": {"op_index": 0}})");
  CHECK(other.code == 1);
  CHECK(other.err == "zbplan: show: --measured " + trace + " is a trace of another schedule: stage 1's op 0 is F1 in the "
                     "trace but F0 in this schedule (draw it beside the schedule file zbrun ran, or run this one with zbrun "
                     "--trace)\n");
  std::string events;
  for (int k = 0; k < 5; ++k)
    events += std::string(k ? ", " : "") + R"({"ph": "X", "pid": 1, "tid": 0, "ts": 0, "dur": 1, "args": {"op_index": )" +
              std::to_string(k) + "}}";
  other = show(events);
  CHECK(other.code == 1);
  CHECK(other.err.find("stage 0 has 5 measured ops, but this schedule runs 4 compute ops there") != std::string::npos);
}

// Issue 19, class 9: zbplan's files keep W in microbatch order; one that does not is named (exit 0).
TEST_CASE("zbplan: validate warns about W ops out of microbatch order and still says ok") {
  std::string s = tmp("cli_w_order.json");
  REQUIRE(zbplan({"plan", "--method", "zb-h1", "-p", "2", "-m", "3", "--tf", "1", "--tb", "1", "--tw", "1",
                  "--compute-only", "-o", s}).code == 0);
  auto j = nlohmann::json::parse(std::ifstream(s));
  auto& ops = j["stages"][1];
  std::vector<size_t> ws;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i]["type"] == "W") ws.push_back(i);
  REQUIRE(ws.size() == 3);
  std::swap(ops[ws[1]], ops[ws[2]]);  // the last stage's last two W's: W2 before W1, after every B
  j.erase("makespan"), j.erase("span"), j.erase("bubble_rate"), j.erase("peak_memory"), j.erase("solver");
  write(s, j.dump(1));
  Run v = zbplan({"validate", s});
  CHECK(v.code == 0);
  CHECK(v.err == "zbplan: " + s + ": stage 1, op " + std::to_string(ws[1]) + " (W2): warning: W2 runs before W1 (op " +
                     std::to_string(ws[2]) + "): this file does not keep bit-identity (weight gradients add up out of "
                     "microbatch order, so the trained weights differ from other schedules'); run each stage's W ops "
                     "in microbatch order\n");
  CHECK(v.out.find(": ok (") != std::string::npos);
}

// Issue 19, class 6: a big file of duplicated ops; the output stays at 50 lines and a count.
TEST_CASE("zbplan: validate of 300000 duplicated ops prints 50 findings and counts the rest") {
  std::string s = tmp("cli_many_dups.json");
  REQUIRE(zbplan({"plan", "--method", "1f1b", "-p", "2", "-m", "2", "--tf", "1", "--tb", "1", "--tw", "1",
                  "--compute-only", "-o", s}).code == 0);
  auto j = nlohmann::json::parse(std::ifstream(s));
  auto op = j["stages"][1][0];
  for (int i = 0; i < 300000; ++i) j["stages"][1].push_back(op);
  write(s, j.dump());
  const auto start = std::chrono::steady_clock::now();
  Run v = zbplan({"validate", s});
  // Linear work: about 1 s. Reading duplicate keys with nlohmann's parser callback, which rescans a
  // list after each element, took 73 s here.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  CHECK(v.code == 1);
  CHECK(std::count(v.err.begin(), v.err.end(), '\n') == 52);
  CHECK(v.err.find("zbplan: ... and 299950 more\nzbplan: " + s + ": invalid schedule (300000 errors)\n") !=
        std::string::npos);
}

TEST_CASE("zbplan: --placement v|interleaved picks the heuristic's search, is recorded in the file, and is checked") {
  const std::vector<std::string> problem = {"-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1", "--compute-only"};
  auto plan = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"plan", "-o", tmp("cli_placement.json")};
    args.insert(args.end(), problem.begin(), problem.end());
    args.insert(args.end(), more.begin(), more.end());
    return zbplan(args);
  };
  auto placement_in_file = [&] {
    auto j = nlohmann::json::parse(std::ifstream(tmp("cli_placement.json")));
    return j["placement"].get<std::vector<std::vector<int>>>();
  };
  for (const std::string chunks : {"2", "3"}) {
    Run r = plan({"--method", "heuristic", "--chunks", chunks, "--placement", "interleaved", "--mem-limit", "1p"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("  interleaved search: ") != std::string::npos);
    const int c = std::stoi(chunks);
    std::vector<std::vector<int>> interleaved(4);
    for (int s = 0; s < 4; ++s)
      for (int k = 0; k < c; ++k) interleaved[s].push_back(s + 4 * k);
    CHECK(placement_in_file() == interleaved);
  }
  Run v = plan({"--method", "heuristic", "--chunks", "2", "--placement", "v"});
  INFO(v.err);
  REQUIRE(v.code == 0);
  CHECK(v.out.find("  V search: ") != std::string::npos);
  CHECK(placement_in_file() == std::vector<std::vector<int>>{{0, 7}, {1, 6}, {2, 5}, {3, 4}});
  // A bad value, V without 2 chunks, and a method that places chunks its own way.
  Run bad = plan({"--method", "heuristic", "--chunks", "2", "--placement", "zigzag"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--placement: zigzag not in {v,interleaved}") != std::string::npos);
  Run v3 = plan({"--method", "heuristic", "--chunks", "3", "--placement", "v"});
  CHECK(v3.code == 1);
  CHECK(v3.err == "zbplan: --placement v holds 2 chunks per stage (stage r: virtual stages r and 2p-1-r): give "
                  "--chunks 2 (the problem has chunks = 3)\n");
  Run own = plan({"--method", "zb-v", "--chunks", "2", "--placement", "interleaved"});
  CHECK(own.code == 1);
  CHECK(own.err == "zbplan: method zb-v runs the V placement (2 chunks, stage r holding virtual stages r and 2p-1-r), "
                   "not the one the problem gives: drop --placement (or 'placement' from the problem file), or give "
                   "--placement v\n");
}

TEST_CASE("zbplan plan --layers: the partition searched, recorded and exported, and bad uses refused with their reason") {
  const std::string layers = std::string(ZBPP_DOCS_DIR) + "/examples/heavy-head.layers.json";
  const std::string s = tmp("cli_layers.json");
  Run r = zbplan({"plan", "--layers", layers, "-p", "4", "-m", "8", "--method", "zb-h1", "-o", s});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("  partition: 4/4/5/1 layers (embedding..h2, h3..h6, h7..h11, head)") != std::string::npos);
  auto j = nlohmann::json::parse(std::ifstream(s));
  CHECK(j["partition"]["counts"] == std::vector<int>{4, 4, 5, 1});
  CHECK(j["problem"]["t_f"].size() == 4);
  CHECK(zbplan({"validate", s}).code == 0);
  Run sim = zbplan({"simulate", s});
  CHECK(sim.out.find("  partition         4/4/5/1 layers (embedding..h2, h3..h6, h7..h11, head); no partition's plan "
                     "costs less than 619.44\n") != std::string::npos);
  // The default split plans longer: the search found what it could not.
  Run fixed = zbplan({"plan", "--layers", layers, "-p", "4", "-m", "8", "--method", "zb-h1", "--partition", "4,3,3,4",
                      "-o", tmp("cli_layers_default.json")});
  REQUIRE(fixed.code == 0);
  auto d = nlohmann::json::parse(std::ifstream(tmp("cli_layers_default.json")));
  CHECK(d["iterations"]["period"].get<double>() > 1.3 * j["iterations"]["period"].get<double>());
  // Megatron's layout of it.
  Run layout = zbplan({"export", s, "--format", "layout", "-o", tmp("cli_layout.txt")});
  CHECK(layout.code == 0);
  std::string text;
  std::getline(std::ifstream(tmp("cli_layout.txt")), text);
  CHECK(text == "Et*3|t*4|t*5|L");
  Run no_partition = zbplan({"plan", "--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "1",
                             "-o", tmp("cli_plain.json")});
  REQUIRE(no_partition.code == 0);
  r = zbplan({"export", tmp("cli_plain.json"), "--format", "layout", "-o", tmp("cli_layout2.txt")});
  CHECK(r.code == 1);
  CHECK(r.err.find("records no partition of layers: plan it with --layers FILE") != std::string::npos);
  // The picture labels each stage with its layers.
  r = zbplan({"show", s, "-o", tmp("cli_layers.svg")});
  REQUIRE(r.code == 0);
  std::stringstream svg;
  svg << std::ifstream(tmp("cli_layers.svg")).rdbuf();
  CHECK(svg.str().find(">stage 3: head</text>") != std::string::npos);

  // Device memory: each stage's limit is it less its static bytes, recorded and checked.
  r = zbplan({"plan", "--layers", layers, "-p", "4", "-m", "8", "--method", "heuristic", "--device-memory", "200MiB",
              "-o", tmp("cli_device.json")});
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto dev = nlohmann::json::parse(std::ifstream(tmp("cli_device.json")));
  REQUIRE(dev["problem"]["mem_limit"].is_array());
  CHECK(dev["partition"]["device_memory"][0] == 200.0 * 1024 * 1024);
  for (size_t st = 0; st < 4; ++st)
    CHECK(dev["peak_memory"][st].get<double>() <= dev["problem"]["mem_limit"][st].get<double>());
  dev["problem"]["mem_limit"][0] = dev["problem"]["mem_limit"][0].get<double>() + 1;
  write(tmp("cli_device_edited.json"), dev.dump());
  r = zbplan({"validate", tmp("cli_device_edited.json")});
  CHECK(r.code == 1);
  CHECK(r.err.find("/problem/mem_limit: stage 0's memory limit is ") != std::string::npos);
  r = zbplan({"plan", "--layers", layers, "-p", "4", "-m", "8", "--method", "heuristic", "--device-memory", "50MiB",
              "-o", tmp("cli_device_small.json")});
  CHECK(r.code == 1);
  CHECK(r.err.find("--device-memory 50 MiB cannot hold any partition's parameters, gradients, optimizer state and one "
                   "microbatch's activations on every stage: the least is 103.9 MiB (108904448 bytes), with the layers "
                   "split 3/5/5/1") != std::string::npos);

  // V and interleaved placements: a range per virtual stage, the stages' limits from device memory.
  r = zbplan({"plan", "--layers", layers, "-p", "4", "-m", "8", "--method", "v-zb", "--device-memory", "400MiB", "-o",
              tmp("cli_v.json")});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("  partition: 1/1/1/1/2/5/2/1 layers (embedding, h0, ") != std::string::npos);
  CHECK(r.out.find("planned within the tightest") == std::string::npos);  // each stage within its own limit
  auto v = nlohmann::json::parse(std::ifstream(tmp("cli_v.json")));
  CHECK(v["problem"]["t_f"].size() == 8);
  CHECK(v["partition"]["counts"].size() == 8);
  for (size_t st = 0; st < 4; ++st)
    CHECK(v["peak_memory"][st].get<double>() <= v["problem"]["mem_limit"][st].get<double>());
  CHECK(zbplan({"validate", tmp("cli_v.json")}).code == 0);
  r = zbplan({"export", tmp("cli_v.json"), "--format", "layout", "-o", tmp("cli_v_layout.txt")});
  CHECK(r.code == 1);
  CHECK(r.err.find("Megatron-LM's layout puts virtual stage k on rank k mod p") != std::string::npos);
  r = zbplan({"plan", "--layers", layers, "-p", "2", "-m", "4", "--method", "1f1b-i", "--chunks", "2", "-o",
              tmp("cli_i.json")});
  REQUIRE(r.code == 0);
  r = zbplan({"export", tmp("cli_i.json"), "--format", "layout", "-o", tmp("cli_i_layout.txt")});
  CHECK(r.code == 0);
  CHECK(r.out.find(", 2 virtual stages per rank)") != std::string::npos);
  CHECK(std::count(r.out.begin(), r.out.end(), '|') == 3);

  // Bad uses: exit 2 for the command line, 1 for what the files cannot give.
  struct Bad {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<std::string> base = {"plan", "--layers", layers, "-m", "8", "-o", tmp("cli_bad.json")};
  for (const Bad& bad : std::vector<Bad>{
           {{"-p", "4", "--method", "zb-h1", "--tf", "2"}, 2, "--layers gives the times and memory of every virtual stage; drop --tf"},
           {{"-p", "4", "--method", "zb-v", "--chunks", "2", "--placement", "interleaved"}, 2, "zb-v plans the V placement (2 chunks, stage r holding virtual stages r and 2p-1-r)"},
           {{"-p", "4", "--method", "auto", "--chunks", "2"}, 2, "auto with --layers plans one chunk per stage: drop --chunks"},
           {{"-p", "4", "--method", "1f1b-i", "--chunks", "4"}, 1, "more virtual stages than layers: -p 4 x 4 chunks, but the file has 14 layers"},
           {{"-p", "4", "--method", "heuristic", "--device-memory", "80"}, 2, "--device-memory: '80' is not a memory size: give a number and a unit"},
           {{"-p", "4", "--method", "heuristic", "--device-memory", "80GiB,1GiB"}, 2, "--device-memory gives 2 sizes: give one for every device, or one per stage (-p 4)"},
           {{"-p", "4", "--method", "heuristic", "--device-memory", "80GiB", "--mem-limit", "2p"}, 2, "give the memory once: --device-memory or --mem-limit, not both"},
           {{"-p", "15", "--method", "zb-h1"}, 1, "more stages than layers: -p 15, but the file has 14 layers, and every stage needs at least one"},
           {{"-p", "4", "--method", "zb-h1", "--partition", "4,4,4"}, 1, "--partition 4/4/4 gives 3 layer counts for 4 virtual stages"},
           {{"-p", "4", "--method", "zb-h1", "--partition", "4,4,4,4"}, 1, "--partition 4/4/4/4 covers 16 layers, but there are 14"},
       }) {
    std::vector<std::string> args = base;
    args.insert(args.end(), bad.args.begin(), bad.args.end());
    r = zbplan(args);
    INFO(r.err);
    CHECK(r.code == bad.code);
    CHECK(r.err.find(bad.message) != std::string::npos);
  }
  r = zbplan({"plan", "--partition", "1,2", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "1", "--method",
              "zb-h1", "-o", tmp("cli_bad.json")});
  CHECK(r.code == 2);
  CHECK(r.err.find("--partition counts the layers of a --layers file: give --layers FILE") != std::string::npos);
  r = zbplan({"plan", "--device-memory", "8GiB", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "1", "--method",
              "zb-h1", "-o", tmp("cli_bad.json")});
  CHECK(r.code == 2);
  CHECK(r.err.find("--device-memory needs the layers' static bytes: give --layers FILE") != std::string::npos);
}

TEST_CASE("zbplan: no output replaces an input: export, simulate --trace, show and plan refuse, the file kept") {
  const std::string s = tmp("clash.json");
  REQUIRE(zbplan({"plan", "--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "1", "-o", s}).code == 0);
  std::stringstream before;
  before << std::ifstream(s).rdbuf();
  const std::string same = ": writing it would replace what is read; write it elsewhere\n";
  Run r = zbplan({"export", s, "-o", s});
  CHECK(r.code == 1);
  CHECK(r.err == "zbplan: -o " + s + " is the same file as the schedule " + s + same);
  r = zbplan({"simulate", s, "--trace", s});
  CHECK(r.code == 1);
  CHECK(r.err == "zbplan: --trace " + s + " is the same file as the schedule " + s + same);
  write(tmp("clash.problem.json"), R"({"p": 2, "m": 4, "t_f": 1, "t_b": 1, "t_w": 1})");
  r = zbplan({"plan", "--method", "zb-h1", "--problem", tmp("clash.problem.json"), "-o", tmp("clash.problem.json")});
  CHECK(r.code == 1);
  CHECK(r.err.find("is the same file as --problem") != std::string::npos);
  std::stringstream after;
  after << std::ifstream(s).rdbuf();
  CHECK(after.str() == before.str());
}

TEST_CASE("zbplan: strings from a file reach the terminal and pictures escaped and cut") {
  const std::string s = tmp("evil_src.json");
  REQUIRE(zbplan({"plan", "--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "1", "-o", s}).code == 0);
  auto j = nlohmann::json::parse(std::ifstream(s));
  j["method"] = std::string("\x1b[31mred") + std::string(1, '\0') + "tail" + std::string(100000, 'A');
  const std::string evil = tmp("evil.json");
  write(evil, j.dump());
  for (const std::vector<std::string>& args : {std::vector<std::string>{"validate", evil}, {"simulate", evil}}) {
    Run r = zbplan(args);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("\\x1b[31mred\\x00tailAAA") != std::string::npos);
    CHECK(r.out.find('\x1b') == std::string::npos);
    CHECK(r.out.find('\0') == std::string::npos);
    CHECK(r.out.find("...(100013 bytes)") != std::string::npos);
    CHECK(r.out.size() < 3000);
  }
  REQUIRE(zbplan({"show", evil, "-o", tmp("evil.svg")}).code == 0);
  std::stringstream svg;
  svg << std::ifstream(tmp("evil.svg")).rdbuf();
  CHECK(svg.str().find('\0') == std::string::npos);
  CHECK(svg.str().find('\x1b') == std::string::npos);
  CHECK(svg.str().find("\\x1b[31mred\\x00tail") != std::string::npos);
}

TEST_CASE("zbplan: what plan writes, validate reads back exactly, up to the largest times a problem may have") {
  // Near the limit (2^49 ticks for one iteration's work) with every decimal place used: each figure's
  // decimal must read back to its tick (2^50 ticks and over did not: "recorded ...82, recomputed ...84").
  const std::string s = tmp("exact_big.json");
  Run r = zbplan({"plan", "--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "23456789.123457", "--tb", "1e7", "--tw",
                  "9999999.999999", "--tcomm", "0.000001", "--optimizer", "sync", "-o", s});
  INFO(r.err);
  REQUIRE(r.code == 0);
  r = zbplan({"validate", s});
  INFO(r.err);
  CHECK(r.code == 0);
  r = zbplan({"simulate", s, "--iterations", "100", "--state-latency", "5e8", "--allreduce-latency", "5e8"});
  CHECK(r.code == 0);
  // Beyond: refused, saying what a file can hold.
  r = zbplan({"plan", "--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "12345678901.234567", "--tb", "1e10", "--tw",
              "1e10", "-o", tmp("exact_too_big.json")});
  CHECK(r.code == 1);
  CHECK(r.err.find("more than the 562949953.421312 a schedule file records exactly: use a larger time unit") !=
        std::string::npos);
  r = zbplan({"simulate", s, "--state-latency", "6e8"});
  CHECK(r.code == 2);
}

TEST_CASE("zbplan: a mistyped subcommand is named before the flags meant for it, and 1f1b-i without chunks is a usage error") {
  Run r = zbplan({"pln", "-p", "2"});
  CHECK(r.code == 2);
  CHECK(r.err.rfind("zbplan: unknown subcommand 'pln'; did you mean 'plan'?", 0) == 0);
  r = zbplan({"-p", "2"});
  CHECK(r.code == 2);
  CHECK(r.err.rfind("zbplan: unknown flag -p", 0) == 0);
  r = zbplan({"plan", "--method", "1f1b-i", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "1", "-o", tmp("i.json")});
  CHECK(r.code == 2);
  CHECK(r.err == "zbplan: 1f1b-i interleaves chunks: give --chunks V with V >= 2\nrun 'zbplan plan --help' for usage\n");
}

TEST_CASE("zbplan: a V method runs the V whether --placement v is given or not, and refuses another placement") {
  const std::vector<std::string> base = {"plan", "--method", "zb-v", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "1"};
  auto with = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"-o", tmp(out)});
    return zbplan(args);
  };
  auto plain = with({}, "cli_zbv_plain.json");
  REQUIRE(plain.code == 0);
  auto v = with({"--placement", "v"}, "cli_zbv_v.json");
  INFO(v.err);
  REQUIRE(v.code == 0);
  CHECK(nlohmann::json::parse(std::ifstream(tmp("cli_zbv_v.json")))["stages"] ==
        nlohmann::json::parse(std::ifstream(tmp("cli_zbv_plain.json")))["stages"]);
  auto interleaved = with({"--placement", "interleaved"}, "cli_zbv_i.json");
  CHECK(interleaved.code == 1);
  CHECK(interleaved.err.find("method zb-v runs the V placement (2 chunks, stage r holding virtual stages r and 2p-1-r), "
                             "not the one the problem gives") != std::string::npos);
  interleaved = with({"--chunks", "2", "--placement", "interleaved"}, "cli_zbv_i.json");
  CHECK(interleaved.code == 1);
  CHECK(!std::ifstream(tmp("cli_zbv_i.json")));
}

TEST_CASE("zbplan import: the same flags as plan give a V schedule's figures exactly (per stage, split), --per-chunk one chunk's") {
  const std::vector<std::string> figures = {"--tf", "18.522", "--tb", "18.086", "--tw", "9.337", "--tcomm", "0.601",
                                            "--mem-b", "1", "--mem-w", "0.3664"};
  std::vector<std::string> args = {"plan", "--method", "zb-v", "-p", "8", "-m", "24", "-o", tmp("cli_rt_plan.json")};
  args.insert(args.end(), figures.begin(), figures.end());
  REQUIRE(zbplan(args).code == 0);
  REQUIRE(zbplan({"export", tmp("cli_rt_plan.json"), "-o", tmp("cli_rt.csv")}).code == 0);
  args = {"import", tmp("cli_rt.csv"), "-o", tmp("cli_rt_import.json")};
  args.insert(args.end(), figures.begin(), figures.end());
  Run imported = zbplan(args);
  INFO(imported.err);
  REQUIRE(imported.code == 0);
  CHECK(imported.out.find("import: --tf, --tb, --tw, --mem-b and --mem-w read per stage, each split into the CSV's 2 "
                          "chunks") != std::string::npos);
  auto planned = nlohmann::json::parse(std::ifstream(tmp("cli_rt_plan.json")));
  auto back = nlohmann::json::parse(std::ifstream(tmp("cli_rt_import.json")));
  back["problem"].erase("placement");  // the CSV's, where plan's zb-v leaves it to the method (the same V)
  CHECK(back["problem"] == planned["problem"]);
  for (const char* figure : {"span", "period", "peak_memory", "makespan"}) {
    INFO(figure);
    CHECK(back[figure] == planned[figure]);
  }
  // --per-chunk: the figures are one chunk's, as plan --chunks 2 reads them.
  args.push_back("--per-chunk");
  args[3] = tmp("cli_rt_chunk.json");
  REQUIRE(zbplan(args).code == 0);
  auto chunk = nlohmann::json::parse(std::ifstream(tmp("cli_rt_chunk.json")));
  CHECK(chunk["problem"]["t_f"] == 18.522);
  CHECK(back["problem"]["t_f"] == 9.261);
}
