// --version of both programs: the build's version and git commit, and the libraries CMake found
// (each line says what it enables, so "not found" says what is missing). Alone in its file: the
// generated header changes with every commit, and only this file recompiles.
#include "cli/cli_common.h"

#include <algorithm>

#include "zbpp_build_info.h"

namespace zbpp {

std::string version_text(const std::string& program) {
  auto line = [](const std::string& name, const char* found, const char* enables) {
    std::string what = name + ": " + (*found ? found : "not found");
    what.resize(std::max<size_t>(what.size() + 2, 28), ' ');
    return "  " + what + enables + "\n";
  };
  return program + " " + ZBPP_VERSION + " (git " + ZBPP_GIT_COMMIT + ")\nbuilt with:\n" +
         line("CBC", ZBPP_BUILT_CBC, "zbplan plan --method ilp") +
         line("OpenBLAS", ZBPP_BUILT_OPENBLAS, "zbrun's CPU backend") +
         line("MPI", ZBPP_BUILT_MPI, "zbrun under mpirun") +
         line("CUDA", ZBPP_BUILT_CUDA, "zbrun --backend cuda, --single-gpu") +
         line("NCCL", ZBPP_BUILT_NCCL, "zbrun --backend cuda under mpirun");
}

}  // namespace zbpp
