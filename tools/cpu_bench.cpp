// zbpp_cpu_bench: the CPU backend's F, B and W ops against cblas_sgemm alone on the same GEMM shapes.
//
// For one model on one core (one virtual stage holding every block), it times whole F, B and W ops
// of the backend and, in turn with them, just the GEMMs each op makes (same shapes, layouts and beta,
// on buffers of random values), and prints min/median/max times, GFLOP/s of the linear layers' FLOPs
// (model.h gemm_flops) and the ratio of the two: how much of the GEMM rate an op keeps once
// attention, LayerNorm, GELU and the loss are around it. docs/benchmarks.md records its output.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <cblas.h>

#include <CLI/CLI.hpp>

#include "runtime/backend/cpu/compute_cpu.h"
#include "runtime/model.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
  double min = 0, median = 0, max = 0;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

// One linear layer's three GEMMs, as runtime/backend/cpu/layers.cpp calls them.
struct Linear {
  int in, out;
  std::vector<float> x, w, y, dy, dx, dw;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

int main(int argc, char** argv) {
  zbpp::cpu_restart_with_faster_kernels(argv);
  CLI::App app{"The CPU backend's F, B and W ops against cblas_sgemm alone on their GEMM shapes (one core)."};
  std::string model = "c256";
  int repeats = 8;
  app.add_option("--model", model, std::string("a preset (") + zbpp::kGptPresets + ") or a model JSON file")
      ->capture_default_str();
  app.add_option("--repeats", repeats, "timed microbatches of each")->check(CLI::Range(3, 1000))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::string err;
  auto config = zbpp::load_gpt_config(model, &err);
  if (!config) {
    std::fprintf(stderr, "zbpp_cpu_bench: %s\n", err.c_str());
    return 1;
  }
  const zbpp::GptConfig& c = *config;
  zbpp::cpu_set_threads(1);
  const int BT = c.tokens(), C = c.channels;
  const double flops = zbpp::gemm_flops(c, 0, 1);

  // The same GEMMs alone: per block qkv, attention projection, MLP up and down; then the LM head.
  std::mt19937 rng(1);
  std::vector<Linear> layers;
  for (int l = 0; l < c.layers; ++l)
    for (auto [in, out] : {std::pair{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}})
      layers.push_back(Linear{in, out, {}, {}, {}, {}, {}, {}});
  layers.push_back(Linear{C, c.vocab, {}, {}, {}, {}, {}, {}});
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (Linear& L : layers) {
    auto fill = [&](std::vector<float>* v, long n) {
      v->resize(n);
      for (float& x : *v) x = normal(rng);
    };
    fill(&L.x, static_cast<long>(BT) * L.in), fill(&L.w, static_cast<long>(L.out) * L.in);
    fill(&L.y, static_cast<long>(BT) * L.out), fill(&L.dy, static_cast<long>(BT) * L.out);
    fill(&L.dx, static_cast<long>(BT) * L.in), fill(&L.dw, static_cast<long>(L.out) * L.in);
  }
  auto gemms_alone = [&](double t[3]) {
    for (Linear& L : layers) {
      auto t0 = Clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BT, L.out, L.in, 1.0f, L.x.data(), L.in, L.w.data(), L.in,
                  1.0f, L.y.data(), L.out);
      t[0] += seconds_since(t0);
      t0 = Clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BT, L.in, L.out, 1.0f, L.dy.data(), L.out, L.w.data(),
                  L.in, 1.0f, L.dx.data(), L.in);
      t[1] += seconds_since(t0);
      t0 = Clock::now();
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, L.out, L.in, BT, 1.0f, L.dy.data(), L.out, L.x.data(),
                  L.in, 1.0f, L.dw.data(), L.in);
      t[2] += seconds_since(t0);
    }
  };

  // The backend's F, B and W of one microbatch, then the same GEMMs alone, in turn (so both see the
  // same machine), `repeats` times after one warm-up round.
  const int m = repeats + 1;
  auto backend = zbpp::make_cpu_compute(c, {0}, 1, m, 1, zbpp::AdamWConfig{});
  std::vector<std::vector<int>> tokens(m);
  for (auto& t : tokens)
    for (int i = 0; i < c.batch * (c.seq + 1); ++i) t.push_back(static_cast<int>(rng() % c.vocab));
  backend->set_step_data(&tokens);
  backend->zero_grad();
  std::vector<double> op_seconds[3], gemm_seconds[3];
  for (int mb = 0; mb < m; ++mb) {
    double op[3];
    auto t0 = Clock::now();
    backend->forward(0, mb, 0, nullptr, nullptr);
    op[0] = seconds_since(t0);
    t0 = Clock::now();
    backend->backward_input(0, mb, 0, nullptr, nullptr);
    op[1] = seconds_since(t0);
    t0 = Clock::now();
    backend->backward_weight(0, mb, 0);
    op[2] = seconds_since(t0);
    double alone[3] = {0, 0, 0};
    gemms_alone(alone);
    if (mb == 0) continue;  // warm-up
    for (int k = 0; k < 3; ++k) op_seconds[k].push_back(op[k]), gemm_seconds[k].push_back(alone[k]);
  }

  std::printf("model %s: %d layers, C=%d, T=%d, batch %d, vocab %d; %.4f GFLOP of linear-layer GEMMs per op; "
              "1 thread, %d microbatches each\n",
              c.name.c_str(), c.layers, C, c.seq, c.batch, c.vocab, flops * 1e-9, repeats);
  std::printf("%-3s %-28s %8s   %-28s %8s   %s\n", "op", "backend op ms min/med/max", "GFLOP/s",
              "cblas_sgemm alone min/med/max", "GFLOP/s", "op/GEMM rate");
  const char* names[3] = {"F", "B", "W"};
  for (int k = 0; k < 3; ++k) {
    Stats op = stats(op_seconds[k]), gemm = stats(gemm_seconds[k]);
    char a[64], b[64];
    std::snprintf(a, sizeof a, "%.2f / %.2f / %.2f", op.min * 1e3, op.median * 1e3, op.max * 1e3);
    std::snprintf(b, sizeof b, "%.2f / %.2f / %.2f", gemm.min * 1e3, gemm.median * 1e3, gemm.max * 1e3);
    std::printf("%-3s %-28s %8.1f   %-28s %8.1f   %.2f\n", names[k], a, flops / op.median * 1e-9, b,
                flops / gemm.median * 1e-9, gemm.median / op.median);
  }
  return 0;
}
