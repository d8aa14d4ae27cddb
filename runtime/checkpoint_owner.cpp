// The checkpoint directory's manifest and its checks (see checkpoint_owner.h).
#include "runtime/checkpoint_owner.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/output_file.h"
#include "runtime/checkpoint.h"

namespace zbpp {

namespace {

using nlohmann::json;

constexpr char kFormat[] = "zbpp-checkpoint-run-1";

json manifest_of(const RunIdentity& run) {
  json manifest = identity_json(run);
  manifest["format"] = kFormat;
  return manifest;
}

// Where `theirs` (the directory's manifest) and `mine` differ: "written with A, this run has B; ...", and
// what a resume should change; both empty when they name the same run. Throws json exceptions
// for a malformed manifest.
std::string differences(const json& theirs, const json& mine, std::string* fixes) {
  std::string out;
  for (const IdentityField& f : identity_fields()) {
    const json& a = theirs.at(f.key);
    const json& b = mine.at(f.key);
    if (f.same(a, b)) continue;
    out += (out.empty() ? "written with " : "; with ") + f.text(a, b) + ", this run has " + f.text(b, a);
    *fixes += (fixes->empty() ? "" : ", ") + std::string(f.fix);
  }
  return out;
}

// The checkpoint files in `dir` (any rank's) and the latest step among them.
std::vector<std::string> checkpoint_files(const std::string& dir, int* latest) {
  std::vector<std::string> names;
  *latest = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    int step = -1, rank = -1;
    if (!parse_checkpoint_name(name, &step, &rank)) continue;
    names.push_back(name);
    *latest = std::max(*latest, step);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// "step2.rank0.ckpt, step2.rank1.ckpt" (the first three, then how many more).
std::string list(const std::vector<std::string>& names) {
  std::string t;
  for (size_t i = 0; i < names.size() && i < 3; ++i) t += (i ? ", " : "") + names[i];
  if (names.size() > 3) t += " and " + std::to_string(names.size() - 3) + " more";
  return t;
}

}  // namespace

std::string check_checkpoint_owner(const std::string& dir, const RunIdentity& run, bool resume) {
  const std::string manifest = dir + "/" + kCheckpointManifest;
  int latest = -1;
  const std::vector<std::string> files = checkpoint_files(dir, &latest);
  const std::string start_over = "remove them (" + std::string(kCheckpointManifest) + " and step*.ckpt) to start over there";
  std::error_code ec;
  if (!std::filesystem::exists(manifest, ec)) {
    if (files.empty()) return "";  // nothing to overwrite; a resume finds nothing to resume (said later)
    const std::string whose = dir + " holds checkpoints (" + list(files) + ") but no " + kCheckpointManifest +
                              " naming their run (written by a zbrun older than checkpoint manifests, or copied in)";
    return resume ? "--resume: " + whose + ", so this run cannot tell whether they are its own; start it fresh (without "
                                           "--resume) in another --checkpoint directory"
                  : "--checkpoint: " + whose + ", which a fresh run would overwrite; use another --checkpoint "
                                               "directory, or " + start_over;
  }
  if (!resume && files.empty()) return "";  // a run that wrote no checkpoint left nothing to lose
  std::ifstream in(manifest, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const json mine = manifest_of(run);
  try {
    const json theirs = json::parse(text);
    const json format = theirs.is_object() && theirs.contains("format") ? theirs["format"] : json();
    if (format != kFormat)
      return "--checkpoint: " + manifest + ": " +
             (format.is_string() && format.get<std::string>().rfind("zbpp-checkpoint-run-", 0) == 0
                  ? "written by another zbrun version (format " + format.get<std::string>() + ", this one reads " + kFormat + ")"
                  : std::string("not a zbrun checkpoint manifest (no \"format\": \"") + kFormat + "\")") +
             "; use another --checkpoint directory";
    std::string fixes;
    const std::string diff = differences(theirs, mine, &fixes);
    if (resume)
      return diff.empty() ? ""
                          : "--resume: the checkpoints in " + dir + " were " + diff + "; resume with " + fixes +
                                ", or start this run fresh (without --resume) in another --checkpoint directory";
    const std::string up_to = " (up to step " + std::to_string(latest) + ")";
    return diff.empty() ? "--checkpoint: " + dir + " holds this run's checkpoints" + up_to +
                              ", which a fresh run would overwrite; add --resume to continue from them, or " + start_over
                        : "--checkpoint: " + dir + " holds another run's checkpoints" + up_to + ", " + diff +
                              "; a fresh run would overwrite them: use another --checkpoint directory, or " + start_over;
  } catch (const json::exception& e) {
    return "--checkpoint: " + manifest + ": not a readable checkpoint manifest (" + e.what() +
           "); use another --checkpoint directory";
  }
}

bool write_checkpoint_manifest(const std::string& dir, const RunIdentity& run, std::string* err) {
  const std::string path = dir + "/" + kCheckpointManifest;
  if (write_file_replacing(path, manifest_of(run).dump(2) + "\n", err)) return true;
  *err = "--checkpoint: cannot write " + *err;
  return false;
}

int remove_checkpoint_temporaries(const std::string& dir, int rank) {
  // write_file_replacing's temporary for DIR/NAME is DIR/.NAME.tmp-XXXXXX (output_file.cpp).
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp-");
    if (name.size() < 2 || name[0] != '.' || at == std::string::npos || name.size() - at != 5 + 6) continue;
    const std::string target = name.substr(1, at - 1);
    int step = -1, r = -1;
    const bool mine = parse_checkpoint_name(target, &step, &r) ? r == rank : rank == 0 && target == kCheckpointManifest;
    std::error_code gone;
    if (mine && entry.is_regular_file(gone) && std::filesystem::remove(entry.path(), gone)) ++removed;
  }
  return removed;
}

}  // namespace zbpp
