// Checkpoints: a run killed after a checkpoint and resumed ends bit-identical to one never
// interrupted (sync and post-validation), and broken checkpoints are refused with the file named.
#include "runtime/checkpoint.h"

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "tests/runtime/cli_helpers.h"

using namespace zbpp;
using namespace zbpp::test;

namespace {
std::string digest_of(const Run& r) {
  auto at = r.out.find("weights digest ");
  return at == std::string::npos ? "" : r.out.substr(at + 15, 16);
}
}  // namespace

TEST_CASE("checkpoint: a run killed after a checkpoint resumes bit-identically") {
  for (std::string optimizer : {"sync", "post-validation"}) {
    INFO(optimizer);
    std::string s = plan("ckpt_" + optimizer, "zb-h1", 4, 8, {"--optimizer", optimizer});
    std::string dir = tmp("ckpt_" + optimizer);
    std::filesystem::remove_all(dir);
    Run whole = call(zbrun_local, {"zbrun", s, "--local", "--steps", "6", "--quiet"});
    REQUIRE(whole.code == 0);
    // Rank 1 dies in step 4, after the checkpoint of 4 steps.
    Run killed = call(zbrun_local, {"zbrun", s, "--local", "--steps", "6", "--quiet", "--checkpoint", dir, "--every", "2",
                                    "--fail-at", "1:3@4"});
    CHECK(killed.code == 1);
    CHECK(killed.err.find("zbrun: step 4, rank 1, op 3 (RECV_F1 from rank 0): injected failure (--fail-at)") !=
          std::string::npos);
    CHECK(checkpoint_steps(dir, 1) == std::vector<int>{2, 4});  // the last two are kept
    Run resumed = call(zbrun_local, {"zbrun", s, "--local", "--steps", "6", "--checkpoint", dir, "--every", "2", "--resume"});
    INFO(resumed.err);
    REQUIRE(resumed.code == 0);
    CHECK(resumed.out.find("resumed from " + dir + " after step 3 (its step4.rank*.ckpt files: the state after 4 steps)\nstep 4: loss ") !=
          std::string::npos);
    // Both summary lines name the same steps: those after this run's first (which allocates).
    CHECK(resumed.out.find("(mean of steps 5..5)") != std::string::npos);
    CHECK(resumed.out.find("(steady state: steps 5..5, slowest rank)") != std::string::npos);
    CHECK(digest_of(resumed) == digest_of(whole));
    CHECK(!digest_of(whole).empty());
  }
}

TEST_CASE("checkpoint: truncated, corrupt or foreign checkpoints are refused, naming the file") {
  std::string s = plan("ckbad", "zb-h1", 2, 4), other = plan("ckbad_other", "1f1b", 2, 4);
  std::string dir = tmp("ckbad");
  std::filesystem::remove_all(dir);
  REQUIRE(call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--quiet", "--checkpoint", dir}).code == 0);
  std::string file = dir + "/step2.rank0.ckpt";
  std::string bytes = read_all(file);
  auto resume = [&](const std::string& schedule) {
    return call(zbrun_local, {"zbrun", schedule, "--local", "--steps", "4", "--quiet", "--checkpoint", dir, "--resume"});
  };
  Run foreign = resume(other);
  CHECK(foreign.code == 1);
  CHECK(foreign.err.find("zbrun: --resume: the checkpoints in " + dir + " were written with a schedule file whose text "
                         "hashes to ") != std::string::npos);
  // Past a manifest that says otherwise (copied from a run of the other schedule), the file itself refuses.
  std::string other_dir = tmp("ckbad_other");
  std::filesystem::remove_all(other_dir);
  REQUIRE(call(zbrun_local, {"zbrun", other, "--local", "--steps", "2", "--quiet", "--checkpoint", other_dir}).code == 0);
  const std::string manifest = read_all(dir + "/run.json");
  std::filesystem::copy_file(other_dir + "/run.json", dir + "/run.json", std::filesystem::copy_options::overwrite_existing);
  foreign = resume(other);
  CHECK(foreign.code == 1);
  CHECK(foreign.err.find("zbrun: rank 0: cannot resume: " + file + ": written for another schedule file") != std::string::npos);
  std::ofstream(dir + "/run.json", std::ios::binary | std::ios::trunc) << manifest;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 9);
  Run cut = resume(s);
  CHECK(cut.code == 1);
  CHECK(cut.err.find("zbrun: rank 0: cannot resume: " + file + ": truncated") != std::string::npos);
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 1;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << flipped;
  Run corrupt = resume(s);
  CHECK(corrupt.code == 1);
  CHECK(corrupt.err.find(file + ": checksum mismatch (the file is corrupt)") != std::string::npos);
  Run none = call(zbrun_local, {"zbrun", s, "--local", "--checkpoint", tmp("ckbad_empty"), "--resume"});
  CHECK(none.code == 1);
  CHECK(none.err.find("no checkpoint of this rank or another to resume from") != std::string::npos);
  Run usage = call(zbrun_local, {"zbrun", s, "--local", "--resume"});
  CHECK(usage.code == 2);
  CHECK(usage.err == "zbrun: --every and --resume need --checkpoint DIR\nrun 'zbrun --help' for usage\n");
}

TEST_CASE("checkpoint: a file of another rank, or a directory where a file should be, is refused, naming both") {
  std::string s = plan("ckswap", "zb-h1", 2, 4);
  std::string dir = tmp("ckswap");
  std::filesystem::remove_all(dir);
  REQUIRE(call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--quiet", "--checkpoint", dir}).code == 0);
  const std::string r0 = dir + "/step2.rank0.ckpt", r1 = dir + "/step2.rank1.ckpt";
  std::filesystem::rename(r0, dir + "/swap");
  std::filesystem::rename(r1, r0);
  std::filesystem::rename(dir + "/swap", r1);
  auto resume = [&] {
    return call(zbrun_local, {"zbrun", s, "--local", "--steps", "4", "--quiet", "--checkpoint", dir, "--resume"});
  };
  Run swapped = resume();
  CHECK(swapped.code == 1);
  CHECK(swapped.err.find("cannot resume: " + r0 + ": holds rank 1's state, but rank 0 reads it (a checkpoint file "
                         "renamed or copied to another rank's name?)\n") != std::string::npos);
  std::filesystem::remove(r1);
  std::filesystem::create_directory(r1);
  Run directory = resume();
  CHECK(directory.code == 1);
  CHECK(directory.err.find("zbrun: rank 1: cannot resume: " + r1 + ": not a regular file (a directory?), where rank 1's "
                           "checkpoint of step 2 should be\n") != std::string::npos);
}
