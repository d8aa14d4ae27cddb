// libFuzzer harness: zbplan's command line, in-process. The input is the argument list, one
// argument per line. It runs in a private temporary directory holding a few real files (a problem,
// a lowered and a compute-only schedule, a PyTorch CSV, a trace) that are restored after each run.
// Inputs that could leave the directory (any '/') or run long (the ILP, auto, numbers above 12,
// which bounds p, m and chunks, above 6 for the chunk searches) are skipped: their cost is the CBC
// time limit or the problem size, not a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/zbplan_cli.h"
#include "tests/fuzz/cli_fixtures.h"

namespace {

std::unique_ptr<zbpp::fuzz::FixtureDir> g_dir;

int zbplan(const std::vector<std::string>& args, std::string* out_text = nullptr) {
  std::vector<const char*> argv{"zbplan"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = zbpp::run_zbplan(static_cast<int>(argv.size()), argv.data(), out, err);
  if (out_text) *out_text = out.str() + err.str();
  return code;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_dir = std::make_unique<zbpp::fuzz::FixtureDir>("zbpp-fuzz-cli");
  std::ofstream("problem.json") << R"({"p": 3, "m": 6, "t_f": [1, 1.2, 1], "t_b": 1, "t_w": 0.5, "t_comm": 0.1, "mem_limit": "2p"})";
  std::string log;
  bool ok = zbplan({"plan", "--method", "zb-h1", "--problem", "problem.json", "-o", "s.json"}, &log) == 0 &&
            zbplan({"plan", "--method", "zb-v", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "1",
                    "--compute-only", "-o", "c.json"}, &log) == 0 &&
            zbplan({"export", "s.json", "-o", "in.csv"}, &log) == 0;
  if (!ok) {
    std::fprintf(stderr, "fuzz_zbplan_cli: cannot make the fixtures:\n%s\n", log.c_str());
    std::abort();
  }
  std::ofstream("trace.json") << R"({"traceEvents": [{"ph": "X", "pid": 1, "tid": 0, "ts": 0, "dur": 1000, "args": {"op_index": 0}}]})";
  for (const char* name : {"problem.json", "s.json", "c.json", "in.csv", "trace.json"}) g_dir->keep(name);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = zbpp::fuzz::args_from_bytes(data, size);
  if (args.size() > 32) return -1;  // -1: libFuzzer keeps the input out of the corpus
  // The V and interleaved searches (heuristic-v, or heuristic with --chunks) grow about as p^3 m
  // (the greedy's grid, the family of blocks): numbers up to 6 there, so that one input stays
  // well within libFuzzer's timeout under the sanitizers.
  bool chunk_search = false;
  for (const auto& a : args) chunk_search = chunk_search || a == "heuristic-v" || a.rfind("--chunks", 0) == 0;
  for (const auto& a : args)
    if (a.find('/') != std::string::npos || a.find("ilp") != std::string::npos ||
        a.find("auto") != std::string::npos || zbpp::fuzz::has_big_number(a, chunk_search ? 6 : 12))
      return -1;
  std::string output;
  int code = zbplan(args, &output);
  zbpp::fuzz::require_cli_outcome("zbplan", code, output);
  g_dir->restore();
  return 0;
}
