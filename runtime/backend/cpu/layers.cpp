// CPU reference kernels (see layers.h). Every output is summed in a fixed order (the GEMMs in tiles
// fixed by their shape, gemm.h; fixed loops elsewhere), which keeps results bit-identical however the
// work is split into microbatches, stages and threads.
#include "runtime/backend/cpu/layers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cctype>
#include <cstring>
#include <vector>

#include <cblas.h>  // openblas_get_corename

#include "runtime/backend/cpu/gemm.h"  // gemm, gemm_one, parallel_for

namespace zbpp::cpu {

namespace {

// A sum of n terms in a fixed order with 8 independent partial sums, so the compiler can keep them
// in vector lanes (a single running sum cannot be vectorised without reordering it).
template <class Term>
float lanes_sum(int n, Term term) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) lane[k] += term(i + k);
  float tail = 0;
  for (; i < n; ++i) tail += term(i);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7])) + tail;
}

// exp(x) within 2 ulp for x in [-87.3, 88.3] (clamped outside; NaN stays NaN): x = n ln2 + r with
// |r| <= ln2/2, a degree-6 Taylor polynomial for exp(r), scaled by 2^n through the exponent bits.
// Plain arithmetic, unlike std::exp, so loops over it vectorise; the same bits on every call.
inline float exp_fast(float x) {
  x = x < -87.3f ? -87.3f : (x > 88.3f ? 88.3f : x);  // 2^n stays a normal float: n in [-126, 127]
  // Adding 1.5 * 2^23 rounds x log2(e) to an integer n, left in the low bits of t's mantissa.
  const float t = x * 1.44269504f + 12582912.0f, n = t - 12582912.0f;
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;  // ln 2 in two parts
  float e = 1.0f / 720;
  e = e * r + 1.0f / 120;
  e = e * r + 1.0f / 24;
  e = e * r + 1.0f / 6;
  e = e * r + 0.5f;
  e = e * r + 1.0f;
  e = e * r + 1.0f;
  std::uint32_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  bits = (bits - 0x4B400000u + 127u) << 23;  // unsigned: no undefined behaviour even for NaN
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return e * scale;
}

// tanh through exp_fast, to within 1e-7 absolute; |u| >= 9 gives +-1 (as in fp32).
inline float tanh_fast(float u) {
  u = u < -9.0f ? -9.0f : (u > 9.0f ? 9.0f : u);
  return 1.0f - 2.0f / (exp_fast(2.0f * u) + 1.0f);
}

}  // namespace

// GELU is the costliest loop outside the GEMMs: compiled also for AVX2 and AVX-512, the CPU's best
// picked at load time. Each element's arithmetic is the same in every version (no FMA contraction:
// -ffp-contract=off in CMakeLists.txt; no reordered sums), so the bits are too.
// Not under ThreadSanitizer, whose run-time is not up yet when the loader resolves the versions.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ZBPP_NO_CLONES
#endif
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && !defined(ZBPP_NO_CLONES)
#define ZBPP_WIDE_VECTORS __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ZBPP_WIDE_VECTORS
#endif

namespace {

// Softmax of row[0..n) in place, row[n..len) set to 0 (attention's causal mask; n = len elsewhere).
void softmax_causal_row(float* row, int n, int len) {
  float maxv = row[0];
  for (int i = 1; i < n; ++i) maxv = row[i] > maxv ? row[i] : maxv;
  for (int i = 0; i < n; ++i) row[i] = exp_fast(row[i] - maxv);
  const float inv = 1.0f / lanes_sum(n, [row](int i) { return row[i]; });
  for (int i = 0; i < n; ++i) row[i] *= inv;
  std::fill(row + n, row + len, 0.0f);
}

}  // namespace

std::string blas_core() {
  std::string name = openblas_get_corename();
  // OpenBLAS names some cores in lower case ("haswell"), others not ("SkylakeX").
  if (!name.empty()) name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  return name;
}

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      float* o = out + (static_cast<long>(b) * T + t) * C;
      const float* te = wte + static_cast<long>(tokens[b * T + t]) * C;
      const float* pe = wpe + static_cast<long>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = te[i] + pe[i];
    }
}

