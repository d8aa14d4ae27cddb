// Layer-cost files (schema/layers.schema.json; layers.h).
#include "core/layers.h"

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace zbpp {

namespace {

constexpr const char* kLayersFormat = "zbpp-layers-1";

struct KindName {
  LayerKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {
    {LayerKind::kEmbedding, "embedding"}, {LayerKind::kBlock, "block"}, {LayerKind::kHead, "head"},
    {LayerKind::kOther, "other"}};

// The numeric fields of a layer: name in the file, member, largest value, whether required.
struct NumberField {
  const char* name;
  double LayerCost::*member;
  double most;
  bool required;
};
constexpr double kMostMs = 1e9, kMostBytes = 1e18, kMostTotalBytes = 1e17;
constexpr NumberField kNumberFields[] = {
    {"t_f", &LayerCost::t_f, kMostMs, true},
    {"t_b", &LayerCost::t_b, kMostMs, true},
    {"t_w", &LayerCost::t_w, kMostMs, true},
    {"activation_bytes", &LayerCost::activation_bytes, kMostBytes, false},
    {"activation_bytes_w", &LayerCost::activation_bytes_w, kMostBytes, false},
    {"parameter_bytes", &LayerCost::parameter_bytes, kMostBytes, false},
    {"gradient_bytes", &LayerCost::gradient_bytes, kMostBytes, false},
    {"optimizer_bytes", &LayerCost::optimizer_bytes, kMostBytes, false},
    {"output_bytes", &LayerCost::output_bytes, kMostBytes, false},
};

}  // namespace

const char* layer_kind_name(LayerKind kind) {
  for (const auto& k : kKindNames)
    if (k.kind == kind) return k.name;
  return "other";
}

namespace {

using LayerError = std::function<void(const std::string& where, const std::string& message)>;

// One layer object of the file at JSON pointer `at`, appended to *layers (when it is an object);
// false when anything in it is wrong (each said). `names`: the names read so far.
bool read_layer(const nlohmann::json& v, const std::string& at, std::set<std::string>* names,
                std::vector<LayerCost>* layers, const LayerError& error) {
  bool ok = true;
  if (!v.is_object()) {
    error(at, "expected a layer object {\"name\", \"t_f\", \"t_b\", \"t_w\", ...}, got " + json_excerpt(v));
    return false;
  }
  LayerCost layer;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& key = it.key();
    const bool numeric = std::any_of(std::begin(kNumberFields), std::end(kNumberFields),
                                     [&](const NumberField& f) { return key == f.name; });
    if (!numeric && key != "name" && key != "kind") {
      error(at + "/" + key, "unknown field '" + key + "'");
      ok = false;
    }
  }
  if (!v.contains("name") || !v["name"].is_string() || v["name"].get<std::string>().empty() ||
      v["name"].get<std::string>().size() > 200) {
    error(at + "/name", "expected the layer's name (1 to 200 characters), got " +
                            (v.contains("name") ? json_excerpt(v["name"]) : std::string("nothing")));
    ok = false;
  } else {
    layer.name = v["name"].get<std::string>();
    if (!names->insert(layer.name).second) {
      error(at + "/name", "layer name " + json_excerpt(v["name"]) + " is used twice; names must be unique");
      ok = false;
    }
  }
  if (v.contains("kind")) {
    const auto* k = std::find_if(std::begin(kKindNames), std::end(kKindNames),
                                 [&](const KindName& kn) { return v["kind"] == kn.name; });
    if (k == std::end(kKindNames)) {
      error(at + "/kind", "expected \"embedding\", \"block\", \"head\" or \"other\", got " + json_excerpt(v["kind"]));
      ok = false;
    } else {
      layer.kind = k->kind;
    }
  }
  for (const auto& f : kNumberFields) {
    if (!v.contains(f.name)) {
      if (f.required) {
        error(at, std::string("missing required field '") + f.name + "'");
        ok = false;
      }
      continue;
    }
    const auto& x = v[f.name];
    if (!x.is_number() || !(x.get<double>() >= 0) || x.get<double>() > f.most) {
      error(at + "/" + f.name, std::string("expected a number from 0 to ") + (f.most == kMostMs ? "1e9 (ms)" : "1e18 (bytes)") +
                                   ", got " + json_excerpt(x));
      ok = false;
      continue;
    }
    layer.*f.member = x.get<double>();
  }
  layers->push_back(std::move(layer));
  return ok;
}

}  // namespace

std::optional<LayerCosts> layer_costs_from_json(const nlohmann::json& j, const std::string& file,
                                                const std::string& pointer, std::vector<Diag>* diags) {
  const LayerError error = [&](const std::string& where, const std::string& msg) {
    add_diag(diags, {file, where.empty() ? "/" : where, -1, -1, "", msg});
  };
  if (!j.is_object()) {
    error(pointer, "expected a layer-cost object {\"format\": \"" + std::string(kLayersFormat) +
                       "\", \"layers\": [...]}, got " + json_excerpt(j));
    return std::nullopt;
  }
  bool ok = true;
  static const std::set<std::string> known = {"$schema", "format", "comment", "model", "source", "layers"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) {
      error(pointer + "/" + it.key(), "unknown field '" + it.key() + "'");
      ok = false;
    }
  if (!j.contains("format") || j["format"] != kLayersFormat) {
    error(pointer + "/format", std::string("expected \"") + kLayersFormat + "\" (a layer-cost file, schema/layers.schema.json), got " +
                                   (j.contains("format") ? json_excerpt(j["format"]) : "nothing"));
    ok = false;
  }
  LayerCosts out;
  for (auto [field, target] : {std::pair{"model", &out.model}, {"source", &out.source}, {"comment", nullptr}}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_string()) {
      error(pointer + "/" + field, "expected a string, got " + json_excerpt(j[field]));
      ok = false;
    } else if (target) {
      *target = j[field].get<std::string>();
    }
  }
  if (!j.contains("layers") || !j["layers"].is_array() || j["layers"].empty()) {
    error(pointer + "/layers", "expected a non-empty list of layers, got " +
                                   (j.contains("layers") ? json_excerpt(j["layers"]) : std::string("nothing")));
    return std::nullopt;
  }
  std::set<std::string> names;
  const auto& list = j["layers"];
  if (list.size() > static_cast<size_t>(kMaxLayers)) {
    error(pointer + "/layers", "has " + std::to_string(list.size()) + " layers; at most " + std::to_string(kMaxLayers) +
                                   " are read (merge layers that always stay together)");
    return std::nullopt;
  }
  for (size_t i = 0; i < list.size(); ++i)
    ok = read_layer(list[i], pointer + "/layers/" + std::to_string(i), &names, &out.layers, error) && ok;
  if (!ok) return std::nullopt;
  // Every stage's sums must stay exact in ticks and MiB quanta (and m times them in 64 bits, which
  // the problem's own check then ensures): bound the totals over all layers.
  double time = 0, all_bytes = 0;
  for (const LayerCost& layer : out.layers) {
    time += layer.t_f + layer.t_b + layer.t_w;
    all_bytes += layer.activation_bytes + layer.static_bytes();
  }
  if (time > kMostMs) {
    error(pointer + "/layers", "the layers' T_F + T_B + T_W sum to " + std::to_string(time) + " ms, more than 1e9 ms "
                                   "(about 11 days), the most a plan counts exactly");
    return std::nullopt;
  }
  if (all_bytes > kMostTotalBytes) {
    error(pointer + "/layers", "the layers' activation, parameter, gradient and optimizer bytes sum to " +
                                   std::to_string(all_bytes) + ", more than 1e17 bytes");
    return std::nullopt;
  }
  return out;
}

