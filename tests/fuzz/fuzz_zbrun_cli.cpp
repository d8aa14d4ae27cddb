// libFuzzer harness: zbrun's command line and the inputs it reads (model file, data file, layer
// split, fault and checkpoint flags), in-process. The input is the argument list, one argument per
// line, after --check (all of a run's input checks, no training) and --local (no MPI). It
// runs in a private temporary directory of real files: lowered schedules with each optimizer, a
// compute-only one, a model file and a text corpus. Inputs with a '/' (which could leave the
// directory) are skipped. --check must leave the directory as it was.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/zbplan_cli.h"
#include "cli/zbrun_cli.h"
#include "tests/fuzz/cli_fixtures.h"

namespace {

std::unique_ptr<zbpp::fuzz::FixtureDir> g_dir;

int call(int (*fn)(int, const char* const*, std::ostream&, std::ostream&), const char* name,
         const std::vector<std::string>& args, std::string* output) {
  std::vector<const char*> argv{name};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = fn(static_cast<int>(argv.size()), argv.data(), out, err);
  *output = out.str() + err.str();
  return code;
}

int zbrun_in_process(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  return zbpp::run_zbrun(argc, argv, out, err, false);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_dir = std::make_unique<zbpp::fuzz::FixtureDir>("zbpp-fuzz-zbrun");
  std::string log;
  auto plan = [&](std::vector<std::string> args) { return call(zbpp::run_zbplan, "zbplan", args, &log) == 0; };
  const std::vector<std::string> problem = {"-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "0.5"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), problem.begin(), problem.end());
    return args;
  };
  bool ok = plan(with({"plan", "--method", "zb-h1", "-o", "s.json"})) &&
            plan(with({"plan", "--method", "zb-v", "--optimizer", "sync", "-o", "v.json"})) &&
            plan(with({"plan", "--method", "1f1b", "--compute-only", "-o", "c.json"}));
  if (!ok) {
    std::fprintf(stderr, "fuzz_zbrun_cli: cannot make the fixtures:\n%s\n", log.c_str());
    std::abort();
  }
  std::ofstream("model.json") << R"({"vocab": 256, "seq": 8, "channels": 16, "heads": 2, "layers": 3, "batch": 1})";
  std::ofstream("data.txt") << "zero bubble pipeline parallelism splits the backward pass into B and W. ";
  for (const char* name : {"s.json", "v.json", "c.json", "model.json", "data.txt"}) g_dir->keep(name);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = zbpp::fuzz::args_from_bytes(data, size);
  if (args.size() > 32) return -1;  // -1: libFuzzer keeps the input out of the corpus
  for (const auto& a : args)
    if (a.find('/') != std::string::npos) return -1;
  // First, so no fuzzed option can take them as its value (an input once made "--check" the
  // value of --profile, and the run trained).
  args.insert(args.begin(), {"--check", "--local"});
  std::string output;
  int code = call(zbrun_in_process, "zbrun", args, &output);
  zbpp::fuzz::require_cli_outcome("zbrun", code, output);
  // --check touches nothing: no metrics file, no checkpoint directory (issue 19, class 11).
  zbpp::fuzz::require(g_dir->untouched(), "zbrun --check created or changed a file");
  g_dir->restore();
  return 0;
}
