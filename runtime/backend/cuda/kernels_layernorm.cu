// LayerNorm (cpu layernorm_*) and the linear layers' bias gradient (cpu matmul_backward_weight's
// dbias; their GEMMs are cuBLASLt's): column sums in fixed row splits.
#include "runtime/backend/cuda/kernels.cuh"

#include "runtime/backend/cuda/kernels_common.cuh"
#include "runtime/backend/cuda/launch.cuh"

namespace zbpp::cuda {

namespace {

// A row is read in groups of 8 contiguous elements: lane l takes groups l, l + 32, ... and sums
// its elements in order, with one 16-byte load a group where `vec` (C a multiple of 8, rows
// 16-byte aligned), else 8 scalar loads (fewer at the row's end). The order of the sums does not
// depend on `vec`, so neither do the bits.
__device__ inline int load8(const bf16* row, int g, int C, bool vec, float* v) {
  const int c0 = 8 * g, n = min(8, C - c0);
  if (vec) {
    const Pack<8> p = reinterpret_cast<const Pack<8>*>(row)[g];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = f(p.v[k]);
  } else {
    for (int k = 0; k < n; ++k) v[k] = f(row[c0 + k]);
  }
  return n;
}

__device__ inline void store8(bf16* row, int g, int C, bool vec, const float* v) {
  const int c0 = 8 * g, n = min(8, C - c0);
  if (vec) {
    Pack<8> p;
#pragma unroll
    for (int k = 0; k < 8; ++k) p.v[k] = __float2bfloat16(v[k]);
    reinterpret_cast<Pack<8>*>(row)[g] = p;
  } else {
    for (int k = 0; k < n; ++k) row[c0 + k] = __float2bfloat16(v[k]);
  }
}

// The statistics and output of one row x (one warp), shared by the plain and the fused forward.
__device__ inline void normalise_row(bf16* out, float* mean, float* rstd, const bf16* x, const float* w,
                                     const float* b, int row, int lane, int C, bool vec) {
  const int groups = (C + 7) / 8;
  float v[8], sum = 0;
  for (int g = lane; g < groups; g += 32) {
    const int n = load8(x, g, C, vec, v);
    for (int k = 0; k < n; ++k) sum += v[k];
  }
  const float m = warp_sum(sum) / C;
  float var = 0;
  for (int g = lane; g < groups; g += 32) {
    const int n = load8(x, g, C, vec, v);
    for (int k = 0; k < n; ++k) var += (v[k] - m) * (v[k] - m);
  }
  const float s = rsqrtf(warp_sum(var) / C + 1e-5f);
  for (int g = lane; g < groups; g += 32) {
    const int n = load8(x, g, C, vec, v);
    for (int k = 0; k < n; ++k) v[k] = (v[k] - m) * s * w[8 * g + k] + b[8 * g + k];
    store8(out, g, C, vec, v);
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// One warp per row.
__global__ void layernorm_forward_kernel(bf16* out, float* mean, float* rstd, const bf16* inp, const float* w,
                                         const float* b, int BT, int C, bool vec) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT) return;
  const long base = static_cast<long>(row) * C;
  normalise_row(out + base, mean, rstd, inp + base, w, b, row, lane, C, vec);
}

// The residual add before a LayerNorm, in the same pass: sum = bf16(a + b) is written (the block
// keeps it), then normalised as layernorm_forward_kernel normalises it, each lane reading back
// only the groups it wrote: both outputs have the bits of add then layernorm_forward.
__global__ void add_layernorm_forward_kernel(bf16* sum, bf16* out, float* mean, float* rstd, const bf16* a,
                                             const bf16* b, const float* w, const float* bias, int BT, int C,
                                             bool vec) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT) return;
  const long base = static_cast<long>(row) * C;
  const int groups = (C + 7) / 8;
  float va[8], vb[8];
  for (int g = lane; g < groups; g += 32) {
    const int n = load8(a + base, g, C, vec, va);
    load8(b + base, g, C, vec, vb);
    for (int k = 0; k < n; ++k) va[k] += vb[k];
    store8(sum + base, g, C, vec, va);
  }
  normalise_row(out + base, mean, rstd, sum + base, w, bias, row, lane, C, vec);
}

__global__ void layernorm_backward_input_kernel(bf16* dinp, const bf16* dres, const bf16* dout, const bf16* inp,
                                                const float* mean, const float* rstd, const float* w, int BT, int C,
                                                bool vec) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT) return;
  const long base = static_cast<long>(row) * C;
  const int groups = (C + 7) / 8;
  const float m = mean[row], s = rstd[row];
  float x[8], d[8], r[8], a = 0, bsum = 0;
  for (int g = lane; g < groups; g += 32) {
    const int n = load8(inp + base, g, C, vec, x);
    load8(dout + base, g, C, vec, d);
    for (int k = 0; k < n; ++k) {
      const float norm = (x[k] - m) * s, dnorm = w[8 * g + k] * d[k];
      a += dnorm;
      bsum += dnorm * norm;
    }
  }
  a = warp_sum(a) / C;
  bsum = warp_sum(bsum) / C;
  for (int g = lane; g < groups; g += 32) {
    const int n = load8(inp + base, g, C, vec, x);
    load8(dout + base, g, C, vec, d);
    if (dres) load8(dres + base, g, C, vec, r);
    for (int k = 0; k < n; ++k) {
      const float norm = (x[k] - m) * s, dnorm = w[8 * g + k] * d[k];
      x[k] = (dnorm - a - norm * bsum) * s;
      if (dres) x[k] += r[k];
    }
    store8(dinp + base, g, C, vec, x);
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

}  // namespace

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const float* w, const float* b, int BT,
                       int C, cudaStream_t s) {
  const bool vec = C % 8 == 0 && aligned16(out) && aligned16(inp);
  launch(layernorm_forward_launch(BT), s, layernorm_forward_kernel, out, mean, rstd, inp, w, b, BT, C, vec);
}

void add_layernorm_forward(bf16* sum, bf16* out, float* mean, float* rstd, const bf16* a, const bf16* b,
                           const float* w, const float* bias, int BT, int C, cudaStream_t s) {
  const bool vec = C % 8 == 0 && aligned16(sum) && aligned16(out) && aligned16(a) && aligned16(b);
  launch(add_layernorm_forward_launch(BT), s, add_layernorm_forward_kernel, sum, out, mean, rstd, a, b, w, bias, BT, C,
         vec);
}

void layernorm_backward_input(bf16* dinp, const bf16* dresidual, const bf16* dout, const bf16* inp, const float* mean,
                              const float* rstd, const float* w, int BT, int C, cudaStream_t s) {
  const bool vec = C % 8 == 0 && aligned16(dinp) && aligned16(dout) && aligned16(inp) &&
                   (dresidual == nullptr || aligned16(dresidual));
  launch(layernorm_backward_input_launch(BT), s, layernorm_backward_input_kernel, dinp, dresidual, dout, inp, mean,
         rstd, w, BT, C, vec);
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

}  // namespace zbpp::cuda
