// The Catch2 main of the GPU tests: exits 77 (ctest's SKIP_RETURN_CODE) when no GPU is visible,
// so CI without a GPU reports them as skipped rather than passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "runtime/cuda/compute_cuda.h"

int main(int argc, char** argv) {
  if (zbpp::cuda_device_count() == 0) {
    std::printf("no GPU visible: the CUDA tests are skipped\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
