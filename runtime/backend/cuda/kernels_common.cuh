// What the kernel files (kernels_*.cu) share: the grid-stride loop, bf16 -> float, the warp
// reductions and the 16-byte packs of the element-wise and cross-entropy kernels.
//
// One warp per row where rows are reduced (a block per row for the cross-entropy's long rows), 8
// elements a load in the element-wise maps, the LayerNorm rows and the cross-entropy where
// alignment allows. Reductions go through warp
// shuffles in a fixed pattern and column sums through fixed row splits, so results are
// reproducible bit for bit.
#pragma once

#include <cstdint>

#include "runtime/backend/cuda/kernels.cuh"

namespace zbpp::cuda {

namespace {

// Grid-stride loop over [0, n): elementwise_launch caps the grid at the x limit.
#define ZBPP_FOR_EACH(i, n)                                                         \
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<long>(gridDim.x) * blockDim.x)

__device__ inline float f(bf16 x) { return __bfloat162float(x); }

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// W bf16 values moved as one load or store (W = 8: 16 bytes).
template <int W>
struct alignas(2 * W) Pack {
  bf16 v[W];
};

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

}  // namespace zbpp::cuda
