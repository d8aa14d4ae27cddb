// AdamW on one element, shared by the CPU optimizer (optimizer.cpp) and the CUDA kernels
// (cuda/kernels_optimizer.cu), so the two backends run one formula. Every operation is rounded on its own
// (no fused multiply-add): nvcc contracts a*b+c into an FMA by default, which changes the bits
// and can leave the rolled-back v slightly negative; __fmul_rn and friends are never contracted.
// On the host the plain operators are used (ISO C++ mode: GCC does not contract them either), in
// the order the CPU optimizer always used, so the CPU results keep their bits.
#pragma once

#include "runtime/host_device.h"

#include <cmath>

namespace zbpp {

/// The scalars of one AdamW step: b1t = 1 - beta1^t, b2t = 1 - beta2^t are computed on the host.
struct AdamWScalars {
  float lr, beta1, beta2, eps, weight_decay, grad_scale, b1t, b2t;
};

namespace rn {  // round-to-nearest operations that no compiler fuses
#if defined(__CUDA_ARCH__)
__device__ inline float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ inline float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline float sqrt(float a) { return __fsqrt_rn(a); }
#else
inline float mul(float a, float b) { return a * b; }
inline float add(float a, float b) { return a + b; }
inline float sub(float a, float b) { return a - b; }
inline float div(float a, float b) { return a / b; }
inline float sqrt(float a) { return std::sqrt(a); }
#endif
}  // namespace rn

/// One AdamW step (paper Algorithm 1, STEP) of parameter p with moments m, v and raw gradient g.
ZBPP_HD inline void adamw_element_step(float* p, float* m, float* v, float g_raw, const AdamWScalars& a) {
  const float g = rn::mul(g_raw, a.grad_scale);
  *m = rn::add(rn::mul(a.beta1, *m), rn::mul(rn::sub(1.0f, a.beta1), g));
  *v = rn::add(rn::mul(a.beta2, *v), rn::mul(rn::mul(rn::sub(1.0f, a.beta2), g), g));
  const float mhat = rn::div(*m, a.b1t), vhat = rn::div(*v, a.b2t);
  const float decay = rn::mul(rn::mul(a.lr, a.weight_decay), *p);
  const float update = rn::div(rn::mul(a.lr, mhat), rn::add(rn::sqrt(vhat), a.eps));
  *p = rn::sub(rn::sub(*p, decay), update);
}

/// Its in-place inverse (paper Algorithm 1, ROLLBACK) given the same gradient and scalars. v is
/// clamped at 0: a second moment is never negative, and a negative one would make the next
/// step's sqrt a NaN.
ZBPP_HD inline void adamw_element_rollback(float* p, float* m, float* v, float g_raw, const AdamWScalars& a) {
  const float g = rn::mul(g_raw, a.grad_scale);
  const float mhat = rn::div(*m, a.b1t), vhat = rn::div(*v, a.b2t);
  const float update = rn::div(rn::mul(a.lr, mhat), rn::add(rn::sqrt(vhat), a.eps));
  *p = rn::div(rn::add(*p, update), rn::sub(1.0f, rn::mul(a.lr, a.weight_decay)));
  *m = rn::div(rn::sub(*m, rn::mul(rn::sub(1.0f, a.beta1), g)), a.beta1);
  const float v0 = rn::div(rn::sub(*v, rn::mul(rn::mul(rn::sub(1.0f, a.beta2), g), g)), a.beta2);
  *v = v0 < 0.0f ? 0.0f : v0;  // a NaN stays a NaN
}

}  // namespace zbpp