void encoder_backward_weight(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const float* d = dout + (static_cast<long>(b) * T + t) * C;
      float* te = dwte + static_cast<long>(tokens[b * T + t]) * C;
      float* pe = dwpe + static_cast<long>(t) * C;
      for (int i = 0; i < C; ++i) {
        te[i] += d[i];
        pe[i] += d[i];
      }
    }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int BT, int C) {
  const float eps = 1e-5f;
  for (int i = 0; i < BT; ++i) {
    const float* x = inp + static_cast<long>(i) * C;
    const float m = lanes_sum(C, [x](int c) { return x[c]; }) / C;
    const float v = lanes_sum(C, [x, m](int c) { return (x[c] - m) * (x[c] - m); }) / C;
    float s = 1.0f / std::sqrt(v + eps);
    float* o = out + static_cast<long>(i) * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

void layernorm_backward_input(float* dinp, const float* dout, const float* inp, const float* mean, const float* rstd,
                              const float* weight, int BT, int C) {
  for (int i = 0; i < BT; ++i) {
    const float* d = dout + static_cast<long>(i) * C;
    const float* x = inp + static_cast<long>(i) * C;
    float* dx = dinp + static_cast<long>(i) * C;
    const float m = mean[i], s = rstd[i];
    const float dnorm_mean = lanes_sum(C, [&](int c) { return weight[c] * d[c]; }) / C;
    const float dnorm_norm_mean = lanes_sum(C, [&](int c) { return weight[c] * d[c] * ((x[c] - m) * s); }) / C;
    for (int c = 0; c < C; ++c) {
      float norm = (x[c] - m) * s;
      float dnorm = weight[c] * d[c];
      dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
}

void layernorm_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, const float* mean,
                               const float* rstd, int BT, int C) {
  for (int i = 0; i < BT; ++i) {
    const float* d = dout + static_cast<long>(i) * C;
    const float* x = inp + static_cast<long>(i) * C;
    for (int c = 0; c < C; ++c) {
      dweight[c] += (x[c] - mean[i]) * rstd[i] * d[c];
      dbias[c] += d[c];
    }
  }
}

// The three GEMMs of a linear layer go to CBLAS (OpenBLAS). For a given shape and thread count
// OpenBLAS picks the same kernel and blocking every call, so each output is summed in a fixed order:
// the same bits whatever the schedule, as long as W runs once per microbatch, in microbatch order,
// accumulating with beta = 1 (never batched across microbatches).
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int BT, int C, int OC) {
  if (bias)
    for (int i = 0; i < BT; ++i) std::copy(bias, bias + OC, out + static_cast<long>(i) * OC);
  gemm(Trans::kNo, Trans::kYes, BT, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out, OC);
}

void matmul_backward_input(float* dinp, const float* dout, const float* weight, int BT, int C, int OC, Out out) {
  gemm(Trans::kNo, Trans::kNo, BT, C, OC, 1.0f, dout, OC, weight, C, out == Out::kAdd ? 1.0f : 0.0f, dinp, C);
}

void matmul_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, int BT, int C, int OC) {
  gemm(Trans::kYes, Trans::kNo, OC, C, BT, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
  if (!dbias) return;
  std::vector<float> sums(dout, dout + OC);  // this microbatch's column sums, row by row, then added once
  for (int i = 1; i < BT; ++i) {
    const float* g = dout + static_cast<long>(i) * OC;
    for (int j = 0; j < OC; ++j) sums[j] += g[j];
  }
  for (int j = 0; j < OC; ++j) dbias[j] += sums[j];
}

// Attention per (sequence, head) as GEMMs on strided views of qkv (row stride 3C): scores
// S = Q K^T / sqrt(hs) over the whole T x T square, the future masked to probability 0, then Y = P V.
// The (sequence, head) pairs write disjoint parts of the outputs, so threads take whole pairs, each
// computed by the same single-threaded calls whichever thread runs it.
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH, ld = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  parallel_for(B * NH, [&](int pair) {
    const int b = pair / NH, h = pair % NH;
    const float* q = qkv + static_cast<long>(b) * T * ld + h * hs;
    float* a = att + (static_cast<long>(b) * NH + h) * T * T;
    gemm_one(Trans::kNo, Trans::kYes, T, T, hs, scale, q, ld, q + C, ld, 0.0f, a, T);
    for (int t = 0; t < T; ++t) softmax_causal_row(a + static_cast<long>(t) * T, t + 1, T);
    gemm_one(Trans::kNo, Trans::kNo, T, hs, T, 1.0f, a, T, q + 2 * C, ld, 0.0f,
             out + static_cast<long>(b) * T * C + h * hs, C);
  });
}

// dP = dY V^T, dV += P^T dY; dS = P (dP - rowsum(P dP)) / sqrt(hs); dQ += dS K, dK += dS^T Q.
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C,
                        int NH, Out out) {
  const int hs = C / NH, ld = 3 * C;
  const float beta = out == Out::kAdd ? 1.0f : 0.0f;  // each (sequence, head) part of dqkv is written once
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  parallel_for(B * NH, [&](int pair) {
    const int b = pair / NH, h = pair % NH;
    thread_local std::vector<float> ds;
    ds.resize(static_cast<size_t>(T) * T);
    const long base = static_cast<long>(b) * T * ld + h * hs;
    const float *q = qkv + base, *dy = dout + static_cast<long>(b) * T * C + h * hs;
    const float* p = att + (static_cast<long>(b) * NH + h) * T * T;
    float* dq = dqkv + base;
    gemm_one(Trans::kNo, Trans::kYes, T, T, hs, 1.0f, dy, C, q + 2 * C, ld, 0.0f, ds.data(), T);
    gemm_one(Trans::kYes, Trans::kNo, T, hs, T, 1.0f, p, T, dy, C, beta, dq + 2 * C, ld);
    for (int t = 0; t < T; ++t) {
      const float* pr = p + static_cast<long>(t) * T;
      float* d = ds.data() + static_cast<long>(t) * T;
      const float dot = lanes_sum(t + 1, [&](int i) { return pr[i] * d[i]; });
      for (int i = 0; i <= t; ++i) d[i] = pr[i] * (d[i] - dot) * scale;
      std::fill(d + t + 1, d + T, 0.0f);
    }
    gemm_one(Trans::kNo, Trans::kNo, T, hs, T, 1.0f, ds.data(), T, q + C, ld, beta, dq, ld);
    gemm_one(Trans::kYes, Trans::kNo, T, hs, T, 1.0f, ds.data(), T, q, ld, beta, dq + C, ld);
  });
}

