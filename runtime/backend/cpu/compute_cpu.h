// The CPU reference backend: fp32 GPT chunks, GEMMs through OpenBLAS (runtime/backend/cpu/layers.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/compute.h"
#include "runtime/model.h"
#include "runtime/optimizer.h"

namespace zbpp {

/// Threads that share the CPU backend's GEMM tiles and attention heads, for the whole process
/// (default 1; OpenBLAS itself always runs single-threaded). The bits of every result are the same
/// for any count, by construction (backend/cpu/gemm.h).
void cpu_set_threads(int threads);
/// The GEMM kernels OpenBLAS picked for this CPU ("OpenBLAS SkylakeX kernels"). The bits of a run
/// depend on them: another CPU (or OPENBLAS_CORETYPE) can give another weights digest, while the
/// schedule and the thread count never do.
std::string cpu_kernels();
/// OpenBLAS 0.3.21 does not recognise some CPU models (virtual machines that report a generic
/// "Intel Xeon Processor") and falls back to its Prescott (SSE3) kernels, 4x slower here than its
/// AVX-512 ones. Where that happened and OPENBLAS_CORETYPE is unset, this restarts the program
/// (execv of /proc/self/exe with `argv`) with OPENBLAS_CORETYPE set to the core the CPU's
/// instruction set allows (SkylakeX with AVX-512, Haswell with AVX2 and FMA); OpenBLAS picks its
/// kernels when it loads, so nothing less than a fresh start changes them. Call it first in main:
/// it returns when no restart is needed (or the exec failed, and the program goes on as it is).
void cpu_restart_with_faster_kernels(char** argv);

/// Runs the virtual stages `virtual_stages` (one per chunk, in chunk order) of a model with
/// `total_virtual_stages` virtual stages, for `microbatches` microbatches per step.
std::unique_ptr<Compute> make_cpu_compute(const GptConfig& config, const std::vector<int>& virtual_stages,
                                          int total_virtual_stages, int microbatches, std::uint64_t seed,
                                          const AdamWConfig& adamw);

}  // namespace zbpp
