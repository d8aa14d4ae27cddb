// Issue 19 on zbrun: a failed output is an error on every rank (classes 1, 3, 4), and every number
// flag is read one way (class 10).
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "../file_size_limit.h"
#include <nlohmann/json.hpp>

#include "runtime/checkpoint.h"
#include "tests/runtime/cli_helpers.h"

using namespace zbpp;
using namespace zbpp::test;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("zbrun: an output that cannot be written fails the run on every rank, each naming rank 0 and why") {
  std::string s = plan("outputs", "zb-h1", 4, 4);
  std::string weights = tmp("outputs_weights");
  std::filesystem::remove_all(weights);
  // A directory where rank 0's second tensor goes (the first is what the start-up check looks at).
  std::filesystem::create_directories(weights + "/tensor1.f32");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--metrics", "/dev/full"}, "--metrics: cannot write /dev/full: No space left on device"},
      {{"--trace", "/dev/full"}, "--trace: cannot write /dev/full: No space left on device"},
      {{"--profile", "/dev/full"}, "--profile: cannot write /dev/full: No space left on device"},
      {{"--dump-weights", weights}, "--dump-weights: cannot write " + weights + "/tensor1.f32: Is a directory"},
  };
  for (const auto& [flag, why] : cases) {
    INFO(flag[0]);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::string> args = {"zbrun", s, "--local", "--steps", "2", "--quiet", "--timeout", "30"};
    args.insert(args.end(), flag.begin(), flag.end());
    Run r = call(zbrun_local, args);
    INFO(r.err);
    CHECK(r.code == 1);
    CHECK(r.err.find("zbrun: rank 0: " + why + "\n") != std::string::npos);
    // Every other rank stops at once (wherever it was) and says who failed first and why; none
    // waits out --timeout.
    CHECK(occurrences(r.err, "stopped: rank 0 failed: " + why + "\n") == 3);
    CHECK(occurrences(r.err, "zbrun: ") == 4);
    CHECK(r.out.find("wrote") == std::string::npos);
    CHECK(r.out.find("done:") == std::string::npos);
    CHECK(seconds_since(start) < 15);
  }
}

TEST_CASE("zbrun: a checkpoint write that fails half way keeps the old checkpoint and names the file") {
  std::string s = plan("ckfull", "zb-h1", 2, 4);
  std::string dir = tmp("ckfull");
  std::filesystem::remove_all(dir);
  std::vector<std::string> args = {"zbrun", s, "--local", "--steps", "2", "--quiet", "--checkpoint", dir};
  REQUIRE(call(zbrun_local, args).code == 0);
  const std::string file = dir + "/step2.rank0.ckpt", before = read_all(file);
  REQUIRE(before.size() > 4096);
  Run r;
  {
    // Resumed, to write step 4's checkpoint beside step 2's (a fresh run may not overwrite them).
    FileSizeLimit limit(4096);
    r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "4", "--quiet", "--checkpoint", dir, "--every", "2", "--resume"});
  }
  CHECK(r.code == 1);
  CHECK(r.err.find("zbrun: rank 0: --checkpoint: cannot write " + dir + "/step4.rank0.ckpt: File too large\n") !=
        std::string::npos);
  CHECK(read_all(file) == before);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  // No temporary file left; the ranks' lock files stay (flock needs no cleanup).
  CHECK(left == std::vector<std::string>{".rank0.lock", ".rank1.lock", "run.json", "step2.rank0.ckpt", "step2.rank1.ckpt"});
}

