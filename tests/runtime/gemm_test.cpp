// The CPU backend's tiled GEMMs and thread pool (runtime/backend/cpu/gemm.h): every task runs once,
// concurrent callers share the pool, and a GEMM's bits do not depend on the thread count.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "runtime/backend/cpu/gemm.h"

using zbpp::cpu::Trans;

namespace {

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// The pool as the tests found it, restored when a test ends.
struct ThreadsRestored {
  int before = zbpp::cpu::threads();
  ~ThreadsRestored() { zbpp::cpu::set_threads(before); }
};

}  // namespace

TEST_CASE("gemm: parallel_for runs every task exactly once, for concurrent callers too") {
  ThreadsRestored restore;
  for (int threads : {1, 2, 3}) {
    zbpp::cpu::set_threads(threads);
    CHECK(zbpp::cpu::threads() == threads);
    std::vector<std::atomic<int>> runs(4 * 37);
    std::vector<std::thread> callers;
    for (int c = 0; c < 4; ++c)
      callers.emplace_back([&, c] { zbpp::cpu::parallel_for(37, [&](int i) { ++runs[c * 37 + i]; }); });
    for (auto& t : callers) t.join();
    for (auto& r : runs) CHECK(r == 1);
  }
}

TEST_CASE("gemm: tiled products equal the plain sum and give the same bits on 1, 2 or 3 threads") {
  ThreadsRestored restore;
  // Shapes past the tile sizes in both directions, with both transposes.
  const int M = 300, N = 530, K = 70;
  for (Trans ta : {Trans::kNo, Trans::kYes})
    for (Trans tb : {Trans::kNo, Trans::kYes}) {
      const auto A = random_values(static_cast<size_t>(M) * K, 1), B = random_values(static_cast<size_t>(K) * N, 2);
      const int lda = ta == Trans::kNo ? K : M, ldb = tb == Trans::kNo ? N : K;
      auto a = [&](int i, int k) { return ta == Trans::kNo ? A[static_cast<size_t>(i) * lda + k] : A[static_cast<size_t>(k) * lda + i]; };
      auto b = [&](int k, int j) { return tb == Trans::kNo ? B[static_cast<size_t>(k) * ldb + j] : B[static_cast<size_t>(j) * ldb + k]; };
      std::vector<std::vector<float>> results;
      for (int threads : {1, 2, 3}) {
        zbpp::cpu::set_threads(threads);
        std::vector<float> C(static_cast<size_t>(M) * N, 0.5f);  // beta = 1: accumulates onto it
        zbpp::cpu::gemm(ta, tb, M, N, K, 2.0f, A.data(), lda, B.data(), ldb, 1.0f, C.data(), N);
        results.push_back(C);
      }
      CHECK(std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(float)) == 0);
      CHECK(std::memcmp(results[0].data(), results[2].data(), results[0].size() * sizeof(float)) == 0);
      double worst = 0;
      for (int i = 0; i < M; i += 7)
        for (int j = 0; j < N; j += 5) {
          double sum = 0;
          for (int k = 0; k < K; ++k) sum += static_cast<double>(a(i, k)) * b(k, j);
          worst = std::max(worst, std::abs(0.5 + 2 * sum - results[0][static_cast<size_t>(i) * N + j]));
        }
      CHECK(worst < 1e-4);
    }
}
