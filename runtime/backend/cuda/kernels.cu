// CUDA kernels for the non-GEMM layers (see kernels.cuh); the flash attention is attention_flash.cu.
// One warp per row where rows are reduced (a block per row for the cross-entropy's long rows), 8
// elements a thread in the element-wise maps where alignment allows. Reductions go through warp
// shuffles in a fixed pattern and column sums through fixed row splits, so results are
// reproducible bit for bit.
#include "runtime/backend/cuda/kernels.cuh"

#include "runtime/backend/cuda/attention_flash.cuh"
#include "runtime/backend/cuda/launch.cuh"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

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

// --- encoder -------------------------------------------------------------------------------------

__global__ void encoder_forward_kernel(bf16* out, const int* tokens, const float* wte, const float* wpe, int T, int C,
                                       long n) {
  ZBPP_FOR_EACH(i, n) {
    long bt = i / C;
    int c = static_cast<int>(i % C), t = static_cast<int>(bt % T);
    out[i] = __float2bfloat16(wte[static_cast<long>(tokens[bt]) * C + c] + wpe[static_cast<long>(t) * C + c]);
  }
}

__global__ void encoder_dwpe_kernel(float* dwpe, const bf16* dout, int B, int T, int C) {
  ZBPP_FOR_EACH(i, static_cast<long>(T) * C) {
    float acc = 0;
    for (int b = 0; b < B; ++b) acc += f(dout[static_cast<long>(b) * T * C + i]);
    dwpe[i] += acc;
  }
}

// One block per distinct token, threads over channels, positions in ascending order.
__global__ void encoder_dwte_kernel(float* dwte, const bf16* dout, const int* uniq, const int* offsets,
                                    const int* positions, int C) {
  int u = blockIdx.x;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = 0;
    for (int k = offsets[u]; k < offsets[u + 1]; ++k) acc += f(dout[static_cast<long>(positions[k]) * C + c]);
    dwte[static_cast<long>(uniq[u]) * C + c] += acc;
  }
}

// --- layernorm -----------------------------------------------------------------------------------

// One warp per row.
__global__ void layernorm_forward_kernel(bf16* out, float* mean, float* rstd, const bf16* inp, const float* w,
                                         const float* b, int BT, int C) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT) return;
  const bf16* x = inp + static_cast<long>(row) * C;
  float sum = 0;
  for (int c = lane; c < C; c += 32) sum += f(x[c]);
  float m = warp_sum(sum) / C;
  float var = 0;
  for (int c = lane; c < C; c += 32) var += (f(x[c]) - m) * (f(x[c]) - m);
  float s = rsqrtf(warp_sum(var) / C + 1e-5f);
  bf16* o = out + static_cast<long>(row) * C;
  for (int c = lane; c < C; c += 32) o[c] = __float2bfloat16((f(x[c]) - m) * s * w[c] + b[c]);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

__global__ void layernorm_backward_input_kernel(bf16* dinp, const bf16* dres, const bf16* dout, const bf16* inp,
                                                const float* mean, const float* rstd, const float* w, int BT, int C) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT) return;
  long base = static_cast<long>(row) * C;
  float m = mean[row], s = rstd[row];
  float a = 0, bsum = 0;
  for (int c = lane; c < C; c += 32) {
    float norm = (f(inp[base + c]) - m) * s, dnorm = w[c] * f(dout[base + c]);
    a += dnorm;
    bsum += dnorm * norm;
  }
  a = warp_sum(a) / C;
  bsum = warp_sum(bsum) / C;
  for (int c = lane; c < C; c += 32) {
    float norm = (f(inp[base + c]) - m) * s, dnorm = w[c] * f(dout[base + c]);
    float d = (dnorm - a - norm * bsum) * s;
    if (dres) d += f(dres[base + c]);
    dinp[base + c] = __float2bfloat16(d);
  }
}

