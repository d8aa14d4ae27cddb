// zbrun --profile-layers: measures each layer kind of the GPT model (embedding, one transformer
// block, head) on its own through the Compute interface and writes the layer-cost file of
// schema/layers.schema.json, the input of `zbplan plan --layers`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/compute.h"
#include "runtime/model.h"

namespace zbpp {

/// What one layer costs per microbatch: times in ms, memory in bytes (the schema's fields).
struct LayerCost {
  std::string kind;  ///< "embedding", "block" or "head"
  double t_f = 0, t_b = 0, t_w = 0;
  double activation_bytes = 0, activation_bytes_w = 0;
  double parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0, output_bytes = 0;
};

/// Bytes a backend keeps per parameter value (weights, gradients, optimizer state) and per
/// activation value sent between stages: what turns tensor sizes into the file's static bytes.
struct BackendBytes {
  double parameter = 4, gradient = 4, optimizer = 8, activation = 4;  // the CPU backend: all fp32
};

struct ProfileLayersOptions {
  std::string backend = "cpu";  ///< "cpu" or "cuda"
  int repeats = 5;              ///< timed runs after one warm-up; the median is kept
  std::uint64_t seed = 1;
};

/// `model` cut to what is measured: one block, on 3 virtual stages split {0, 1, 0}, so virtual
/// stage 0 embeds only, 1 runs the block and 2 runs the head only.
GptConfig one_block_model(const GptConfig& model);

/// Measures the three kinds through `compute`, which must hold virtual stages {0, 1, 2} of
/// one_block_model(...) (`model`) for one microbatch: F, B and W of each chunk in turn, as a step
/// would run them, one warm-up then `repeats` times, medians kept. Returns embedding, block, head.
std::vector<LayerCost> measure_layer_kinds(Compute& compute, const GptConfig& model, int repeats,
                                           const BackendBytes& bytes);

/// Builds the backend's compute for one_block_model(model) and measures it. std::nullopt with
/// *err saying why when the backend cannot run here (no GPU, built without CUDA).
std::optional<std::vector<LayerCost>> profile_layer_kinds(const GptConfig& model, const ProfileLayersOptions& o,
                                                          std::string* err);

/// The layer-cost file: "embedding", "h0".."h{L-1}" (every block the measured one), "head".
nlohmann::ordered_json layers_file(const GptConfig& model, const std::vector<LayerCost>& kinds, const std::string& source);

}  // namespace zbpp
