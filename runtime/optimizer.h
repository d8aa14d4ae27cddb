// AdamW with global gradient-norm clipping, applied after each iteration (synchronous: every rank
// knows the global norm before it steps).
#pragma once

#include <vector>

#include "runtime/adamw_element.h"

namespace zbpp {

struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  float clip_norm = 1.0f;  ///< global gradient-norm limit; <= 0 disables clipping
};

/// The scalars adamw_element_step takes at time step t (1-based); both backends compute them here.
AdamWScalars adamw_scalars(const AdamWConfig& config, float grad_scale, int t);

/// In-place AdamW step of one tensor (paper Algorithm 1, STEP) at time step t (1-based).
void adamw_step(std::vector<float>* params, std::vector<float>* m, std::vector<float>* v, const std::vector<float>& grads,
                float grad_scale, int t, const AdamWConfig& config);

/// In-place inverse of adamw_step at time step t (paper Algorithm 1, ROLLBACK): restores params,
/// m and v from the state after the step, given the same gradients and scale, without a copy. Not
/// exact in floating point: the difference is a few ulps (optimizer_test.cpp measures it); v never
/// goes below 0.
void adamw_rollback(std::vector<float>* params, std::vector<float>* m, std::vector<float>* v,
                    const std::vector<float>& grads, float grad_scale, int t, const AdamWConfig& config);

/// The factor gradients are scaled by so the global norm is at most clip_norm; the global norm is
/// the square root of the per-tensor squared norms summed in global tensor order.
double global_norm(const std::vector<double>& squared_norms);
float clip_scale(double norm, const AdamWConfig& config);

}  // namespace zbpp
