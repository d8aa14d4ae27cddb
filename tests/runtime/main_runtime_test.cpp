// The Catch2 main of runtime_tests: first the restart zbrun also makes where OpenBLAS fell back to
// slow kernels, so the in-process runs here compute with the same kernels as the zbrun processes
// the tests start (their digests are compared).
#include "tests/catch_run.h"

#include "runtime/backend/cpu/compute_cpu.h"

int main(int argc, char** argv) {
  zbpp::cpu_restart_with_faster_kernels(argv);
  return zbpp::test::run_catch(argc, argv);
}
