// AdamW's step and rollback on the fp32 master weights (the formula of runtime/adamw_element.h),
// and the gradients' sum of squares in a fixed order.
#include "runtime/backend/cuda/kernels.cuh"

#include "runtime/backend/cuda/kernels_common.cuh"
#include "runtime/backend/cuda/launch.cuh"

namespace zbpp::cuda {

namespace {

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
