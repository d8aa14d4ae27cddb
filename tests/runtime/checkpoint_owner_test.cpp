// Checkpoint directories owned by one run (issue 34): a fresh run may not overwrite another run's
// checkpoints (or its own), a --resume that changed the seed, the split or the data is refused
// naming the field, interrupted writes' temporary files are removed, and --every past --steps warns.
#include "runtime/checkpoint_owner.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <catch2/catch.hpp>

#include "runtime/checkpoint.h"
#include "tests/runtime/cli_helpers.h"

using namespace zbpp;
using namespace zbpp::test;

namespace {

// Every file in `dir` but the ranks' lock files (which any run rewrites), with its bytes.
std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".rank", 0) != 0) out[name] = read_all(e.path().string());
  }
  return out;
}

// A fresh directory holding the checkpoints of 2 steps of `s` run with `extra` flags.
std::string first_run(const std::string& tag, const std::string& s, std::vector<std::string> extra = {}) {
  const std::string dir = tmp(tag);
  std::filesystem::remove_all(dir);
  std::vector<std::string> args = {"zbrun", s, "--local", "--steps", "2", "--quiet", "--checkpoint", dir};
  args.insert(args.end(), extra.begin(), extra.end());
  Run r = call(zbrun_local, args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  REQUIRE(std::filesystem::exists(dir + "/run.json"));
  return dir;
}

Run again(const std::string& s, const std::string& dir, std::vector<std::string> extra) {
  std::vector<std::string> args = {"zbrun", s, "--local", "--steps", "3", "--quiet", "--checkpoint", dir};
  args.insert(args.end(), extra.begin(), extra.end());
  return call(zbrun_local, args);
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST_CASE("checkpoint owner: a fresh run into a directory holding checkpoints is refused, touching none of them") {
  const std::string s = plan("own_fresh", "zb-h1", 2, 4);
  const std::string dir = first_run("own_fresh", s);
  const auto before = files_of(dir);
  REQUIRE(before.size() == 3);  // run.json and each rank's step2 checkpoint
  Run other = again(s, dir, {"--seed", "2"});
  CHECK(other.code == 1);
  CHECK(other.err == "zbrun: --checkpoint: " + dir + " holds another run's checkpoints (up to step 2), written with "
                     "--seed 1, this run has --seed 2; a fresh run would overwrite them: use another --checkpoint "
                     "directory, or remove them (run.json and step*.ckpt) to start over there\n");
  CHECK(other.out.find("done:") == std::string::npos);
  CHECK(files_of(dir) == before);
  Run same = again(s, dir, {});
  CHECK(same.code == 1);
  CHECK(same.err == "zbrun: --checkpoint: " + dir + " holds this run's checkpoints (up to step 2), which a fresh run "
                    "would overwrite; add --resume to continue from them, or remove them (run.json and step*.ckpt) to "
                    "start over there\n");
  CHECK(files_of(dir) == before);
  // Checkpoints with no manifest (an older zbrun's): neither overwritten nor resumed.
  std::filesystem::remove(dir + "/run.json");
  Run unnamed = again(s, dir, {});
  CHECK(unnamed.code == 1);
  CHECK(unnamed.err.find("zbrun: --checkpoint: " + dir + " holds checkpoints (step2.rank0.ckpt, step2.rank1.ckpt) but "
                         "no run.json naming their run") != std::string::npos);
  Run unnamed_resume = again(s, dir, {"--resume"});
  CHECK(unnamed_resume.code == 1);
  CHECK(unnamed_resume.err.find("zbrun: --resume: " + dir + " holds checkpoints") != std::string::npos);
  CHECK(unnamed_resume.err.find("start it fresh (without --resume) in another --checkpoint directory\n") != std::string::npos);
  // A manifest with no checkpoints beside it (a run stopped before its first) holds nothing to lose.
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_text(dir + "/run.json", "{}");
  CHECK(again(s, dir, {"--seed", "3"}).code == 0);
}

TEST_CASE("checkpoint owner: a resume that changed the seed, the layer split or the data is refused, naming it") {
  const std::string s = plan("own_resume", "zb-h1", 2, 4);
  const std::string data_a = tmp("own_resume_a.txt"), data_b = tmp("own_resume_b.txt"), moved = tmp("own_resume_moved.txt");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the quick brown fox jumps over the lazy dog ";
  write_text(data_a, text);
  write_text(moved, text);
  write_text(data_b, text + "!");
  const std::string dir = first_run("own_resume", s, {"--data", data_a});
  const auto before = files_of(dir);
  const std::string tail = ", or start this run fresh (without --resume) in another --checkpoint directory\n";

  Run seed = again(s, dir, {"--data", data_a, "--seed", "2", "--resume"});
  CHECK(seed.code == 1);
  CHECK(seed.err == "zbrun: --resume: the checkpoints in " + dir + " were written with --seed 1, this run has --seed 2; "
                    "resume with that --seed" + tail);
  Run split = again(s, dir, {"--data", data_a, "--layer-split", "1,3", "--resume"});
  CHECK(split.code == 1);
  CHECK(split.err == "zbrun: --resume: the checkpoints in " + dir + " were written with layer split 2,2, this run has "
                     "layer split 1,3; resume with that layer split (--layer-split: blocks per virtual stage, or the "
                     "schedule planned with it)" + tail);
  Run data = again(s, dir, {"--data", data_b, "--resume"});
  CHECK(data.code == 1);
  CHECK(data.err.find("zbrun: --resume: the checkpoints in " + dir + " were written with --data " + data_a + " (" +
                      std::to_string(text.size()) + " bytes, FNV-1a ") != std::string::npos);
  CHECK(data.err.find("this run has --data " + data_b + " (" + std::to_string(text.size() + 1) + " bytes") !=
        std::string::npos);
  Run synthetic = again(s, dir, {"--resume", "--lr", "0.002"});
  CHECK(synthetic.code == 1);
  CHECK(synthetic.err.find("this run has --data synthetic; with --lr 0.001 --clip-norm 1, this run has --lr 0.002 "
                           "--clip-norm 1; resume with that data, those optimizer flags" + tail) != std::string::npos);
  CHECK(files_of(dir) == before);
  // The same bytes at another path are the same data.
  Run same = again(s, dir, {"--data", moved, "--resume"});
  INFO(same.err);
  CHECK(same.code == 0);
}

TEST_CASE("checkpoint owner: temporary files of interrupted writes are removed at start, and counted") {
  const std::string s = plan("own_tmp", "zb-h1", 2, 4);
  const std::string dir = first_run("own_tmp", s);
  for (const char* name : {".step4.rank0.ckpt.tmp-a1B2c3", ".step4.rank1.ckpt.tmp-XyZ123", ".run.json.tmp-000000"})
    write_text(dir + "/" + name, "half a file");
  write_text(dir + "/.notes.tmp-abcdef", "not zbrun's");  // only what zbrun's writer names is removed
  Run r = again(s, dir, {"--resume"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.err == "zbrun: --checkpoint: removed 3 temporary files that interrupted checkpoint writes left in " + dir + "\n");
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{".notes.tmp-abcdef", ".rank0.lock", ".rank1.lock", "run.json",
                                         "step2.rank0.ckpt", "step2.rank1.ckpt", "step3.rank0.ckpt", "step3.rank1.ckpt"});
}

TEST_CASE("checkpoint owner: --every past --steps, or past a resumed run's end, warns that none will be written") {
  const std::string s = plan("own_every", "zb-h1", 2, 4);
  const std::string dir = tmp("own_every");
  std::filesystem::remove_all(dir);
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--quiet", "--checkpoint", dir, "--every", "5"});
  CHECK(r.code == 0);
  CHECK(r.err == "zbrun: warning: no checkpoint will be written: --every 5 is more than --steps 2\n");
  CHECK(checkpoint_steps(dir, 0).empty());
  const std::string resumed = first_run("own_every_resumed", s);
  r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "3", "--quiet", "--checkpoint", resumed, "--every", "2", "--resume"});
  CHECK(r.code == 0);
  CHECK(r.err == "zbrun: warning: no checkpoint will be written: this run resumes after step 1 (from step2.rank*.ckpt) and "
                 "ends at --steps 3, "
                 "before the next multiple of --every 2\n");
}
