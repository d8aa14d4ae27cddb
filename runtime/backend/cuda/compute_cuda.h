// The CUDA backend: the same GPT chunks as the CPU reference (runtime/backend/cpu/compute_cpu.h) with bf16
// activations and weights, fp32 master weights, fp32 gradients and AdamW state. Linear layers go
// through cuBLASLt (gemm_lt.h), the rest through kernels.cuh. Activations travel as device buffers
// (runtime/payload.h, device_buffers.h), so it needs a CUDA transport (transport/device.h,
// transport/nccl.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/compute.h"
#include "runtime/model.h"
#include "runtime/optimizer.h"

namespace zbpp {

/// Where a rank's backend runs. Construct the backend in the thread that will drive it, after
/// that thread has selected the device (cudaSetDevice) or entered its green context.
struct CudaStage {
  int device = 0;
  cudaStream_t stream = nullptr;  ///< its ops' stream, owned by the caller; null: the backend makes one
  int sm_count = 0;               ///< SMs of its partition, passed to cuBLASLt (0: the whole GPU)
};

std::unique_ptr<Compute> make_cuda_compute(const GptConfig& config, const std::vector<int>& virtual_stages,
                                           int total_virtual_stages, int microbatches, std::uint64_t seed,
                                           const AdamWConfig& adamw, const CudaStage& stage);

/// GPUs this process can use. 0 with *why empty where there is no GPU (no driver, or no device);
/// 0 with *why saying what is wrong where a driver is installed but CUDA cannot use it (e.g. a
/// driver too old for the CUDA this was built with): callers must report that, not skip.
int cuda_device_count(std::string* why);

/// Bytes of one activation on the GPU (bf16, tokens x channels).
size_t cuda_activation_bytes(const GptConfig& config);
/// A device buffer of `bytes` of fresh memory, for zbrun's T_comm ping-pong, made on `stream`
/// (the rank's own: cudaStreamPerThread is not valid inside a green context); release_payload
/// frees one that came back, on the same rank's stream.
Payload make_payload(size_t bytes, cudaStream_t stream);
void release_payload(const Payload& payload, cudaStream_t stream);

}  // namespace zbpp