bool load_layer_costs(const std::string& path, LayerCosts* out, std::vector<Diag>* diags) {
  std::string text;
  if (!read_text_file(path, &text, diags)) return false;
  auto j = parse_json_text(text, path, diags);
  if (!j) return false;
  auto costs = layer_costs_from_json(*j, path, "", diags);
  if (!costs) return false;
  *out = std::move(*costs);
  return true;
}

nlohmann::json layer_costs_to_json(const LayerCosts& costs) {
  nlohmann::json j = {{"format", kLayersFormat}};
  if (!costs.model.empty()) j["model"] = costs.model;
  if (!costs.source.empty()) j["source"] = costs.source;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& layer : costs.layers) {
    nlohmann::json l = {{"name", layer.name}, {"kind", layer_kind_name(layer.kind)}};
    for (const auto& f : kNumberFields) {
      const double v = layer.*f.member;
      // Whole numbers (bytes, mostly) as integers: 262144, not 262144.0.
      if (v == std::floor(v) && std::fabs(v) < 9e15) l[f.name] = static_cast<long long>(v);
      else l[f.name] = v;
    }
    list.push_back(std::move(l));
  }
  j["layers"] = std::move(list);
  return j;
}

namespace {

struct ByteUnit {
  const char* name;
  double bytes;
};
constexpr ByteUnit kByteUnits[] = {{"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0},
                                   {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}};

}  // namespace

std::optional<double> parse_bytes(const std::string& text, std::string* err) {
  for (const ByteUnit& u : kByteUnits) {
    const std::string unit = u.name;
    if (text.size() <= unit.size() || text.compare(text.size() - unit.size(), unit.size(), unit) != 0) continue;
    std::string number = text.substr(0, text.size() - unit.size());
    while (!number.empty() && number.back() == ' ') number.pop_back();
    if (!is_decimal(number)) break;
    const double v = std::stod(number) * u.bytes;
    if (!(v > 0) || v > 1e18) {
      *err = "'" + text + "' must be above 0 and at most 1e18 bytes";
      return std::nullopt;
    }
    return v;
  }
  *err = "'" + text + "' is not a memory size: give a number and a unit, e.g. 80GiB, 80GB, 512MiB (units: B, KiB, MiB, "
         "GiB, TiB, KB, MB, GB, TB)";
  return std::nullopt;
}

std::string bytes_text(double bytes) {
  for (const ByteUnit& u : kByteUnits) {
    if (std::string(u.name).size() != 3 && u.bytes != 1) continue;  // binary units for display
    if (bytes >= u.bytes || u.bytes == 1) {
      char text[64];
      std::snprintf(text, sizeof text, "%.4g %s", bytes / u.bytes, u.name);
      return text;
    }
  }
  return std::to_string(bytes) + " B";
}

}  // namespace zbpp
