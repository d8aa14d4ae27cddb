// LayerNorm (cpu layernorm_*) and the linear layers' bias gradient (cpu matmul_backward_weight's
// dbias; their GEMMs are cuBLASLt's): column sums in fixed row splits.
#include "runtime/backend/cuda/kernels.cuh"

#include "runtime/backend/cuda/kernels_common.cuh"
#include "runtime/backend/cuda/launch.cuh"

namespace zbpp::cuda {

namespace {

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

// The residual add before a LayerNorm, in the same pass: sum = bf16(a + b) is written (the block
// keeps it) and normalised as layernorm_forward_kernel normalises it, from the rounded values and
// in the same order, so both outputs have the bits of add then layernorm_forward.
__global__ void add_layernorm_forward_kernel(bf16* sum, bf16* out, float* mean, float* rstd, const bf16* a,
                                             const bf16* b, const float* w, const float* bias, int BT, int C) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= BT) return;
  const long base = static_cast<long>(row) * C;
  bf16* x = sum + base;
  float total = 0;
  for (int c = lane; c < C; c += 32) {
    x[c] = __float2bfloat16(f(a[base + c]) + f(b[base + c]));
    total += f(x[c]);  // this lane's own write: no other thread's is read
  }
  float m = warp_sum(total) / C;
  float var = 0;
  for (int c = lane; c < C; c += 32) var += (f(x[c]) - m) * (f(x[c]) - m);
  float s = rsqrtf(warp_sum(var) / C + 1e-5f);
  bf16* o = out + base;
  for (int c = lane; c < C; c += 32) o[c] = __float2bfloat16((f(x[c]) - m) * s * w[c] + bias[c]);
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

}  // namespace

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const float* w, const float* b, int BT,
                       int C, cudaStream_t s) {
  launch(layernorm_forward_launch(BT), s, layernorm_forward_kernel, out, mean, rstd, inp, w, b, BT, C);
}

void add_layernorm_forward(bf16* sum, bf16* out, float* mean, float* rstd, const bf16* a, const bf16* b,
                           const float* w, const float* bias, int BT, int C, cudaStream_t s) {
  launch(add_layernorm_forward_launch(BT), s, add_layernorm_forward_kernel, sum, out, mean, rstd, a, b, w, bias, BT, C);
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

}  // namespace zbpp::cuda
