// OpTimer (runtime/compute.h) for work enqueued on one CUDA stream: an event before and after
// each op, read once the caller needs the times. So an op's call returns as soon as its kernels are
// enqueued (no host round trip per op), and its span is when the GPU ran it, not when the host
// asked for it.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <utility>
#include <vector>

#include "runtime/compute.h"

namespace zbpp::cuda {

class StreamTimer final : public OpTimer {
 public:
  explicit StreamTimer(cudaStream_t stream) : stream_(stream) {}
  ~StreamTimer() override;
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;

  void start() override;
  void begin() override;
  void end() override;
  bool collect(std::vector<std::pair<double, double>>* times, std::string* err) override;
  bool device_failed(int* first) override;

 private:
  cudaEvent_t record(const char* what);
  void forget_marks();  // their events become spare

  cudaStream_t stream_;
  cudaEvent_t origin_ = nullptr;       ///< recorded at start(): time 0
  std::vector<cudaEvent_t> marks_;     ///< begin, end, begin, end, ... since the last collect
  std::vector<cudaEvent_t> spare_;     ///< events to record again
  size_t finished_ = 0;                ///< ops of marks_ seen finished without error
};

}  // namespace zbpp::cuda
