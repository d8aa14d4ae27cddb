// StreamTimer (see stream_timer.h).
#include "runtime/cuda/stream_timer.h"

#include <algorithm>

#include "runtime/cuda/check.h"

namespace zbpp::cuda {

StreamTimer::~StreamTimer() {
  // Errors are ignored: this runs on failure paths too.
  for (cudaEvent_t e : marks_) cudaEventDestroy(e);
  for (cudaEvent_t e : spare_) cudaEventDestroy(e);
  if (origin_) cudaEventDestroy(origin_);
}

cudaEvent_t StreamTimer::record(const char* what) {
  cudaEvent_t e;
  if (spare_.empty()) {
    ZBPP_CK(cudaEventCreate(&e), what);  // with timing, unlike make_event's
  } else {
    e = spare_.back();
    spare_.pop_back();
  }
  ZBPP_CK(cudaEventRecord(e, stream_), what);
  return e;
}

void StreamTimer::forget_marks() {
  spare_.insert(spare_.end(), marks_.begin(), marks_.end());
  marks_.clear();
  finished_ = 0;
}

void StreamTimer::start() {
  forget_marks();
  if (!origin_) ZBPP_CK(cudaEventCreate(&origin_), "the step's time origin");
  ZBPP_CK(cudaEventRecord(origin_, stream_), "the step's time origin");
}

void StreamTimer::begin() { marks_.push_back(record("an op's start")); }

void StreamTimer::end() {
  marks_.push_back(record("an op's end"));
  // Without waiting: the ops already done, so that a later fault is placed after them.
  while (2 * finished_ + 1 < marks_.size() && cudaEventQuery(marks_[2 * finished_ + 1]) == cudaSuccess) ++finished_;
}

bool StreamTimer::collect(std::vector<std::pair<double, double>>* times, std::string* err) {
  times->clear();
  auto ms_since_origin = [&](cudaEvent_t e, float* ms) {
    cudaError_t rc = cudaEventSynchronize(e);
    if (rc == cudaSuccess) rc = cudaEventElapsedTime(ms, origin_, e);
    if (rc != cudaSuccess) *err = std::string("the device failed running the ops: ") + cudaGetErrorString(rc);
    return rc == cudaSuccess;
  };
  for (size_t k = 0; k + 1 < marks_.size(); k += 2) {
    float begin = 0, end = 0;
    if (!ms_since_origin(marks_[k], &begin) || !ms_since_origin(marks_[k + 1], &end)) return false;
    times->push_back({begin / 1e3, end / 1e3});
    finished_ = std::max(finished_, k / 2 + 1);
  }
  forget_marks();
  return true;
}

bool StreamTimer::device_failed(int* first) {
  const cudaError_t rc = cudaStreamQuery(stream_);
  if (rc == cudaSuccess || rc == cudaErrorNotReady) return false;
  *first = static_cast<int>(finished_);
  return true;
}

}  // namespace zbpp::cuda
