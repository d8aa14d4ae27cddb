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

TEST_CASE("optimizer: rollback never leaves the second moment negative") {
  // A state no step produced (v = 0 with a gradient): the raw inverse would give v < 0, and the
  // next step's sqrt a NaN. Both backends run this formula (runtime/adamw_element.h).
  AdamWConfig c;
  std::vector<float> p = {1.0f, -2.0f, 0.5f}, m = {0.0f, 0.1f, -0.1f}, v = {0.0f, 1e-12f, 0.0f};
  const std::vector<float> g = {1.0f, -3.0f, 0.25f};
  adamw_rollback(&p, &m, &v, g, 1.0f, 1, c);
  for (float x : v) CHECK(x == 0.0f);
  // A NaN is not hidden as 0.
  std::vector<float> pn = {1.0f}, mn = {0.0f}, vn = {0.0f};
  adamw_rollback(&pn, &mn, &vn, {std::nanf("")}, 1.0f, 1, c);
  CHECK(std::isnan(vn[0]));
}

TEST_CASE("optimizer: a step computes AdamW's formula operation by operation, as the CUDA kernel does") {
  // Rounded after every operation, in the order runtime/adamw_element.h gives (no fused
  // multiply-add): the CUDA kernel runs the same code with __fmul_rn and friends.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  AdamWConfig c;
  c.lr = 1e-2f;
  c.weight_decay = 0.1f;
  int differ = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const float p0 = normal(rng), m0 = 0.01f * normal(rng), v0 = 1e-4f * std::fabs(normal(rng));
    const float g = 0.3f * normal(rng), scale = 0.5f;
    const int t = 1 + trial % 7;
    std::vector<float> p = {p0}, m = {m0}, v = {v0};
    adamw_step(&p, &m, &v, {g}, scale, t, c);
    // volatile: each result is rounded to float before it is used
    volatile float gs = g * scale;
    volatile float b1t = 1.0f - std::pow(c.beta1, static_cast<float>(t));
    volatile float b2t = 1.0f - std::pow(c.beta2, static_cast<float>(t));
    volatile float m1a = c.beta1 * m0, m1b = (1.0f - c.beta1) * gs, m1 = m1a + m1b;
    volatile float v1a = c.beta2 * v0, v1b = (1.0f - c.beta2) * gs, v1c = v1b * gs, v1 = v1a + v1c;
    volatile float mhat = m1 / b1t, vhat = v1 / b2t, lrwd = c.lr * c.weight_decay, decay = lrwd * p0;
    volatile float num = c.lr * mhat, root = std::sqrt(vhat), den = root + c.eps, update = num / den;
    volatile float p1 = p0 - decay, p2 = p1 - update;
    differ += m[0] != m1 || v[0] != v1 || p[0] != p2;
  }
  CHECK(differ == 0);
}