// Column partial sums: blockIdx.y picks a contiguous range of rows.
__global__ void layernorm_dw_partial_kernel(float* part_w, float* part_b, const bf16* dout, const bf16* inp,
                                            const float* mean, const float* rstd, int BT, int C) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  int rows = (BT + kColumnSplits - 1) / kColumnSplits, r0 = blockIdx.y * rows, r1 = min(BT, r0 + rows);
  float aw = 0, ab = 0;
  for (int r = r0; r < r1; ++r) {
    long i = static_cast<long>(r) * C + c;
    float d = f(dout[i]);
    aw += (f(inp[i]) - mean[r]) * rstd[r] * d;
    ab += d;
  }
  part_w[static_cast<long>(blockIdx.y) * C + c] = aw;
  part_b[static_cast<long>(blockIdx.y) * C + c] = ab;
}

__global__ void bias_partial_kernel(float* part, const bf16* dout, int BT, int OC) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= OC) return;
  int rows = (BT + kColumnSplits - 1) / kColumnSplits, r0 = blockIdx.y * rows, r1 = min(BT, r0 + rows);
  float acc = 0;
  for (int r = r0; r < r1; ++r) acc += f(dout[static_cast<long>(r) * OC + c]);
  part[static_cast<long>(blockIdx.y) * OC + c] = acc;
}

// out[c] += the kColumnSplits partials of column c, in order.
__global__ void add_partials_kernel(float* out, const float* part, int cols) {
  ZBPP_FOR_EACH(c, cols) {
    float acc = 0;
    for (int k = 0; k < kColumnSplits; ++k) acc += part[static_cast<long>(k) * cols + c];
    out[c] += acc;
  }
}

// --- elementwise ---------------------------------------------------------------------------------

__device__ inline float gelu_s() { return 0.7978845608028654f; }  // sqrt(2/pi)

// The element-wise bf16 layers as ops on floats, run by map_kernel: one formula for the 8-wide and
// the scalar path, so both give the same bits.
struct GeluForward {
  static constexpr int kInputs = 1;
  __device__ float operator()(float x, float) const {
    return 0.5f * x * (1.0f + tanhf(gelu_s() * (x + 0.044715f * x * x * x)));
  }
};
struct GeluBackward {  // (inp, dout) -> dinp
  static constexpr int kInputs = 2;
  __device__ float operator()(float x, float dout) const {
    float th = tanhf(gelu_s() * (x + 0.044715f * x * x * x));
    float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * gelu_s() * (1.0f + 3.0f * 0.044715f * x * x);
    return grad * dout;
  }
};
struct Add {
  static constexpr int kInputs = 2;
  __device__ float operator()(float a, float b) const { return a + b; }
};

// W bf16 values moved as one load or store (W = 8: 16 bytes).
template <int W>
struct alignas(2 * W) Pack {
  bf16 v[W];
};

// out[i] = op(a[i], b[i]) over `packs` packs of W elements (b unread when the op takes one input).
template <int W, typename Op>
__global__ void map_kernel(bf16* out, const bf16* a, const bf16* b, long packs, Op op) {
  using P = Pack<W>;
  ZBPP_FOR_EACH(i, packs) {
    const P x = reinterpret_cast<const P*>(a)[i];
    P y{}, o;
    if constexpr (Op::kInputs == 2) y = reinterpret_cast<const P*>(b)[i];
#pragma unroll
    for (int k = 0; k < W; ++k) o.v[k] = __float2bfloat16(op(f(x.v[k]), Op::kInputs == 2 ? f(y.v[k]) : 0.0f));
    reinterpret_cast<P*>(out)[i] = o;
  }
}

__global__ void to_bf16_kernel(bf16* out, const float* in, long n) {
  ZBPP_FOR_EACH(i, n) out[i] = __float2bfloat16(in[i]);
}

__global__ void to_float_kernel(float* out, const bf16* in, long n) {
  ZBPP_FOR_EACH(i, n) out[i] = f(in[i]);
}

// --- attention -----------------------------------------------------------------------------------
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

// --- cross-entropy -------------------------------------------------------------------------------

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

