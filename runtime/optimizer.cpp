// AdamW and clipping (see optimizer.h).
#include "runtime/optimizer.h"

#include <cmath>

namespace zbpp {

void adamw_step(std::vector<float>* params, std::vector<float>* m, std::vector<float>* v, const std::vector<float>& grads,
                float grad_scale, int t, const AdamWConfig& c) {
  float b1t = 1.0f - std::pow(c.beta1, static_cast<float>(t));
  float b2t = 1.0f - std::pow(c.beta2, static_cast<float>(t));
  for (size_t i = 0; i < params->size(); ++i) {
    float g = grads[i] * grad_scale;
    (*m)[i] = c.beta1 * (*m)[i] + (1.0f - c.beta1) * g;
    (*v)[i] = c.beta2 * (*v)[i] + (1.0f - c.beta2) * g * g;
    float mhat = (*m)[i] / b1t;
    float vhat = (*v)[i] / b2t;
    float& p = (*params)[i];
    p = p - c.lr * c.weight_decay * p - c.lr * mhat / (std::sqrt(vhat) + c.eps);
  }
}

void adamw_rollback(std::vector<float>* params, std::vector<float>* m, std::vector<float>* v,
                    const std::vector<float>& grads, float grad_scale, int t, const AdamWConfig& c) {
  float b1t = 1.0f - std::pow(c.beta1, static_cast<float>(t));
  float b2t = 1.0f - std::pow(c.beta2, static_cast<float>(t));
  for (size_t i = 0; i < params->size(); ++i) {
    float g = grads[i] * grad_scale;
    float mhat = (*m)[i] / b1t;
    float vhat = (*v)[i] / b2t;
    float& p = (*params)[i];
    p = (p + c.lr * mhat / (std::sqrt(vhat) + c.eps)) / (1.0f - c.lr * c.weight_decay);
    (*m)[i] = ((*m)[i] - (1.0f - c.beta1) * g) / c.beta1;
    (*v)[i] = ((*v)[i] - (1.0f - c.beta2) * g * g) / c.beta2;
  }
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