TEST_CASE("zbrun: every number flag refuses octal, junk, nan and out-of-range values with exit 2") {
  std::string s = plan("numbers", "zb-h1", 2, 4);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--steps", "010"}, "zbrun: --steps: '010' has a leading zero (octal or decimal?); write 10"},
      {{"--timeout", "1e10"}, "zbrun: --timeout: '1e10' is out of range; expected above 0 and at most 604800"},
      {{"--timeout", "nan"}, "zbrun: --timeout: 'nan' is not a number; expected a decimal number like 2 or 0.5"},
      {{"--lr", "0x1p-3"}, "zbrun: --lr: '0x1p-3' has 'x1p-3' after the number; expected a decimal number like 2 or 0.5"},
      {{"--seed", "-1"}, "zbrun: --seed: '-1' is out of range; expected an integer 0..9223372036854775807"},
      {{"--layer-split", "1,3,"},
       "zbrun: --layer-split: '1,3,': an empty item at the end; expected numbers separated by single commas"},
      {{"--fail-at", "1:2@0junk"},
       "zbrun: --fail-at: expected RANK:OP or RANK:OP@STEP, got '1:2@0junk': '0junk' has 'junk' after the number; "
       "expected a decimal integer"},
      {{"--fail-at", "1"}, "zbrun: --fail-at: expected RANK:OP or RANK:OP@STEP, got '1': no ':'"},
      {{"--inject-nonfinite", "1:0:"},
       "zbrun: --inject-nonfinite: expected STEP:RANK, got '1:0:': '0:' has ':' after the number; expected a decimal "
       "integer"},
  };
  for (const auto& [flag, message] : cases) {
    INFO(flag[0] << " " << flag[1]);
    std::vector<std::string> args = {"zbrun", s, "--local"};
    args.insert(args.end(), flag.begin(), flag.end());
    Run r = call(zbrun_local, args);
    CHECK(r.code == 2);
    CHECK(r.err.rfind(message + "\n", 0) == 0);
  }
}

TEST_CASE("zbrun: --metrics is strict JSON: a NaN figure is null, with nonfinite true") {
  std::string s = plan("nonfinite", "zb-h1", 2, 4);
  std::string metrics = tmp("nonfinite.jsonl");
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "3", "--quiet", "--metrics", metrics,
                             "--inject-nonfinite", "1:0"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::ifstream in(metrics);
  int lines = 0, flagged = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    INFO(line);
    nlohmann::json j;
    REQUIRE_NOTHROW(j = nlohmann::json::parse(line));  // nlohmann refuses nan and inf: no JSON has them
    if (j.contains("final")) continue;
    CHECK(j["nonfinite"] == (j["step"] == 1));
    if (j["step"] == 1) {
      CHECK(j["grad_norm"].is_null());
      CHECK(j["skipped"] == true);
      ++flagged;
    }
  }
  CHECK(lines == 4);
  CHECK(flagged == 1);
}

TEST_CASE("zbrun: --resume with --steps at or below the checkpoint's step is an error, not a run of nothing") {
  std::string s = plan("resume_steps", "zb-h1", 2, 4);
  std::string dir = tmp("resume_steps");
  std::filesystem::remove_all(dir);
  REQUIRE(call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--quiet", "--checkpoint", dir}).code == 0);
  for (const char* steps : {"2", "1"}) {
    Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", steps, "--checkpoint", dir, "--resume"});
    CHECK(r.code == 1);
    CHECK(r.err == "zbrun: --resume: " + dir + " holds the state after 2 steps, and --steps " + steps +
                       " asks for no more; give --steps above 2\n");
    CHECK(r.out.find("done:") == std::string::npos);
  }
  CHECK(call(zbrun_local, {"zbrun", s, "--local", "--steps", "3", "--quiet", "--checkpoint", dir, "--resume"}).code == 0);
}

TEST_CASE("zbrun --check: checks the output paths without creating any of them") {
  std::string s = plan("check_creates", "zb-h1", 2, 4);
  std::string dir = tmp("check_creates");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--check", "--metrics", dir + "/m.jsonl", "--trace", dir + "/t.json",
                             "--profile", dir + "/p.json", "--checkpoint", dir + "/ckpt/a", "--dump-weights", dir});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(std::filesystem::is_empty(dir));
  r = call(zbrun_local, {"zbrun", s, "--local", "--check", "--metrics", dir + "/no/m.jsonl"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --metrics: cannot write " + dir + "/no/m.jsonl: No such file or directory (the directory " + dir +
                     "/no)\n");
}

TEST_CASE("zbrun: --local in a process mpirun started (more than one) is refused") {
  std::string s = plan("local_under_mpirun", "zb-h1", 2, 4);
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    setenv(var, "2", 1);
    Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "1"});
    unsetenv(var);
    CHECK(r.code == 2);  // how zbrun was started is the command line
    CHECK(r.err == std::string("zbrun: --local runs every rank in this process, but mpirun started 2 processes (") + var +
                       "=2): each would run the whole pipeline and write the same files; drop --local under mpirun, "
                       "or start zbrun without mpirun\nrun 'zbrun --help' for usage\n");
  }
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);  // mpirun -n 1: one process, one pipeline
  CHECK(call(zbrun_local, {"zbrun", s, "--local", "--steps", "1", "--quiet"}).code == 0);
  unsetenv("OMPI_COMM_WORLD_SIZE");
}

