// The attention's row kernels (cpu attention_*; AttentionVariant kWarp and kLane), and the
// launchers that pick them or the tensor-core ones (attention_flash.cu).
#include "runtime/backend/cuda/kernels.cuh"

#include <cmath>
#include <cstdlib>

#include "runtime/backend/cuda/attention_flash.cuh"
#include "runtime/backend/cuda/kernels_common.cuh"
#include "runtime/backend/cuda/launch.cuh"

namespace zbpp::cuda {

namespace {

// Rows are (b, h, t) in that order: row = (b * NH + h) * T + t. One warp per row; the row's
// scores live in shared memory (T floats per warp, 2T in the key-side backward).

struct Att {
  const bf16* qkv;
  int T, C, NH, hs;
  float scale;
  __device__ const bf16* q(int b, int t, int h) const { return qkv + (static_cast<long>(b) * T + t) * 3 * C + h * hs; }
  __device__ const bf16* k(int b, int t, int h) const { return q(b, t, h) + C; }
  __device__ const bf16* v(int b, int t, int h) const { return q(b, t, h) + 2 * C; }
  __device__ long o(int b, int t, int h) const { return (static_cast<long>(b) * T + t) * C + h * hs; }
};

__device__ inline float dot(const bf16* a, const bf16* b, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += f(a[i]) * f(b[i]);
  return acc;
}

// The same dot product by the whole warp: lane l sums channels l, l + 32, ... (adjacent lanes read
// adjacent channels, so each load is one coalesced access), then a fixed shuffle tree. Every lane
// gets the result.
__device__ inline float warp_dot(const bf16* a, const bf16* b, int n, int lane) {
  float acc = 0;
  for (int i = lane; i < n; i += 32) acc += f(a[i]) * f(b[i]);
  return warp_sum(acc);
}

// The row kernels' score loops come in two variants (AttentionVariant, launch_config.h). kLane:
// lane l takes the rows l, l + 32, ... and reads each one's channels alone, so the 32 loads of a
// warp touch 32 rows; kWarp: the warp takes one row at a time with warp_dot. Both are fixed-order,
// so each gives the same bits every run; they round differently from each other. A loop over rows
// j from `from` is `for (j = first(from, lane); j < end; j += kStep)`; the lane that owns row j
// (owns(j, lane)) stores what the loop found for it.
template <AttentionVariant kScores>
struct ScoreLoop {
  static constexpr bool kWarp = kScores == AttentionVariant::kWarp;
  static constexpr int kStep = kWarp ? 1 : 32;
  __device__ static int first(int from, int lane) { return kWarp ? from : from + lane; }
  __device__ static bool owns(int j, int lane) { return !kWarp || lane == j % 32; }
  __device__ static float dot(const bf16* a, const bf16* b, int n, int lane) {
    return kWarp ? warp_dot(a, b, n, lane) : ::zbpp::cuda::dot(a, b, n);
  }
};

template <AttentionVariant kScores>
__global__ void attention_forward_kernel(bf16* out, float* lse, Att a, int rows) {
  extern __shared__ float smem[];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int row = blockIdx.x * (blockDim.x / 32) + warp;
  if (row >= rows) return;
  int t = row % a.T, h = (row / a.T) % a.NH, b = row / (a.T * a.NH);
  float* sc = smem + static_cast<long>(warp) * a.T;
  const bf16* q = a.q(b, t, h);
  using L = ScoreLoop<kScores>;
  float mx = -INFINITY;
  for (int j = L::first(0, lane); j <= t; j += L::kStep) {
    float s = L::dot(q, a.k(b, j, h), a.hs, lane) * a.scale;
    if (L::owns(j, lane)) sc[j] = s;  // lane j % 32 also reads sc[j] next
    mx = fmaxf(mx, s);
  }
  mx = warp_max(mx);
  float sum = 0;
  for (int j = lane; j <= t; j += 32) {
    float e = expf(sc[j] - mx);
    sc[j] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  __syncwarp();
  for (int d = lane; d < a.hs; d += 32) {
    float acc = 0;
    for (int j = 0; j <= t; ++j) acc += sc[j] * f(a.v(b, j, h)[d]);
    out[a.o(b, t, h) + d] = __float2bfloat16(acc / sum);
  }
  if (lane == 0) lse[row] = mx + logf(sum);
}

// delta[row] = dout . out over the head's channels (D in the flash-attention backward).
__global__ void attention_delta_kernel(float* delta, const bf16* dout, const bf16* out, Att a, int rows) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  int t = row % a.T, h = (row / a.T) % a.NH, b = row / (a.T * a.NH);
  long o = a.o(b, t, h);
  float acc = 0;
  for (int d = lane; d < a.hs; d += 32) acc += f(dout[o + d]) * f(out[o + d]);
  acc = warp_sum(acc);
  if (lane == 0) delta[row] = acc;
}

// dS[t][j] = P[t][j] * (dout_t . v_j - delta_t); dq_t = scale * sum_j dS[t][j] k_j. One warp per query row.
template <AttentionVariant kScores>
__global__ void attention_dq_kernel(bf16* dqkv, const float* delta, const bf16* dout, const float* lse, Att a, int rows) {
  extern __shared__ float smem[];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int row = blockIdx.x * (blockDim.x / 32) + warp;
  if (row >= rows) return;
  int t = row % a.T, h = (row / a.T) % a.NH, b = row / (a.T * a.NH);
  float* ds = smem + static_cast<long>(warp) * a.T;
  const bf16* q = a.q(b, t, h);
  const bf16* dt = dout + a.o(b, t, h);
  using L = ScoreLoop<kScores>;
  for (int j = L::first(0, lane); j <= t; j += L::kStep) {
    float p = expf(L::dot(q, a.k(b, j, h), a.hs, lane) * a.scale - lse[row]);
    float d = p * (L::dot(dt, a.v(b, j, h), a.hs, lane) - delta[row]);
    if (L::owns(j, lane)) ds[j] = d;
  }
  __syncwarp();
  bf16* dq = dqkv + (static_cast<long>(b) * a.T + t) * 3 * a.C + h * a.hs;
  for (int d = lane; d < a.hs; d += 32) {
    float acc = 0;
    for (int j = 0; j <= t; ++j) acc += ds[j] * f(a.k(b, j, h)[d]);
    dq[d] = __float2bfloat16(acc * a.scale);
  }
}

// dv_j = sum_{i>=j} P[i][j] dout_i; dk_j = scale * sum_{i>=j} dS[i][j] q_i. One warp per key row j.
template <AttentionVariant kScores>
__global__ void attention_dkv_kernel(bf16* dqkv, const float* delta, const bf16* dout, const float* lse, Att a, int rows) {
  extern __shared__ float smem[];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int row = blockIdx.x * (blockDim.x / 32) + warp;
  if (row >= rows) return;
  int j = row % a.T, h = (row / a.T) % a.NH, b = row / (a.T * a.NH);
  long head_row0 = row - j;  // row index of (b, h, 0)
  float* ps = smem + static_cast<long>(warp) * 2 * a.T;
  float* ds = ps + a.T;
  const bf16* k = a.k(b, j, h);
  const bf16* v = a.v(b, j, h);
  using L = ScoreLoop<kScores>;
  for (int i = L::first(j, lane); i < a.T; i += L::kStep) {
    float p = expf(L::dot(a.q(b, i, h), k, a.hs, lane) * a.scale - lse[head_row0 + i]);
    if (L::owns(i, lane)) ps[i] = p;
    float d = p * (L::dot(dout + a.o(b, i, h), v, a.hs, lane) - delta[head_row0 + i]);
    if (L::owns(i, lane)) ds[i] = d;
  }
  __syncwarp();
  bf16* dk = dqkv + (static_cast<long>(b) * a.T + j) * 3 * a.C + a.C + h * a.hs;
  bf16* dv = dk + a.C;
  for (int d = lane; d < a.hs; d += 32) {
    float accv = 0, acck = 0;
    for (int i = j; i < a.T; ++i) {
      accv += ps[i] * f(dout[a.o(b, i, h) + d]);
      acck += ds[i] * f(a.q(b, i, h)[d]);
    }
    dv[d] = __float2bfloat16(accv);
    dk[d] = __float2bfloat16(acck * a.scale);
  }
}

}  // namespace

AttentionVariant attention_variant_from_env(int head_size) {
  return attention_variant_from(std::getenv("ZBPP_CUDA_ATTENTION"), head_size);
}

template <AttentionVariant kScores>
void launch_attention_forward(bf16* out, float* lse, const Att& a, int rows, cudaStream_t s) {
  launch(attention_forward_launch(a.T, rows), s, attention_forward_kernel<kScores>, out, lse, a, rows);
}

template <AttentionVariant kScores>
void launch_attention_dq_dkv(bf16* dqkv, const float* delta, const bf16* dout, const float* lse, const Att& a, int rows,
                             cudaStream_t s) {
  launch(attention_dq_launch(a.T, rows), s, attention_dq_kernel<kScores>, dqkv, delta, dout, lse, a, rows);
  launch(attention_dkv_launch(a.T, rows), s, attention_dkv_kernel<kScores>, dqkv, delta, dout, lse, a, rows);
}

void attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH, cudaStream_t s,
                       AttentionVariant variant) {
  int hs = C / NH;
  Att a{qkv, T, C, NH, hs, 1.0f / std::sqrt(static_cast<float>(hs))};
  int rows = B * NH * T;
  switch (variant) {
    case AttentionVariant::kFlash: flash_attention_forward(out, lse, qkv, B, T, C, NH, a.scale, s); break;
    case AttentionVariant::kWarp: launch_attention_forward<AttentionVariant::kWarp>(out, lse, a, rows, s); break;
    case AttentionVariant::kLane: launch_attention_forward<AttentionVariant::kLane>(out, lse, a, rows, s); break;
  }
}