ZBPP_WIDE_VECTORS void gelu_forward(float* out, const float* inp, int n) {
  const float s = std::sqrt(2.0f / static_cast<float>(M_PI));
  for (int i = 0; i < n; ++i) {
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanh_fast(s * (x + 0.044715f * x * x * x)));
  }
}

ZBPP_WIDE_VECTORS void gelu_backward(float* dinp, const float* inp, const float* dout, int n, Out out) {
  const float s = std::sqrt(2.0f / static_cast<float>(M_PI));
  auto grad = [s](float x) {
    const float th = tanh_fast(s * (x + 0.044715f * x * x * x)), sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * s * (1.0f + 3.0f * 0.044715f * x * x);
  };
  if (out == Out::kSet)
    for (int i = 0; i < n; ++i) dinp[i] = grad(inp[i]) * dout[i];
  else
    for (int i = 0; i < n; ++i) dinp[i] += grad(inp[i]) * dout[i];
}

void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int BT, int V) {
  for (int i = 0; i < BT; ++i) {
    float* p = probs + static_cast<long>(i) * V;
    std::copy(logits + static_cast<long>(i) * V, logits + static_cast<long>(i + 1) * V, p);
    softmax_causal_row(p, V, V);
    losses[i] = -std::log(p[targets[i]]);
  }
}

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float scale, int BT, int V) {
  for (int i = 0; i < BT; ++i) {
    const float* p = probs + static_cast<long>(i) * V;
    float* d = dlogits + static_cast<long>(i) * V;
    for (int v = 0; v < V; ++v) d[v] += scale * (p[v] - (v == targets[i] ? 1.0f : 0.0f));
  }
}

}  // namespace zbpp::cpu
