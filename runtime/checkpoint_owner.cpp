// The checkpoint directory's manifest and its checks (see checkpoint_owner.h).
#include "runtime/checkpoint_owner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/output_file.h"
#include "runtime/checkpoint.h"

namespace zbpp {

namespace {

using nlohmann::json;

constexpr char kFormat[] = "zbpp-checkpoint-run-1";

std::string hex16(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.7g", v);  // a float's digits, as a flag would give them
  return buf;
}

// A float as the shortest decimal that reads back as it (0.9, not 0.899999976), so the manifest
// reads as the flags were given; the same float always gives the same number.
double shortest(float v) {
  char buf[40];
  for (int digits = 1; digits < 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) return std::strtod(buf, nullptr);
  }
  return v;
}

json manifest_of(const CheckpointRun& run) {
  const GptConfig& m = run.model;
  const AdamWConfig& a = run.adamw;
  return json{{"format", kFormat},
              {"schedule_hash", hex16(run.schedule_hash)},
              {"model",
               {{"name", m.name},
                {"vocab", m.vocab},
                {"seq", m.seq},
                {"channels", m.channels},
                {"heads", m.heads},
                {"layers", m.layers},
                {"batch", m.batch}}},
              {"split", run.split},
              {"seed", run.seed},
              {"data", {{"source", run.data}, {"bytes", run.data_bytes}, {"hash", hex16(run.data_hash)}}},
              {"optimizer",
               {{"lr", shortest(a.lr)},
                {"clip_norm", shortest(a.clip_norm)},
                {"beta1", shortest(a.beta1)},
                {"beta2", shortest(a.beta2)},
                {"eps", shortest(a.eps)},
                {"weight_decay", shortest(a.weight_decay)}}}};
}

// One field of the identity: how two manifests' values compare, how one reads in a message, and
// what a resume should do about a difference.
struct Field {
  const char* key;
  std::function<bool(const json&, const json&)> same;
  std::function<std::string(const json& value, const json& other)> text;
  const char* fix;
};

bool equal(const json& a, const json& b) { return a == b; }

const std::vector<Field>& fields() {
  static const std::vector<Field> all = {
      {"schedule_hash", equal,
       [](const json& v, const json&) { return "a schedule file whose text hashes to " + v.get<std::string>(); },
       "the schedule file they were written with"},
      {"model", equal,
       [](const json& v, const json&) {
         return "--model " + v.at("name").get<std::string>() + " (vocab " + v.at("vocab").dump() + ", seq " +
                v.at("seq").dump() + ", channels " + v.at("channels").dump() + ", heads " + v.at("heads").dump() +
                ", layers " + v.at("layers").dump() + ", batch " + v.at("batch").dump() + ")";
       },
       "that --model"},
      {"split", equal,
       [](const json& v, const json&) {
         std::string t;
         for (const json& n : v) t += (t.empty() ? "" : ",") + n.dump();
         return "layer split " + t;
       },
       "that layer split (--layer-split: blocks per virtual stage, or the schedule planned with it)"},
      {"seed", equal, [](const json& v, const json&) { return "--seed " + v.dump(); }, "that --seed"},
      // A data file is the same by its bytes, wherever it now lies.
      {"data",
       [](const json& a, const json& b) {
         const bool synthetic = a.at("source") == "synthetic";
         return synthetic == (b.at("source") == "synthetic") &&
                (synthetic || (a.at("bytes") == b.at("bytes") && a.at("hash") == b.at("hash")));
       },
       [](const json& v, const json&) {
         const std::string source = v.at("source").get<std::string>();
         return source == "synthetic" ? std::string("--data synthetic")
                                      : "--data " + source + " (" + v.at("bytes").dump() + " bytes, FNV-1a " +
                                            v.at("hash").get<std::string>() + ")";
       },
       "that data"},
      // --lr and --clip-norm are flags; the rest of AdamW's settings are shown only where they differ.
      {"optimizer", equal,
       [](const json& v, const json& other) {
         std::string t = "--lr " + number(v.at("lr").get<double>()) + " --clip-norm " + number(v.at("clip_norm").get<double>());
         for (const char* k : {"beta1", "beta2", "eps", "weight_decay"})
           if (v.at(k) != other.at(k)) t += std::string(", AdamW ") + k + " " + number(v.at(k).get<double>());
         return t;
       },
       "those optimizer flags"},
  };
  return all;
}

// Where `theirs` (the directory's manifest) and `mine` differ: "written with A, this run has B; ...", and
// what a resume should change; both empty when they name the same run. Throws json exceptions
// for a malformed manifest.
std::string differences(const json& theirs, const json& mine, std::string* fixes) {
  std::string out;
  for (const Field& f : fields()) {
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

CheckpointRun checkpoint_run(std::uint64_t schedule_hash, const GptConfig& model, int virtual_stages,
                             std::uint64_t seed, const DataSource& data, const AdamWConfig& adamw) {
  CheckpointRun run;
  run.schedule_hash = schedule_hash;
  run.model = model;
  run.split = layer_split(model, virtual_stages).count;
  run.seed = seed;
  run.data = data.name();
  const auto& bytes = data.bytes();
  run.data_bytes = bytes.size();
  run.data_hash = bytes.empty() ? 0 : text_hash(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  run.adamw = adamw;
  return run;
}

std::string check_checkpoint_owner(const std::string& dir, const CheckpointRun& run, bool resume) {
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

bool write_checkpoint_manifest(const std::string& dir, const CheckpointRun& run, std::string* err) {
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