void attention_backward(bf16* dqkv, float* scratch, const bf16* dout, const bf16* out, const bf16* qkv,
                        const float* lse, int B, int T, int C, int NH, cudaStream_t s, AttentionVariant variant) {
  int hs = C / NH;
  Att a{qkv, T, C, NH, hs, 1.0f / std::sqrt(static_cast<float>(hs))};
  int rows = B * NH * T;
  // The flash dQ accumulator first (it needs WMMA's alignment), then delta.
  float* dq_acc = scratch;
  float* delta = scratch + (attention_backward_scratch_floats(B, T, C, NH, variant) - rows);
  launch(attention_delta_launch(rows), s, attention_delta_kernel, delta, dout, out, a, rows);
  const float* d = delta;
  switch (variant) {
    case AttentionVariant::kFlash: flash_attention_backward(dqkv, dq_acc, d, dout, qkv, lse, B, T, C, NH, a.scale, s); break;
    case AttentionVariant::kWarp: launch_attention_dq_dkv<AttentionVariant::kWarp>(dqkv, d, dout, lse, a, rows, s); break;
    case AttentionVariant::kLane: launch_attention_dq_dkv<AttentionVariant::kLane>(dqkv, d, dout, lse, a, rows, s); break;
  }
}

}  // namespace zbpp::cuda
