// zbrun: replays a lowered schedule file, one rank per MPI process (or one thread each with
// --local). All logic lives in zbrun_cli.cpp and the runtime library.
#include <exception>
#include <iostream>
#include <string>

#include "cli/zbrun_cli.h"
#include "runtime/backend/cpu/compute_cpu.h"

int main(int argc, char** argv) {
  zbpp::cpu_restart_with_faster_kernels(argv);
#ifdef ZBPP_HAVE_MPI
  const bool use_mpi = true;
#else
  const bool use_mpi = false;
#endif
  // Last resort: bad input and rank failures are reported where they happen, so anything that
  // reaches here is a bug; say which command met it and exit 1 instead of ending in std::terminate.
  std::string command = "zbrun";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  try {
    return zbpp::run_zbrun(argc, argv, std::cout, std::cerr, use_mpi);
  } catch (const std::exception& e) {
    std::cerr << "zbrun: internal error in '" << command << "': " << e.what() << " (please report it)\n";
  } catch (...) {
    std::cerr << "zbrun: internal error in '" << command << "': unknown exception (please report it)\n";
  }
  return 1;
}
