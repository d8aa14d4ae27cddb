// Layer costs and the partition of a model's layers into virtual stages. A layer-cost file
// (schema/layers.schema.json) says what each layer costs; a partition gives every virtual stage a
// contiguous range of layers, and from it follow the problem's per-stage times and memory (sums of
// its layers). The schedule file records the layers and the partition ("partition"), so a reader
// recomputes the problem's per-stage figures and the bound over all partitions from them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/diag.h"
#include "core/problem.h"
#include "core/ticks.h"

namespace zbpp {

/// What a layer is, as zbrun's GPT has them: zbrun runs a partition whose layers are an embedding,
/// blocks and a head, in that order.
enum class LayerKind { kEmbedding, kBlock, kHead, kOther };
const char* layer_kind_name(LayerKind kind);

/// One layer's costs for one microbatch: times in the problem's time unit (ms), memory in bytes.
struct LayerCost {
  std::string name;
  LayerKind kind = LayerKind::kOther;
  double t_f = 0, t_b = 0, t_w = 0;
  double activation_bytes = 0;    ///< held from F until B (M_B)
  double activation_bytes_w = 0;  ///< held from B until W (M_W)
  double parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0;
  double output_bytes = 0;        ///< sent forward at a boundary after this layer
  double static_bytes() const { return parameter_bytes + gradient_bytes + optimizer_bytes; }
};

/// The most layers a layer-cost file may list.
inline constexpr int kMaxLayers = 100'000;

struct LayerCosts {
  std::vector<LayerCost> layers;
  std::string model;   ///< the model they are of (zbrun's name for it), or empty
  std::string source;  ///< how they were measured, or empty
};

/// The memory unit of a problem made from layer costs: MiB (a quantum is 1e-6 MiB, about a byte).
inline constexpr double kBytesPerMemUnit = 1024.0 * 1024.0;
inline constexpr const char* kMemUnitName = "MiB";

/// Reads a layer-cost object; every wrong field is reported with its JSON pointer under `pointer`.
std::optional<LayerCosts> layer_costs_from_json(const nlohmann::json& j, const std::string& file,
                                                const std::string& pointer, std::vector<Diag>* diags);
bool load_layer_costs(const std::string& path, LayerCosts* out, std::vector<Diag>* diags);
/// The same object back, exactly (every number as read).
nlohmann::json layer_costs_to_json(const LayerCosts& costs);

/// Parses a device memory: "80GiB", "80GB", "512MiB", "1.5TiB", "4096B" (a unit is required: KiB,
/// MiB, GiB, TiB or KB, MB, GB, TB or B). Returns bytes, or nothing with *err set.
std::optional<double> parse_bytes(const std::string& text, std::string* err);
/// Bytes as people read them: "80 GiB", "1.5 GiB", "512 MiB", "100 B".
std::string bytes_text(double bytes);

}  // namespace zbpp