// One block per row, one pass over the row: each thread's running max and sum (8 logits a load
// where `vec`), then the warps', then the block's in warp order.
__global__ void crossentropy_forward_kernel(float* losses, float* lse, const bf16* logits, const int* targets, int V,
                                            bool vec) {
  __shared__ float part_m[kThreads / 32], part_s[kThreads / 32];
  const bf16* l = logits + static_cast<long>(blockIdx.x) * V;
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
    const float z = bm + logf(bs);
    lse[blockIdx.x] = z;
    losses[blockIdx.x] = z - f(l[targets[blockIdx.x]]);
  }
}

// One block per row: dlogits = scale * (softmax - onehot(target)), in place, 8 a load where `vec`.
__global__ void crossentropy_backward_kernel(bf16* logits, const float* lse, const int* targets, float scale, int V,
                                             bool vec) {
  bf16* l = logits + static_cast<long>(blockIdx.x) * V;
  const float z = lse[blockIdx.x];
  const int target = targets[blockIdx.x];
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

// --- optimizer -----------------------------------------------------------------------------------

// The formulas live in runtime/adamw_element.h, shared with the CPU optimizer.
__global__ void adamw_step_kernel(float* p, float* m, float* v, bf16* p16, const float* g, long n, AdamWArgs a) {
  ZBPP_FOR_EACH(i, n) {
    adamw_element_step(&p[i], &m[i], &v[i], g[i], a);
    p16[i] = __float2bfloat16(p[i]);
  }
}

__global__ void adamw_rollback_kernel(float* p, float* m, float* v, bf16* p16, const float* g, long n, AdamWArgs a) {
  ZBPP_FOR_EACH(i, n) {
    adamw_element_rollback(&p[i], &m[i], &v[i], g[i], a);
    p16[i] = __float2bfloat16(p[i]);
  }
}

// kSumPartials blocks: each sums a grid-stride share in double and reduces it in shared memory.
__global__ void sum_squares_partial_kernel(double* part, const float* g, long n) {
  __shared__ double s[kSumSquaresDoubles];
  double acc = 0;
  ZBPP_FOR_EACH(i, n) acc += static_cast<double>(g[i]) * g[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = s[0];
}

__global__ void sum_partials_kernel(double* out, const double* part) {
  double acc = 0;
  for (int k = 0; k < kSumPartials; ++k) acc += part[k];
  *out = acc;
}

}  // namespace

void encoder_forward(bf16* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C, cudaStream_t s) {
  launch(encoder_forward_launch(1L * B * T, C), s, encoder_forward_kernel, out, tokens, wte, wpe, T, C, 1L * B * T * C);
}

void encoder_backward_weight(float* dwte, float* dwpe, const bf16* dout, const int* uniq, const int* offsets,
                             const int* positions, int n_uniq, int B, int T, int C, cudaStream_t s) {
  launch(encoder_dwpe_launch(T, C), s, encoder_dwpe_kernel, dwpe, dout, B, T, C);
  if (n_uniq == 0) return;
  launch(encoder_dwte_launch(n_uniq), s, encoder_dwte_kernel, dwte, dout, uniq, offsets, positions, C);
}

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const float* w, const float* b, int BT,
                       int C, cudaStream_t s) {
  launch(layernorm_forward_launch(BT), s, layernorm_forward_kernel, out, mean, rstd, inp, w, b, BT, C);
}

void layernorm_backward_input(bf16* dinp, const bf16* dresidual, const bf16* dout, const bf16* inp, const float* mean,
                              const float* rstd, const float* w, int BT, int C, cudaStream_t s) {
  launch(layernorm_backward_input_launch(BT), s, layernorm_backward_input_kernel, dinp, dresidual, dout, inp, mean,
         rstd, w, BT, C);
}

