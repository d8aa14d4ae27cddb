// The CPU backend's GEMMs and its thread pool, with bits that do not depend on the thread count or
// on how OpenBLAS would split work over threads. OpenBLAS always runs single-threaded here; an
// output is cut into tiles whose grid depends on its shape alone, each tile is one single-threaded
// cblas_sgemm call, and threads take whole tiles. Every tile is computed by the same call whichever
// thread runs it, so 1, 2 or N threads give the same bits on every OpenBLAS kernel set (Haswell's
// kernels, for one, sum a row differently when OpenBLAS's own threads split the rows elsewhere).
#pragma once

#include <functional>

namespace zbpp::cpu {

/// Threads that run tiles, process-wide (the caller counts as one). Call between runs, not during.
void set_threads(int threads);
int threads();

/// Runs task(0) .. task(count - 1), each exactly once, spread over the pool's threads and the
/// caller; returns when all have finished. Tasks must write disjoint memory.
void parallel_for(int count, const std::function<void(int)>& task);

/// Whether a matrix operand is read transposed.
enum class Trans { kNo, kYes };

/// Row-major C (M,N) = alpha op(A) op(B) + beta C, op(A) (M,K), op(B) (K,N), as cblas_sgemm, computed
/// in tiles of at most kTileRows x kTileCols output elements (the grid set by M and N only).
void gemm(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc);

/// Single-threaded cblas_sgemm, for callers that parallelise over their own independent products.
void gemm_one(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
              float beta, float* C, int ldc);

inline constexpr int kTileRows = 256, kTileCols = 256;

}  // namespace zbpp::cpu
