// libFuzzer harness: zbplan's command line, in-process. The input is the argument list, one
// argument per line. It runs in a private temporary directory holding a few real files (a problem,
// a lowered and a compute-only schedule, a PyTorch CSV, a trace) that are restored after each run.
// Inputs that could leave the directory (any '/') or run long (the ILP, auto, numbers above 12,
// which bounds p, m and chunks) are skipped: their cost is the CBC time limit or the problem
// size, not a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "planner/zbplan_cli.h"
#include "tests/fuzz/fuzz_util.h"

namespace fs = std::filesystem;

namespace {

struct Fixture {
  std::string text;
  fs::file_time_type written;
};
std::map<std::string, Fixture> g_fixtures;  // file name -> contents and when it was last written
std::string g_dir;                           // the private temporary directory, removed at exit

int zbplan(const std::vector<std::string>& args, std::string* out_text = nullptr) {
  std::vector<const char*> argv{"zbplan"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = zbpp::run_zbplan(static_cast<int>(argv.size()), argv.data(), out, err);
  if (out_text) *out_text = out.str() + err.str();
  return code;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Removes what a run wrote and rewrites the fixtures it overwrote (most runs write nothing).
void restore_fixtures() {
  for (const auto& entry : fs::directory_iterator(fs::current_path()))
    if (!g_fixtures.count(entry.path().filename().string())) fs::remove_all(entry.path());
  for (auto& [name, fixture] : g_fixtures) {
    std::error_code ec;
    if (fs::is_regular_file(name, ec) && fs::last_write_time(name, ec) == fixture.written &&
        fs::file_size(name, ec) == fixture.text.size())
      continue;
    std::ofstream(name, std::ios::binary) << fixture.text;
    fixture.written = fs::last_write_time(name, ec);
  }
}

// Whether the argument holds a number above 12 anywhere (decimal, hex, octal or exponent form).
bool has_big_number(const std::string& arg) {
  for (size_t i = 0; i < arg.size(); ++i) {
    if (arg[i] < '0' || arg[i] > '9') continue;
    const char* at = arg.c_str() + i;
    if (std::strtod(at, nullptr) > 12 || std::strtoull(at, nullptr, 0) > 12) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string dir = (fs::temp_directory_path() / "zbpp-fuzz-cli-XXXXXX").string();
  if (!mkdtemp(dir.data())) std::abort();
  fs::current_path(dir);
  g_dir = dir;
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(g_dir, ec);
  });
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
  for (const char* name : {"problem.json", "s.json", "c.json", "in.csv", "trace.json"})
    g_fixtures[name] = {slurp(name), fs::last_write_time(name)};
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string arg;
  for (size_t i = 0; i <= size; ++i) {
    if (i == size || data[i] == '\n') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += static_cast<char>(data[i]);
    }
  }
  if (args.size() > 32) return -1;  // -1: libFuzzer keeps the input out of the corpus
  for (const auto& a : args)
    if (a.find('/') != std::string::npos || a.find("ilp") != std::string::npos ||
        a.find("auto") != std::string::npos || has_big_number(a))
      return -1;
  std::string output;
  int code = zbplan(args, &output);
  zbpp::fuzz::require(code >= 0 && code <= 2, "zbplan returned an exit code other than 0, 1 or 2");
  zbpp::fuzz::require(code == 0 || !output.empty(), "zbplan failed without saying why");
  restore_fixtures();
  return 0;
}
