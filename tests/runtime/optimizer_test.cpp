// Tests for runtime/optimizer.cpp: AdamW's in-place rollback (paper Algorithm 1) undoes a step to
// within a few ulps over random states, and clipping scales to the limit.
#include "runtime/optimizer.h"

#include <cmath>
#include <random>

#include <catch2/catch.hpp>

using namespace zbpp;

namespace {
// Distance in units in the last place between two floats of the same sign region.
double ulps(float a, float b) {
  if (a == b) return 0;
  float scale = std::max(std::fabs(a), std::fabs(b));
  return std::fabs(a - b) / (std::nextafter(scale, INFINITY) - scale);
}
}  // namespace

TEST_CASE("optimizer: rollback(step(x)) returns x within a few ulps over random states") {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  AdamWConfig c;
  c.lr = 1e-3f;
  c.weight_decay = 0.1f;
  double worst_p = 0, worst_m = 0, worst_v = 0;
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 257, t = 1 + trial % 20;
    std::vector<float> p(n), m(n), v(n), g(n);
    for (int i = 0; i < n; ++i) {
      p[i] = normal(rng);
      m[i] = 0.01f * normal(rng);
      v[i] = 1e-4f * std::fabs(normal(rng)) + 1e-6f;
      g[i] = 0.1f * normal(rng);
    }
    auto p0 = p, m0 = m, v0 = v;
    float scale = trial % 3 == 0 ? 0.5f : 1.0f;
    adamw_step(&p, &m, &v, g, scale, t, c);
    adamw_rollback(&p, &m, &v, g, scale, t, c);
    for (int i = 0; i < n; ++i) {
      worst_p = std::max(worst_p, ulps(p[i], p0[i]));
      worst_m = std::max(worst_m, std::fabs(m[i] - m0[i]) / std::max(1e-3f, std::fabs(m0[i])) / 1.2e-7);
      worst_v = std::max(worst_v, std::fabs(v[i] - v0[i]) / std::max(1e-6f, std::fabs(v0[i])) / 1.2e-7);
    }
  }
  INFO("worst parameter error " << worst_p << " ulps; m " << worst_m << ", v " << worst_v << " (relative, in float eps)");
  CHECK(worst_p <= 4);
  CHECK(worst_m <= 32);
  CHECK(worst_v <= 32);
}

TEST_CASE("optimizer: clipping scales the global norm down to the limit and leaves small norms alone") {
  AdamWConfig c;
  c.clip_norm = 1.0f;
  CHECK(global_norm({9.0, 16.0}) == 5.0);
  CHECK(clip_scale(5.0, c) == Approx(0.2).epsilon(1e-5));
  CHECK(clip_scale(0.5, c) == 1.0f);
  c.clip_norm = 0;
  CHECK(clip_scale(5.0, c) == 1.0f);
}
