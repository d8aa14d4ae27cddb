// The Catch2 main of the GPU tests. Exits 77 (ctest's SKIP_RETURN_CODE) only where there really is
// no GPU, so CI without one reports them as skipped rather than passed. Where nvidia-smi lists a
// GPU but CUDA sees none (a driver too old for this CUDA, a container without the device), or the
// driver cannot be used, the tests FAIL: a GPU machine must never pass them by skipping.
#include "tests/catch_run.h"

#include <cstdio>
#include <string>

#include "runtime/backend/cuda/compute_cuda.h"

namespace {

// Lines of `nvidia-smi -L` ("GPU 0: NVIDIA H100 ..."); 0 where nvidia-smi is missing or fails.
int nvidia_smi_gpus() {
  FILE* pipe = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!pipe) return 0;
  int gpus = 0;
  char line[512];
  while (std::fgets(line, sizeof line, pipe))
    if (std::string(line).rfind("GPU ", 0) == 0) ++gpus;
  pclose(pipe);
  return gpus;
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  const int cuda_gpus = zbpp::cuda_device_count(&why);
  if (cuda_gpus == 0) {
    const int listed = nvidia_smi_gpus();
    if (!why.empty() || listed > 0) {
      std::printf("FAILED: nvidia-smi lists %d GPU(s) but CUDA sees none%s%s\n", listed, why.empty() ? "" : ": ",
                  why.c_str());
      return 1;
    }
    std::printf("no GPU visible: the CUDA tests are skipped\n");
    return 77;
  }
  return zbpp::test::run_catch(argc, argv);
}
