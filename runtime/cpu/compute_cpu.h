// The CPU reference backend: fp32 GPT chunks, GEMMs through OpenBLAS (runtime/cpu/layers.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/compute.h"
#include "runtime/model.h"
#include "runtime/optimizer.h"

namespace zbpp {

/// Threads OpenBLAS may use for each of the CPU backend's GEMMs, for the whole process (default 1).
/// The bits of every result are the same for any count.
void cpu_set_threads(int threads);

/// Runs the virtual stages `virtual_stages` (one per chunk, in chunk order) of a model with
/// `total_virtual_stages` virtual stages, for `microbatches` microbatches per step.
std::unique_ptr<Compute> make_cpu_compute(const GptConfig& config, const std::vector<int>& virtual_stages,
                                          int total_virtual_stages, int microbatches, std::uint64_t seed,
                                          const AdamWConfig& adamw);

}  // namespace zbpp
