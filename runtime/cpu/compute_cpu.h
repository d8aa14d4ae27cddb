// The CPU reference backend: fp32 GPT chunks on plain loops (runtime/cpu/layers.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/compute.h"
#include "runtime/model.h"
#include "runtime/optimizer.h"

namespace zbpp {

/// Runs the virtual stages `virtual_stages` (one per chunk, in chunk order) of a model with
/// `total_virtual_stages` virtual stages, for `microbatches` microbatches per step.
std::unique_ptr<Compute> make_cpu_compute(const GptConfig& config, const std::vector<int>& virtual_stages,
                                          int total_virtual_stages, int microbatches, std::uint64_t seed,
                                          const AdamWConfig& adamw);

}  // namespace zbpp
