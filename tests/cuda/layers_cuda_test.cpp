// Every CUDA layer's F, B and W against the CPU reference (runtime/backend/cpu/layers.h) within bf16
// tolerance, and the whole CUDA backend against the CPU backend. Inputs are rounded to bf16
// first, so only the GPU's arithmetic differs. Needs a GPU: main_cuda_test.cpp exits 77 without one.
#include <catch2/catch.hpp>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/backend/cpu/compute_cpu.h"
#include "runtime/backend/cpu/layers.h"
#include "runtime/backend/cuda/compute_cuda.h"
#include "runtime/cuda/device_buffers.h"
#include "runtime/backend/cuda/gemm_lt.h"
#include "runtime/backend/cuda/kernels.cuh"
#include "runtime/optimizer.h"

namespace zbpp {
namespace {

using cuda::bf16;
using Vec = std::vector<float>;

constexpr int B = 2, T = 16, C = 64, NH = 4, V = 96, BT = B * T;

// A device array that converts to and from host floats.
template <typename E>
struct Dev {
  E* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) {
    REQUIRE(cudaMalloc(&p, n * sizeof(E)) == cudaSuccess);
    REQUIRE(cudaMemset(p, 0, n * sizeof(E)) == cudaSuccess);
  }
  explicit Dev(const Vec& h) : Dev(h.size()) { set(h); }
  ~Dev() { cudaFree(p); }
  void set(const Vec& h) {
    std::vector<E> tmp(h.size());
    for (size_t i = 0; i < h.size(); ++i) tmp[i] = static_cast<E>(h[i]);
    REQUIRE(cudaMemcpy(p, tmp.data(), n * sizeof(E), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  Vec get() const {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<E> tmp(n);
    REQUIRE(cudaMemcpy(tmp.data(), p, n * sizeof(E), cudaMemcpyDeviceToHost) == cudaSuccess);
    Vec out(n);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(tmp[i]);
    return out;
  }
};

Vec random(size_t n, float scale, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Vec v(n);
  for (float& x : v) x = __bfloat162float(__float2bfloat16(d(gen)));  // exactly representable in bf16
  return v;
}

bool same_bits(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// max |gpu - cpu| relative to max |cpu|: the bf16 tolerance of one layer.
double rel_error(const Vec& gpu, const Vec& cpu) {
  REQUIRE(gpu.size() == cpu.size());
  double diff = 0, scale = 1e-12;
  for (size_t i = 0; i < cpu.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(gpu[i] - cpu[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(cpu[i])));
  }
  return diff / scale;
}

constexpr double kTol = 2e-2;  // a few bf16 roundings (2^-8 each) through a layer

TEST_CASE("linear layer: forward, B (dX) and W (dW += over two microbatches) match the CPU") {
  const int K = C, N = 3 * C;
  Vec x = random(BT * K, 1.0f, 1), w = random(N * K, 0.1f, 2), bias = random(N, 0.1f, 3), dy = random(BT * N, 1.0f, 4),
      x2 = random(BT * K, 1.0f, 5), dy2 = random(BT * N, 1.0f, 6);
  cuda::GemmLt gemm;
  Dev<bf16> dx_(x), dw_(w), db_(bias), dy_(dy), y_(BT * N), dxout(BT * K), dx2(x2), ddy2(dy2);
  Dev<float> dW(N * K);
  gemm.forward(y_.p, dx_.p, dw_.p, db_.p, BT, K, N, nullptr, "test");
  gemm.backward_input(dxout.p, dy_.p, dw_.p, BT, K, N, nullptr, "test");
  gemm.backward_weight(dW.p, dy_.p, dx_.p, BT, K, N, nullptr, "test");
  gemm.backward_weight(dW.p, ddy2.p, dx2.p, BT, K, N, nullptr, "test");
  Vec y(BT * N), dxc(BT * K, 0.0f), dWc(N * K, 0.0f);
  cpu::matmul_forward(y.data(), x.data(), w.data(), bias.data(), BT, K, N);
  cpu::matmul_backward_input(dxc.data(), dy.data(), w.data(), BT, K, N);
  cpu::matmul_backward_weight(dWc.data(), nullptr, dy.data(), x.data(), BT, K, N);
  cpu::matmul_backward_weight(dWc.data(), nullptr, dy2.data(), x2.data(), BT, K, N);
  CHECK(rel_error(y_.get(), y) < kTol);
  CHECK(rel_error(dxout.get(), dxc) < kTol);
  CHECK(rel_error(dW.get(), dWc) < kTol);
}

TEST_CASE("linear layer with cuBLASLt's GELU epilogues: forward and B match the CPU's linear then GELU") {
  // The MLP's fc forward (P = X W^T + b, Y = GELU(P)) and fcproj's B (dP = (dY W) * GELU'(P)).
  const int K = C, N = 4 * C;
  Vec x = random(BT * K, 1.0f, 41), w = random(N * K, 0.1f, 42), bias = random(N, 0.1f, 43);
  cuda::GemmLt gemm;
  Dev<bf16> dx(x), dw(w), db(bias), y(BT * N), pre(BT * N);
  REQUIRE(gemm.forward_gelu(y.p, pre.p, dx.p, dw.p, db.p, BT, K, N, nullptr, "test"));  // sm_80 and sm_90 have it
  Vec p(BT * N), yc(BT * N);
  cpu::matmul_forward(p.data(), x.data(), w.data(), bias.data(), BT, K, N);
  cpu::gelu_forward(yc.data(), p.data(), BT * N);
  CHECK(rel_error(pre.get(), p) < kTol);
  CHECK(rel_error(y.get(), yc) < kTol);
  // fcproj: X (BT, 4C) -> (BT, C); its B gives the gradient at fc's output through the GELU.
  Vec w2 = random(C * N, 0.1f, 44), dy = random(BT * C, 1.0f, 45);
  Dev<bf16> dw2(w2), ddy(dy), dpre(BT * N);
  REQUIRE(gemm.backward_input_dgelu(dpre.p, ddy.p, dw2.p, pre.p, BT, N, C, nullptr, "test"));
  Vec dgelu(BT * N, 0.0f), dpc(BT * N, 0.0f), pre_bf16 = pre.get();
  cpu::matmul_backward_input(dgelu.data(), dy.data(), w2.data(), BT, N, C);
  cpu::gelu_backward(dpc.data(), pre_bf16.data(), dgelu.data(), BT * N);
  CHECK(rel_error(dpre.get(), dpc) < kTol);
}

TEST_CASE("bias gradient matches the CPU's column sums") {
  Vec dy = random(BT * C, 1.0f, 7), x = random(BT * C, 1.0f, 8);
  Dev<bf16> ddy(dy);
  Dev<float> db(C), scratch(cuda::column_scratch_floats(C));
  cuda::bias_backward(db.p, scratch.p, ddy.p, BT, C, nullptr);
  Vec dw(C * C, 0.0f), dbc(C, 0.0f);
  cpu::matmul_backward_weight(dw.data(), dbc.data(), dy.data(), x.data(), BT, C, C);
  CHECK(rel_error(db.get(), dbc) < kTol);
}

TEST_CASE("layernorm: the residual add fused into the forward gives add then layernorm's bits") {
  Vec a = random(BT * C, 1.0f, 31), b = random(BT * C, 1.0f, 32), w = random(C, 0.5f, 33), bias = random(C, 0.5f, 34);
  for (float& v : w) v += 1.0f;
  Dev<bf16> da(a), db(b), sum(BT * C), out(BT * C), sum2(BT * C), out2(BT * C);
  Dev<float> dw(w), dbias(bias), mean(BT), rstd(BT), mean2(BT), rstd2(BT);
  cuda::add(sum.p, da.p, db.p, static_cast<long>(BT) * C, nullptr);
  cuda::layernorm_forward(out.p, mean.p, rstd.p, sum.p, dw.p, dbias.p, BT, C, nullptr);
  cuda::add_layernorm_forward(sum2.p, out2.p, mean2.p, rstd2.p, da.p, db.p, dw.p, dbias.p, BT, C, nullptr);
  CHECK(sum2.get() == sum.get());
  CHECK(out2.get() == out.get());
  CHECK(mean2.get() == mean.get());
  CHECK(rstd2.get() == rstd.get());
}

// The LayerNorm kernels with rows of `c` channels: on 16-byte aligned rows and on rows one element
// off (the scalar loads), with the fused residual add, against each other bit for bit and against
// the CPU.
void layernorm_paths(int c) {
  CAPTURE(c);
  const size_t n = static_cast<size_t>(BT) * c;
  Vec x = random(n, 1.0f, 51), x2 = random(n, 1.0f, 55), w = random(c, 0.5f, 52), b = random(c, 0.5f, 53),
      dy = random(n, 1.0f, 54);
  for (float& v : w) v += 1.0f;
  Dev<bf16> dx(x), dx2(x2), ddy(dy), out(n), din(n), sum(n), fout(n), sx(n + 1), sx2(n + 1), sdy(n + 1), sout(n + 1),
      sdin(n + 1), ssum(n + 1), sfout(n + 1);
  Dev<float> dw(w), db(b), mean(BT), rstd(BT), smean(BT), srstd(BT), fmean(BT), frstd(BT);
  // The shifted copies start 2 bytes past a 16-byte boundary: the launchers take the scalar path.
  REQUIRE(cudaMemcpy(sx.p + 1, dx.p, n * 2, cudaMemcpyDeviceToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(sx2.p + 1, dx2.p, n * 2, cudaMemcpyDeviceToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(sdy.p + 1, ddy.p, n * 2, cudaMemcpyDeviceToDevice) == cudaSuccess);
  cuda::layernorm_forward(out.p, mean.p, rstd.p, dx.p, dw.p, db.p, BT, c, nullptr);
  cuda::layernorm_forward(sout.p + 1, smean.p, srstd.p, sx.p + 1, dw.p, db.p, BT, c, nullptr);
  cuda::layernorm_backward_input(din.p, dx.p, ddy.p, dx.p, mean.p, rstd.p, dw.p, BT, c, nullptr);
  cuda::layernorm_backward_input(sdin.p + 1, sx.p + 1, sdy.p + 1, sx.p + 1, mean.p, rstd.p, dw.p, BT, c, nullptr);
  cuda::add_layernorm_forward(sum.p, fout.p, fmean.p, frstd.p, dx.p, dx2.p, dw.p, db.p, BT, c, nullptr);
  cuda::add_layernorm_forward(ssum.p + 1, sfout.p + 1, smean.p, srstd.p, sx.p + 1, sx2.p + 1, dw.p, db.p, BT, c,
                              nullptr);
  auto tail = [](const Vec& v) { return Vec(v.begin() + 1, v.end()); };
  CHECK(same_bits(tail(sout.get()), out.get()));
  CHECK(same_bits(tail(sdin.get()), din.get()));
  CHECK(same_bits(tail(ssum.get()), sum.get()));
  CHECK(same_bits(tail(sfout.get()), fout.get()));
  CHECK(same_bits(smean.get(), fmean.get()));
  CHECK(same_bits(srstd.get(), frstd.get()));
  Vec o(n), m(BT), r(BT), dinc(n, 0.0f);
  cpu::layernorm_forward(o.data(), m.data(), r.data(), x.data(), w.data(), b.data(), BT, c);
  cpu::layernorm_backward_input(dinc.data(), dy.data(), x.data(), m.data(), r.data(), w.data(), BT, c);
  for (size_t i = 0; i < n; ++i) dinc[i] += x[i];  // the residual passed as dresidual above
  CHECK(rel_error(out.get(), o) < kTol);
  CHECK(rel_error(mean.get(), m) < 1e-3);
  CHECK(rel_error(din.get(), dinc) < kTol);
}

TEST_CASE("layernorm: the same bits with 16-byte loads and with scalar ones, for any channel count") {
  layernorm_paths(C);    // one group of 8 a lane
  layernorm_paths(520);  // 65 groups: lane 0 sums three, in order
  layernorm_paths(100);  // a tail of 4: scalar loads only
}

TEST_CASE("layernorm: forward, B (input gradient) and W (weight gradient) match the CPU") {
  Vec x = random(BT * C, 1.0f, 9), w = random(C, 0.5f, 10), b = random(C, 0.5f, 11), dy = random(BT * C, 1.0f, 12);
  for (float& v : w) v += 1.0f;
  Dev<bf16> dx_(x), out(BT * C), dyd(dy), din(BT * C);
  Dev<float> dw_(w), db_(b), mean(BT), rstd(BT), gw(C), gb(C), scratch(cuda::column_scratch_floats(C));
  cuda::layernorm_forward(out.p, mean.p, rstd.p, dx_.p, dw_.p, db_.p, BT, C, nullptr);
  cuda::layernorm_backward_input(din.p, nullptr, dyd.p, dx_.p, mean.p, rstd.p, dw_.p, BT, C, nullptr);
  cuda::layernorm_backward_weight(gw.p, gb.p, scratch.p, dyd.p, dx_.p, mean.p, rstd.p, BT, C, nullptr);
  Vec o(BT * C), m(BT), r(BT), dinc(BT * C, 0.0f), gwc(C, 0.0f), gbc(C, 0.0f);
  cpu::layernorm_forward(o.data(), m.data(), r.data(), x.data(), w.data(), b.data(), BT, C);
  cpu::layernorm_backward_input(dinc.data(), dy.data(), x.data(), m.data(), r.data(), w.data(), BT, C);
  cpu::layernorm_backward_weight(gwc.data(), gbc.data(), dy.data(), x.data(), m.data(), r.data(), BT, C);
  CHECK(rel_error(out.get(), o) < kTol);
  CHECK(rel_error(mean.get(), m) < 1e-3);
  CHECK(rel_error(rstd.get(), r) < 1e-3);
  CHECK(rel_error(din.get(), dinc) < kTol);
  CHECK(rel_error(gw.get(), gwc) < kTol);
  CHECK(rel_error(gb.get(), gbc) < kTol);
}

TEST_CASE("GELU forward and backward match the CPU") {
  const int n = BT * 4 * C;
  Vec x = random(n, 2.0f, 13), dy = random(n, 1.0f, 14);
  Dev<bf16> dx_(x), out(n), dyd(dy), din(n);
  cuda::gelu_forward(out.p, dx_.p, n, nullptr);
  cuda::gelu_backward(din.p, dx_.p, dyd.p, n, nullptr);
  Vec o(n), dinc(n, 0.0f);
  cpu::gelu_forward(o.data(), x.data(), n);
  cpu::gelu_backward(dinc.data(), x.data(), dy.data(), n);
  CHECK(rel_error(out.get(), o) < kTol);
  CHECK(rel_error(din.get(), dinc) < kTol);
}

TEST_CASE("causal attention forward and backward match the CPU, with every variant") {
  // The file's shape; one where a warp has work past lane 31 (T = 37 > 32 keys), each lane several
  // channels (head size 64 > 32) and the last block only some of its warps (111 rows); for the
  // flash tiles (64 query and key rows, 32-row backward steps, heads padded to 16): a head of 24
  // channels (padded, scalar loads) over 130 positions (three tiles, the last of 2 rows), and the
  // bench model's head of 128 over 200 positions (vector loads, a partial last tile).
  struct Shape {
    int b, t, c, nh;
  };
  for (const Shape sh : {Shape{B, T, C, NH}, Shape{1, 37, 192, 3}, Shape{2, 130, 96, 4}, Shape{1, 200, 256, 2}}) {
    const int bt = sh.b * sh.t, rows = sh.b * sh.nh * sh.t;
    INFO("B " << sh.b << ", T " << sh.t << ", C " << sh.c << ", heads " << sh.nh);
    Vec qkv = random(bt * 3 * sh.c, 1.0f, 15), dy = random(bt * sh.c, 1.0f, 16);
    Vec o(bt * sh.c), att(static_cast<size_t>(rows) * sh.t), dqc(bt * 3 * sh.c, 0.0f);
    cpu::attention_forward(o.data(), att.data(), qkv.data(), sh.b, sh.t, sh.c, sh.nh);
    cpu::attention_backward(dqc.data(), dy.data(), qkv.data(), att.data(), sh.b, sh.t, sh.c, sh.nh);
    for (cuda::AttentionVariant variant :
         {cuda::AttentionVariant::kLane, cuda::AttentionVariant::kWarp, cuda::AttentionVariant::kFlash}) {
      INFO(cuda::attention_variant_name(variant));
      Dev<bf16> dq(qkv), out(bt * sh.c), dyd(dy), dqkv(bt * 3 * sh.c);
      Dev<float> lse(rows), scratch(cuda::attention_backward_scratch_floats(sh.b, sh.t, sh.c, sh.nh, variant));
      cuda::attention_forward(out.p, lse.p, dq.p, sh.b, sh.t, sh.c, sh.nh, nullptr, variant);
      // The backward reads the bf16 output the forward wrote, as the backend does.
      cuda::attention_backward(dqkv.p, scratch.p, dyd.p, out.p, dq.p, lse.p, sh.b, sh.t, sh.c, sh.nh, nullptr, variant);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      CHECK(rel_error(out.get(), o) < kTol);
      CHECK(rel_error(dqkv.get(), dqc) < kTol);
      // Run again: the same bits (fixed-order reductions).
      Dev<bf16> out2(bt * sh.c), dqkv2(bt * 3 * sh.c);
      cuda::attention_forward(out2.p, lse.p, dq.p, sh.b, sh.t, sh.c, sh.nh, nullptr, variant);
      cuda::attention_backward(dqkv2.p, scratch.p, dyd.p, out2.p, dq.p, lse.p, sh.b, sh.t, sh.c, sh.nh, nullptr,
                               variant);
      CHECK(same_bits(out2.get(), out.get()));
      CHECK(same_bits(dqkv2.get(), dqkv.get()));
    }
  }
}

TEST_CASE("cross-entropy: the fused loss and logits' gradient match the CPU's forward and backward") {
  Vec logits = random(BT * V, 2.0f, 17);
  std::vector<int> targets(BT);
  for (int i = 0; i < BT; ++i) targets[i] = (i * 37) % V;
  int* dt = nullptr;
  REQUIRE(cudaMalloc(&dt, BT * sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMemcpy(dt, targets.data(), BT * sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);
  Dev<bf16> dl(logits);
  Dev<float> losses(BT);
  const float scale = 1.0f / BT;
  cuda::crossentropy(losses.p, dl.p, dt, scale, BT, V, nullptr);
  Vec lossg = losses.get();
  Vec lc(BT), probs(BT * V), dlc(BT * V, 0.0f);
  cpu::crossentropy_forward(lc.data(), probs.data(), logits.data(), targets.data(), BT, V);
  cpu::crossentropy_backward(dlc.data(), probs.data(), targets.data(), scale, BT, V);
  CHECK(rel_error(lossg, lc) < 1e-3);
  CHECK(rel_error(dl.get(), dlc) < kTol);
  cudaFree(dt);
}

TEST_CASE("embedding forward and weight gradient match the CPU") {
  Vec wte = random(V * C, 0.1f, 18), wpe = random(T * C, 0.1f, 19), dy = random(BT * C, 1.0f, 20);
  std::vector<int> tokens(BT);
  for (int i = 0; i < BT; ++i) tokens[i] = (i * 7) % 5;  // repeated tokens: rows summed in position order
  // Grouped by token, ascending positions (what the backend builds on the host).
  std::vector<int> uniq, offsets{0}, positions;
  for (int v = 0; v < V; ++v) {
    bool any = false;
    for (int i = 0; i < BT; ++i)
      if (tokens[i] == v) positions.push_back(i), any = true;
    if (any) uniq.push_back(v), offsets.push_back(static_cast<int>(positions.size()));
  }
  std::vector<int> all(tokens);
  all.insert(all.end(), uniq.begin(), uniq.end());
  all.insert(all.end(), offsets.begin(), offsets.end());
  all.insert(all.end(), positions.begin(), positions.end());
  int* d = nullptr;
  REQUIRE(cudaMalloc(&d, all.size() * sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMemcpy(d, all.data(), all.size() * sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);
  const int* du = d + BT;
  const int* doff = du + uniq.size();
  const int* dpos = doff + offsets.size();
  Dev<float> dwte(wte), dwpe(wpe), gte(V * C), gpe(T * C);
  Dev<bf16> out(BT * C), dyd(dy);
  cuda::encoder_forward(out.p, d, dwte.p, dwpe.p, B, T, C, nullptr);
  cuda::encoder_backward_weight(gte.p, gpe.p, dyd.p, du, doff, dpos, static_cast<int>(uniq.size()), B, T, C, nullptr);
  Vec o(BT * C), gtec(V * C, 0.0f), gpec(T * C, 0.0f);
  cpu::encoder_forward(o.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  cpu::encoder_backward_weight(gtec.data(), gpec.data(), dy.data(), tokens.data(), B, T, C);
  CHECK(rel_error(out.get(), o) < kTol);
  CHECK(rel_error(gte.get(), gtec) < 1e-5);  // fp32 sums of bf16 values in the CPU's order
  CHECK(rel_error(gpe.get(), gpec) < 1e-5);
  cudaFree(d);
}

TEST_CASE("AdamW step and rollback give the CPU optimizer's bits, and v never goes negative") {
  // Both run runtime/adamw_element.h with every operation rounded on its own, so the bits agree.
  const int n = 4096;
  AdamWConfig cfg;
  cfg.weight_decay = 0.1f;
  Vec p = random(n, 1.0f, 21), g = random(n, 1.0f, 22), m = random(n, 0.01f, 24), v = random(n, 1e-4f, 25);
  for (int i = 0; i < n; ++i) v[i] = i % 5 == 0 ? 0.0f : std::fabs(v[i]);  // zeros: the raw inverse goes below 0
  Dev<float> dp(p), dg(g), dm(m), dv(v);
  Dev<bf16> p16(n);
  const int t = 3;
  const cuda::AdamWArgs a = adamw_scalars(cfg, 0.5f, t);
  Vec pc = p, mc = m, vc = v;
  cuda::adamw_step(dp.p, dm.p, dv.p, p16.p, dg.p, n, a, nullptr);
  adamw_step(&pc, &mc, &vc, g, 0.5f, t, cfg);
  CHECK(dp.get() == pc);
  CHECK(dm.get() == mc);
  CHECK(dv.get() == vc);
  CHECK(rel_error(p16.get(), pc) < 1e-2);
  // Roll back from a state no step made (v = 0 with a gradient), as well as from the step's.
  for (int i = 0; i < n; i += 7) vc[i] = 0.0f;
  Dev<float> dv2(vc);
  cuda::adamw_rollback(dp.p, dm.p, dv2.p, p16.p, dg.p, n, a, nullptr);
  adamw_rollback(&pc, &mc, &vc, g, 0.5f, t, cfg);
  Vec vback = dv2.get();
  CHECK(dp.get() == pc);
  CHECK(dm.get() == mc);
  CHECK(vback == vc);
  for (float x : vback) REQUIRE(x >= 0.0f);
}

TEST_CASE("gradient norm: sum of squares in double, the same bits every time") {
  const int n = 100003;
  Vec g = random(n, 1.0f, 23);
  Dev<float> dg(g);
  double *out = nullptr, *scratch = nullptr;
  REQUIRE(cudaMalloc(&out, sizeof(double)) == cudaSuccess);
  REQUIRE(cudaMalloc(&scratch, cuda::kSumPartials * sizeof(double)) == cudaSuccess);
  double first = 0, again = 0, cpu = 0;
  for (float x : g) cpu += static_cast<double>(x) * x;
  cuda::sum_squares(out, scratch, dg.p, n, nullptr);
  REQUIRE(cudaMemcpy(&first, out, sizeof first, cudaMemcpyDeviceToHost) == cudaSuccess);
  cuda::sum_squares(out, scratch, dg.p, n, nullptr);
  REQUIRE(cudaMemcpy(&again, out, sizeof again, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(first == again);
  CHECK(std::fabs(first - cpu) <= 1e-9 * cpu);
  cudaFree(out);
  cudaFree(scratch);
}

// --- the whole backend -----------------------------------------------------------------------------

GptConfig small_model() {
  GptConfig c;
  c.vocab = 96;
  c.seq = 16;
  c.channels = 64;
  c.heads = 4;
  c.layers = 3;
  c.batch = 2;
  return c;
}

std::vector<std::vector<int>> step_data(const GptConfig& c, int m, int step) {
  std::vector<std::vector<int>> data(m);
  for (int mb = 0; mb < m; ++mb)
    for (int i = 0; i < c.batch * (c.seq + 1); ++i) data[mb].push_back((i * 13 + mb * 7 + step * 3 + i * i) % c.vocab);
  return data;
}

// One training step of virtual stages `groups` (one Compute per group, payloads passed between
// them as the interpreter would), W ops in microbatch order. Returns the mean loss.
double train_step(std::vector<std::unique_ptr<Compute>>& ranks, const GptConfig& c, int m, int step) {
  auto data = step_data(c, m, step);
  for (auto& r : ranks) {
    r->set_step_data(&data);
    r->zero_grad();
  }
  for (int mb = 0; mb < m; ++mb) {
    Payload act;
    for (size_t r = 0; r < ranks.size(); ++r) {
      Payload out;
      ranks[r]->forward(0, mb, mb, r == 0 ? nullptr : &act, r + 1 < ranks.size() ? &out : nullptr);
      act = std::move(out);
    }
    Payload grad;
    for (size_t r = ranks.size(); r-- > 0;) {
      Payload din;
      ranks[r]->backward_input(0, mb, mb, r + 1 == ranks.size() ? nullptr : &grad, r > 0 ? &din : nullptr);
      grad = std::move(din);
    }
  }
  for (int mb = 0; mb < m; ++mb)
    for (auto& r : ranks) r->backward_weight(0, mb, mb);
  std::vector<double> norms(global_tensor_count(c), 0.0);
  for (auto& r : ranks) {
    GradStats g = r->grad_stats();
    REQUIRE_FALSE(g.nonfinite);
    for (size_t i = 0; i < norms.size(); ++i) norms[i] += g.squared_norms[i];
  }
  double norm = global_norm(norms), loss = 0;
  for (auto& r : ranks) r->optimizer_step(norm);
  for (int mb = 0; mb < m; ++mb) {
    double l = 0;
    bool found = false;
    for (auto& r : ranks) found = r->loss(mb, &l) || found;
    REQUIRE(found);
    loss += l;
  }
  return loss / m;
}

std::vector<std::unique_ptr<Compute>> cuda_ranks(const GptConfig& c, int parts, int m) {
  std::vector<std::unique_ptr<Compute>> out;
  for (int r = 0; r < parts; ++r)
    out.push_back(make_cuda_compute(c, {r}, parts, m, 1, AdamWConfig{}, CudaStage{}));
  return out;
}

std::map<int, std::vector<float>> params(const std::vector<std::unique_ptr<Compute>>& ranks) {
  std::map<int, std::vector<float>> out;
  for (const auto& r : ranks)
    for (auto& [id, v] : r->parameters()) out[id] = v;
  return out;
}

TEST_CASE("CUDA backend starts from the CPU backend's weights and tracks its losses") {
  GptConfig c = small_model();
  const int m = 2;
  std::vector<std::unique_ptr<Compute>> gpu = cuda_ranks(c, 1, m), cpu;
  cpu.push_back(make_cpu_compute(c, {0}, 1, m, 1, AdamWConfig{}));
  CHECK(params(gpu) == params(cpu));  // the same fp32 initial values
  for (int step = 0; step < 3; ++step) {
    double lg = train_step(gpu, c, m, step), lc = train_step(cpu, c, m, step);
    CHECK(std::fabs(lg - lc) <= 1e-2 * std::fabs(lc));
  }
}

TEST_CASE("CUDA backend: the same bits whether the model runs as one stage or three") {
  GptConfig c = small_model();
  const int m = 3;
  auto one = cuda_ranks(c, 1, m), three = cuda_ranks(c, 3, m);
  for (int step = 0; step < 2; ++step) CHECK(train_step(one, c, m, step) == train_step(three, c, m, step));
  CHECK(params(one) == params(three));
}

TEST_CASE("CUDA backend: a rank whose embedding chunk is not its first trains as the stages apart do") {
  // Chunks {1, 0}: chunk index 1 embeds. The token groups of the embedding gradient must be there
  // whatever the placement; the bits are those of the two virtual stages on two ranks.
  GptConfig c = small_model();
  const int m = 2;
  auto apart = cuda_ranks(c, 2, m);
  auto both = make_cuda_compute(c, {1, 0}, 2, m, 1, AdamWConfig{}, CudaStage{});
  for (int step = 0; step < 2; ++step) {
    const double want = train_step(apart, c, m, step);
    auto data = step_data(c, m, step);
    both->set_step_data(&data);
    both->zero_grad();
    for (int mb = 0; mb < m; ++mb) {
      Payload act, grad;
      both->forward(1, mb, mb, nullptr, &act);  // virtual stage 0: the embedding
      both->forward(0, mb, mb, &act, nullptr);
      both->backward_input(0, mb, mb, nullptr, &grad);
      both->backward_input(1, mb, mb, &grad, nullptr);
    }
    for (int mb = 0; mb < m; ++mb)
      for (int chunk : {0, 1}) both->backward_weight(chunk, mb, mb);
    GradStats g = both->grad_stats();
    REQUIRE_FALSE(g.nonfinite);
    both->optimizer_step(global_norm(g.squared_norms));
    double loss = 0, l = 0;
    for (int mb = 0; mb < m; ++mb) {
      REQUIRE(both->loss(mb, &l));
      loss += l;
    }
    CHECK(loss / m == want);
  }
  std::map<int, std::vector<float>> together;
  for (auto& [id, v] : both->parameters()) together[id] = v;
  CHECK(together == params(apart));
}

TEST_CASE("CUDA backend: slots hold memory from F to W only, and rollback restores the weights") {
  GptConfig c = small_model();
  const int m = 1;
  auto ranks = cuda_ranks(c, 1, m);
  auto data = step_data(c, m, 0);
  ranks[0]->set_step_data(&data);
  ranks[0]->zero_grad();
  ranks[0]->forward(0, 0, 0, nullptr, nullptr);
  size_t after_f = ranks[0]->activation_bytes();
  ranks[0]->backward_input(0, 0, 0, nullptr, nullptr);
  size_t after_b = ranks[0]->activation_bytes();
  ranks[0]->backward_weight(0, 0, 0);
  CHECK(after_f > 0);
  CHECK(after_b > 0);
  CHECK(ranks[0]->activation_bytes() == 0);
  auto before = params(ranks);
  ranks[0]->optimizer_step(1.0);
  ranks[0]->optimizer_rollback(1.0);
  for (auto& [id, v] : params(ranks))
    for (size_t i = 0; i < v.size(); ++i) REQUIRE(std::fabs(v[i] - before[id][i]) <= 1e-5f * std::max(1.0f, std::fabs(before[id][i])));
}

TEST_CASE("CUDA backend: checkpoints move between the CPU and CUDA backends unchanged") {
  GptConfig c = small_model();
  const int m = 2;
  std::vector<std::unique_ptr<Compute>> cpu;
  cpu.push_back(make_cpu_compute(c, {0}, 1, m, 1, AdamWConfig{}));
  train_step(cpu, c, m, 0);  // non-trivial weights and moments
  std::string state, back, err;
  REQUIRE(cpu[0]->save_state(&state));
  auto gpu = cuda_ranks(c, 1, m);
  REQUIRE(gpu[0]->load_state(state, &err));
  CHECK(params(gpu) == params(cpu));
  REQUIRE(gpu[0]->save_state(&back));
  CHECK(back == state);
  CHECK_FALSE(gpu[0]->load_state(state.substr(0, state.size() - 4), &err));
}

}  // namespace
}  // namespace zbpp