TEST_CASE("zbrun: a checkpoint directory another run holds is refused, naming the holder") {
  std::string s = plan("ckpt_lock", "zb-h1", 2, 4);
  std::string dir = tmp("ckpt_lock");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string why;
  {
    auto held = lock_checkpoints(dir, 1, &why);  // as another run's rank 1 would
    REQUIRE(held);
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--checkpoint", dir, "--timeout", "30"});
    CHECK(r.code == 1);
    CHECK(r.err.find("zbrun: rank 1: --checkpoint: " + dir + " is in use by another zbrun run (pid " +
                     std::to_string(getpid()) + " on host " + host + " holds " + dir +
                     "/.rank1.lock); wait for it to end, or give each run its own directory\n") != std::string::npos);
    CHECK(checkpoint_steps(dir, 0).empty());  // rank 0 was stopped before it wrote anything
    CHECK_FALSE(lock_checkpoints(dir, 1, &why));
  }
  // Released with its holder: the next run goes ahead.
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--quiet", "--checkpoint", dir});
  CHECK(r.code == 0);
  CHECK(checkpoint_steps(dir, 1) == std::vector<int>{2});
}

TEST_CASE("zbrun: no output replaces the schedule or another output") {
  const std::string s = plan("clash", "zb-h1", 2, 4);
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "1", "--trace", s});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --trace " + s + " is the same file as the schedule " + s +
                     ": writing it would replace what is read; write it elsewhere\n");
  const std::string m = tmp("clash_out.json");
  r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "1", "--metrics", m, "--trace", m});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --trace " + m + " is the same file as --metrics " + m +
                     ": one would replace the other; give each output its own name\n");
  // The schedule is still the schedule.
  CHECK(call(run_zbplan, {"zbplan", "validate", s}).code == 0);
}

TEST_CASE("zbrun --dump-weights: an earlier dump's files are replaced, none left stale, and a directory of other files refused") {
  std::string s = plan("dump_stale", "zb-h1", 2, 4);
  std::string dir = tmp("dump_stale");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // An earlier dump of a bigger model: tensors this model does not have.
  std::ofstream(dir + "/tensor9999.f32") << "old";
  std::ofstream(dir + "/weights.json") << "{}";
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "1", "--quiet", "--dump-weights", dir});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(!std::filesystem::exists(dir + "/tensor9999.f32"));
  auto manifest = nlohmann::json::parse(std::ifstream(dir + "/weights.json"));
  CHECK(manifest["format"] == "zbpp-weights-1");
  long files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.path().extension() == ".f32";
  CHECK(files == static_cast<long>(manifest["tensors"].size()));
  for (const auto& t : manifest["tensors"]) {
    long values = 1;
    for (long d : t["shape"]) values *= d;
    CHECK(std::filesystem::file_size(dir + "/" + t["file"].get<std::string>()) == static_cast<uintmax_t>(values) * 4);
  }
  // A directory holding something no dump wrote: refused before the run, --check included, nothing removed.
  std::ofstream(dir + "/notes.txt") << "mine";
  for (bool check : {true, false}) {
    std::vector<std::string> args = {"zbrun", s, "--local", "--steps", "1", "--quiet", "--dump-weights", dir};
    if (check) args.push_back("--check");
    r = call(zbrun_local, args);
    CHECK(r.code == 1);
    CHECK(r.err == "zbrun: --dump-weights: " + dir + " holds notes.txt, which no --dump-weights wrote: give an empty or "
                   "new directory, or an earlier dump's (its tensors are replaced)\n");
  }
  CHECK(std::filesystem::exists(dir + "/weights.json"));
}
