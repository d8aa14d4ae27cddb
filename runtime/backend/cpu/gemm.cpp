// Tiled GEMMs over a small thread pool (see gemm.h). One mutex guards the pool's queue and every
// job's counters: a tile is ~0.1 ms or more of work, so the lock is never what limits it, and a job
// can live on its caller's stack (no worker touches it after the caller has seen its last tile done).
#include "runtime/backend/cpu/gemm.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <cblas.h>

namespace zbpp::cpu {

namespace {

struct Job {
  const std::function<void(int)>* task = nullptr;
  int count = 0, next = 0, done = 0;
};

class Pool {
 public:
  Pool() { openblas_set_num_threads(1); }  // OpenBLAS's own split would decide the bits: never use it
  ~Pool() { resize(1); }

  void resize(int threads) {
    std::vector<std::thread> old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      old.swap(workers_);
    }
    work_.notify_all();
    for (std::thread& t : old) t.join();
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
    threads_ = std::max(1, threads);
  }

  int threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_;
  }

  void run(int count, const std::function<void(int)>& task) {
    if (count <= 0) return;
    Job job;
    job.task = &task;
    job.count = count;
    bool shared = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      shared = !workers_.empty() && count > 1;
      if (shared) queue_.push_back(&job);
    }
    if (!shared) {  // nobody to share with: run it here, in order
      for (int i = 0; i < count; ++i) task(i);
      return;
    }
    work_.notify_all();
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      const int i = claim(&job);
      if (i < 0) break;
      lock.unlock();
      task(i);
      lock.lock();
      ++job.done;
    }
    done_.wait(lock, [&] { return job.done == job.count; });
  }

 private:
  // The next tile of `job`, or -1 when all are taken; takes the job off the queue with its last tile.
  // Called with mu_ held.
  int claim(Job* job) {
    if (job->next >= job->count) return -1;
    const int i = job->next++;
    if (job->next == job->count) queue_.erase(std::find(queue_.begin(), queue_.end(), job));
    return i;
  }

  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Job* job = queue_.front();
      const int i = claim(job);
      lock.unlock();
      (*job->task)(i);
      lock.lock();
      if (++job->done == job->count) done_.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<Job*> queue_;
  std::vector<std::thread> workers_;
  int threads_ = 1;
  bool stop_ = false;
};

Pool& pool() {
  static Pool instance;
  return instance;
}

CBLAS_TRANSPOSE cblas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

}  // namespace

void set_threads(int threads) { pool().resize(threads); }
int threads() { return pool().threads(); }
void parallel_for(int count, const std::function<void(int)>& task) { pool().run(count, task); }

void gemm_one(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
              float beta, float* C, int ldc) {
  pool();  // OpenBLAS set to one thread before its first call
  cblas_sgemm(CblasRowMajor, cblas(ta), cblas(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc) {
  const int row_tiles = (M + kTileRows - 1) / kTileRows, col_tiles = (N + kTileCols - 1) / kTileCols;
  parallel_for(row_tiles * col_tiles, [&](int t) {
    const int i = t / col_tiles * kTileRows, j = t % col_tiles * kTileCols;
    const int rows = std::min(kTileRows, M - i), cols = std::min(kTileCols, N - j);
    // Row i of op(A): A + i*lda untransposed, column i (A + i) transposed; likewise column j of op(B).
    const float* a = ta == Trans::kNo ? A + static_cast<long>(i) * lda : A + i;
    const float* b = tb == Trans::kNo ? B + j : B + static_cast<long>(j) * ldb;
    gemm_one(ta, tb, rows, cols, K, alpha, a, lda, b, ldb, beta, C + static_cast<long>(i) * ldc + j, ldc);
  });
}

}  // namespace zbpp::cpu
