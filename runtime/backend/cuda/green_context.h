// SM partitions of one GPU for --single-gpu: one CUDA green context per pipeline stage, so stages
// run side by side as they would on separate GPUs. Green contexts are driver API only; the entry
// points are loaded with cudaGetDriverEntryPointByVersion (no -lcuda).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

namespace zbpp {

class GreenPartitions {
 public:
  /// Splits `device` into `parts` equal partitions (in one split call; on Hopper sizes are
  /// multiples of 8 SMs). Null with *why when green contexts are unavailable or the GPU is too
  /// small; callers then fall back to one plain stream per stage.
  static std::unique_ptr<GreenPartitions> create(int device, int parts, std::string* why);
  ~GreenPartitions();

  int parts() const { return static_cast<int>(parts_.size()); }
  int sm_count(int part) const { return parts_.at(part).sm_count; }
  /// Makes partition `part` current in the calling thread: runtime API calls there use its SMs.
  void enter(int part) const;
  /// A stream of partition `part` (owned here, destroyed with the partitions).
  cudaStream_t stream(int part) const { return parts_.at(part).stream; }
  /// "4 partitions of 32 SMs (132 on the GPU)".
  std::string describe() const;

 private:
  struct Part {
    void* green = nullptr;    // CUgreenCtx
    void* context = nullptr;  // CUcontext of it
    cudaStream_t stream = nullptr;
    int sm_count = 0;
  };
  std::vector<Part> parts_;
  int total_sms_ = 0;
};

}  // namespace zbpp
