// The softmax cross-entropy of the LM head (cpu crossentropy_forward and _backward in one kernel):
// the loss of each row, and the logits overwritten with their gradient.
#include "runtime/backend/cuda/kernels.cuh"

#include <cmath>
#include "runtime/backend/cuda/kernels_common.cuh"
#include "runtime/backend/cuda/launch.cuh"

namespace zbpp::cuda {

namespace {

// The running (max, sum of exp(x - max)) of a softmax row: merged in a fixed pattern, each merge
// commutative (max, and one addition), so every lane of a shuffle tree gets the same bits.
__device__ inline void softmax_merge(float* m, float* s, float m2, float s2) {
  if (m2 == -INFINITY) return;
  if (*m == -INFINITY) {
    *m = m2, *s = s2;
    return;
  }
  const float mx = fmaxf(*m, m2);
  *s = *s * expf(*m - mx) + s2 * expf(m2 - mx);
  *m = mx;
}

// One block per row (the classifier fused, as llm.c's): a pass for the row's running max and sum
// (each thread's, 8 logits a load where `vec`, then the warps', then the block's in warp order),
// then a pass that overwrites the logits with scale * (softmax - onehot(target)). So F leaves B
// the logits' gradient, and the logits are read twice, not three times in two kernels.
__global__ void crossentropy_kernel(float* losses, bf16* logits, const int* targets, float scale, int V, bool vec) {
  __shared__ float part_m[kThreads / 32], part_s[kThreads / 32];
  __shared__ float row_lse;
  bf16* l = logits + static_cast<long>(blockIdx.x) * V;
  const int target = targets[blockIdx.x];
  float m = -INFINITY, s = 0.0f;
  if (vec) {
    for (int i = threadIdx.x; i < V / 8; i += blockDim.x) {
      const Pack<8> p = reinterpret_cast<const Pack<8>*>(l)[i];
      float mx = -INFINITY;
#pragma unroll
      for (int k = 0; k < 8; ++k) mx = fmaxf(mx, f(p.v[k]));
      float sum = 0.0f;
#pragma unroll
      for (int k = 0; k < 8; ++k) sum += expf(f(p.v[k]) - mx);
      softmax_merge(&m, &s, mx, sum);
    }
  } else {
    for (int v = threadIdx.x; v < V; v += blockDim.x) softmax_merge(&m, &s, f(l[v]), 1.0f);
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    softmax_merge(&m, &s, m2, s2);
  }
  if (threadIdx.x % 32 == 0) part_m[threadIdx.x / 32] = m, part_s[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float bm = part_m[0], bs = part_s[0];
    for (int w = 1; w < kThreads / 32; ++w) softmax_merge(&bm, &bs, part_m[w], part_s[w]);
    row_lse = bm + logf(bs);
    losses[blockIdx.x] = row_lse - f(l[target]);  // read before the pass below overwrites it
  }
  __syncthreads();
  const float z = row_lse;
  auto grad = [&](float x, int v) { return __float2bfloat16(scale * (expf(x - z) - (v == target ? 1.0f : 0.0f))); };
  if (vec) {
    for (int i = threadIdx.x; i < V / 8; i += blockDim.x) {
      Pack<8> p = reinterpret_cast<const Pack<8>*>(l)[i];
#pragma unroll
      for (int k = 0; k < 8; ++k) p.v[k] = grad(f(p.v[k]), 8 * i + k);
      reinterpret_cast<Pack<8>*>(l)[i] = p;
    }
  } else {
    for (int v = threadIdx.x; v < V; v += blockDim.x) l[v] = grad(f(l[v]), v);
  }
}

}  // namespace

void crossentropy(float* losses, bf16* logits, const int* targets, float scale, int BT, int V, cudaStream_t s) {
  const bool vec = V % 8 == 0 && aligned16(logits);
  launch(crossentropy_launch(BT), s, crossentropy_kernel, losses, logits, targets, scale, V, vec);
}

}  // namespace zbpp::cuda
