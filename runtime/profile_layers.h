// zbrun --profile-layers: measures each layer kind of the GPT model (embedding, one transformer
// block, head) on its own through the Compute interface and writes the layer-cost file of
// schema/layers.schema.json, the input of `zbplan plan --layers`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/layers.h"  // LayerCost, LayerCosts
#include "runtime/compute.h"
#include "runtime/model.h"

namespace zbpp {

/// Bytes a backend keeps per parameter value (weights, gradients, optimizer state) and per
/// activation value sent between stages: what turns tensor sizes into the file's static bytes.
struct BackendBytes {
  double parameter = 4, gradient = 4, optimizer = 8, activation = 4;  // the CPU backend: all fp32
};

struct ProfileLayersOptions {
  Backend backend = Backend::kCpu;
  int repeats = 5;              ///< timed runs after one warm-up; the median is kept
  std::uint64_t seed = 1;
  /// cuda: measure on one of this many equal SM partitions (green contexts), what each stage of a
  /// zbrun --single-gpu run with that many stages gets; 0 or 1: the whole GPU.
  int sm_parts = 0;
};

/// `model` cut to what is measured: one block, on 3 virtual stages split {0, 1, 0}, so virtual
/// stage 0 embeds only, 1 runs the block and 2 runs the head only.
GptConfig one_block_model(const GptConfig& model);

/// Measures the three kinds through `compute`, which must hold virtual stages {0, 1, 2} of
/// one_block_model(...) (`model`) for one microbatch: F, B and W of each chunk in turn, as a step
/// would run them, one warm-up then `repeats` times, medians kept. Returns embedding, block, head
/// (named so, times rounded to 1e-6 ms and bytes to whole bytes: what the file holds).
std::vector<LayerCost> measure_layer_kinds(Compute& compute, const GptConfig& model, int repeats,
                                           const BackendBytes& bytes);

/// Builds the backend's compute for one_block_model(model) and measures it. std::nullopt with
/// *err saying why when the backend cannot run here (no GPU, built without CUDA).
std::optional<std::vector<LayerCost>> profile_layer_kinds(const GptConfig& model, const ProfileLayersOptions& o,
                                                          std::string* err);

/// The model's layer costs: "embedding", "h0".."h{L-1}" (every block the measured one), "head".
LayerCosts model_layer_costs(const GptConfig& model, const std::vector<LayerCost>& kinds, const std::string& source);

}  // namespace zbpp
