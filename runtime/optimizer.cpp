// AdamW and clipping (see optimizer.h).
#include "runtime/optimizer.h"

#include <cmath>

namespace zbpp {

AdamWScalars adamw_scalars(const AdamWConfig& c, float grad_scale, int t) {
  return {c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, grad_scale,
          1.0f - std::pow(c.beta1, static_cast<float>(t)), 1.0f - std::pow(c.beta2, static_cast<float>(t))};
}

void adamw_step(std::vector<float>* params, std::vector<float>* m, std::vector<float>* v, const std::vector<float>& grads,
                float grad_scale, int t, const AdamWConfig& c) {
  const AdamWScalars a = adamw_scalars(c, grad_scale, t);
  for (size_t i = 0; i < params->size(); ++i) adamw_element_step(&(*params)[i], &(*m)[i], &(*v)[i], grads[i], a);
}

void adamw_rollback(std::vector<float>* params, std::vector<float>* m, std::vector<float>* v,
                    const std::vector<float>& grads, float grad_scale, int t, const AdamWConfig& c) {
  const AdamWScalars a = adamw_scalars(c, grad_scale, t);
  for (size_t i = 0; i < params->size(); ++i) adamw_element_rollback(&(*params)[i], &(*m)[i], &(*v)[i], grads[i], a);
}

double global_norm(const std::vector<double>& squared_norms) {
  double sum = 0;
  for (double s : squared_norms) sum += s;
  return std::sqrt(sum);
}

float clip_scale(double norm, const AdamWConfig& c) {
  if (c.clip_norm <= 0 || norm <= c.clip_norm) return 1.0f;
  return static_cast<float>(c.clip_norm / (norm + 1e-6));
}

}  // namespace zbpp
