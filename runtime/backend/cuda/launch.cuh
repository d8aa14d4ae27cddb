// How kernels_*.cu and attention_flash.cu launch: every launch goes through launch() with its
// launch_config.h configuration, so the launch audit checks exactly what runs; over 48 KiB of
// dynamic shared memory the kernel is opted in first; a failed launch throws naming the kernel.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "runtime/backend/cuda/launch_config.h"

namespace zbpp::cuda {

inline dim3 dims(const Dim& d) {
  return dim3(static_cast<unsigned>(d.x), static_cast<unsigned>(d.y), static_cast<unsigned>(d.z));
}

template <typename Kernel, typename... Args>
void launch(const LaunchConfig& c, cudaStream_t s, Kernel kernel, Args... args) {
  prepare_launch(c, [&](long bytes) {
    cudaError_t rc = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (rc != cudaSuccess)
      throw std::runtime_error(std::string("cudaFuncSetAttribute (") + c.kernel + ", " + std::to_string(bytes) +
                               " bytes of shared memory): " + cudaGetErrorString(rc));
  });
  kernel<<<dims(c.grid), dims(c.block), static_cast<size_t>(c.dynamic_shared), s>>>(args...);
  cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess) throw std::runtime_error(std::string("launch of ") + c.kernel + ": " + cudaGetErrorString(rc));
}

}  // namespace zbpp::cuda
