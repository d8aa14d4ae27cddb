// A run's identity, its JSON form and the comparison of the ranks' identities (see run_identity.h).
#include "runtime/run_identity.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "runtime/checkpoint.h"

namespace zbpp {

namespace {

using nlohmann::json;

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

// A float as the shortest decimal that reads back as it (0.9, not 0.899999976), so the JSON reads
// as the flags were given; the same float always gives the same number.
double shortest(float v) {
  char buf[40];
  for (int digits = 1; digits < 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) return std::strtod(buf, nullptr);
  }
  return v;
}

bool equal(const json& a, const json& b) { return a == b; }

}  // namespace

RunIdentity run_identity(std::uint64_t schedule_hash, const GptConfig& model, int virtual_stages, std::uint64_t seed,
                         const DataSource& data, const AdamWConfig& adamw) {
  RunIdentity run;
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

json identity_json(const RunIdentity& run) {
  const GptConfig& m = run.model;
  const AdamWConfig& a = run.adamw;
  return json{{"schedule_hash", hex16(run.schedule_hash)},
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

const std::vector<IdentityField>& identity_fields() {
  static const std::vector<IdentityField> all = {
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
      // A data file is the same by its bytes, wherever it lies.
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

std::string ranks_disagree(const std::vector<std::string>& identities) {
  std::vector<json> runs;
  for (const std::string& text : identities) runs.push_back(json::parse(text));
  std::string out;
  for (const IdentityField& f : identity_fields()) {
    const json& first = runs[0].at(f.key);
    std::vector<size_t> differ;
    for (size_t r = 1; r < runs.size(); ++r)
      if (!f.same(runs[r].at(f.key), first)) differ.push_back(r);
    if (differ.empty()) continue;
    const json& theirs = runs[differ[0]].at(f.key);
    out += (out.empty() ? "" : "; ") + ("rank " + std::to_string(differ[0]) + " has " + f.text(theirs, first)) +
           ", rank 0 has " + f.text(first, theirs);
    if (differ.size() > 1) {
      std::string more;
      for (size_t i = 1; i < differ.size(); ++i) more += (i > 1 ? ", " : "") + std::to_string(differ[i]);
      out += " (rank" + std::string(differ.size() > 2 ? "s " : " ") + more + " differ" + (differ.size() > 2 ? "" : "s") +
             " from rank 0 too)";
    }
  }
  if (out.empty()) return "";
  return out + ": every rank of a job must run the same schedule file, --model, layer split (--layer-split), --data, "
               "--seed and optimizer flags (--lr, --clip-norm); start every rank with the same ones";
}

}  // namespace zbpp