void layernorm_backward_weight(float* dw, float* db, float* scratch, const bf16* dout, const bf16* inp,
                               const float* mean, const float* rstd, int BT, int C, cudaStream_t s) {
  float* part_w = scratch;
  float* part_b = scratch + static_cast<long>(kColumnSplits) * C;
  launch(layernorm_dw_partial_launch(C), s, layernorm_dw_partial_kernel, part_w, part_b, dout, inp, mean, rstd, BT, C);
  launch(add_partials_launch(C), s, add_partials_kernel, dw, static_cast<const float*>(part_w), C);
  launch(add_partials_launch(C), s, add_partials_kernel, db, static_cast<const float*>(part_b), C);
}

void bias_backward(float* db, float* scratch, const bf16* dout, int BT, int OC, cudaStream_t s) {
  launch(bias_partial_launch(OC), s, bias_partial_kernel, scratch, dout, BT, OC);
  launch(add_partials_launch(OC), s, add_partials_kernel, db, static_cast<const float*>(scratch), OC);
}

namespace {
bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// 8 elements a thread where n and every pointer allow 16-byte accesses, else one.
template <typename Op>
void map(const char* kernel, bf16* out, const bf16* a, const bf16* b, long n, cudaStream_t s) {
  const bool vec = map_vectorised(n) && aligned16(out) && aligned16(a) && (Op::kInputs == 1 || aligned16(b));
  if (vec) launch(map_launch(kernel, n, true), s, map_kernel<8, Op>, out, a, b, n / 8, Op{});
  else launch(map_launch(kernel, n, false), s, map_kernel<1, Op>, out, a, b, n, Op{});
}
}  // namespace

void gelu_forward(bf16* out, const bf16* inp, long n, cudaStream_t s) {
  map<GeluForward>("gelu_forward_kernel", out, inp, nullptr, n, s);
}

void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, long n, cudaStream_t s) {
  map<GeluBackward>("gelu_backward_kernel", dinp, inp, dout, n, s);
}

void add(bf16* out, const bf16* a, const bf16* b, long n, cudaStream_t s) {
  map<Add>("add_kernel", out, a, b, n, s);
}

void to_bf16(bf16* out, const float* in, long n, cudaStream_t s) {
  launch(elementwise_launch("to_bf16_kernel", n), s, to_bf16_kernel, out, in, n);
}

void to_float(float* out, const bf16* in, long n, cudaStream_t s) {
  launch(elementwise_launch("to_float_kernel", n), s, to_float_kernel, out, in, n);
}

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

void crossentropy_forward(float* losses, float* lse, const bf16* logits, const int* targets, int BT, int V,
                          cudaStream_t s) {
  const bool vec = V % 8 == 0 && aligned16(logits);
  launch(crossentropy_forward_launch(BT), s, crossentropy_forward_kernel, losses, lse, logits, targets, V, vec);
}

void crossentropy_backward(bf16* logits, const float* lse, const int* targets, float scale, int BT, int V,
                           cudaStream_t s) {
  const bool vec = V % 8 == 0 && aligned16(logits);
  launch(crossentropy_backward_launch(BT), s, crossentropy_backward_kernel, logits, lse, targets, scale, V, vec);
}

void adamw_step(float* p, float* m, float* v, bf16* p16, const float* g, long n, const AdamWArgs& a, cudaStream_t s) {
  launch(elementwise_launch("adamw_step_kernel", n), s, adamw_step_kernel, p, m, v, p16, g, n, a);
}

void adamw_rollback(float* p, float* m, float* v, bf16* p16, const float* g, long n, const AdamWArgs& a,
                    cudaStream_t s) {
  launch(elementwise_launch("adamw_rollback_kernel", n), s, adamw_rollback_kernel, p, m, v, p16, g, n, a);
}

void sum_squares(double* out, double* scratch, const float* g, long n, cudaStream_t s) {
  launch(sum_squares_partial_launch(), s, sum_squares_partial_kernel, scratch, g, n);
  launch(sum_partials_launch(), s, sum_partials_kernel, out, static_cast<const double*>(scratch));
}

}  // namespace zbpp::cuda
