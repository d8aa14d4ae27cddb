// zbrun: replays a lowered schedule file, one rank per MPI process (or one thread each with
// --local). All logic lives in zbrun_cli.cpp and the runtime library.
#include <iostream>

#include "cli/run_main.h"
#include "cli/zbrun_cli.h"
#include "runtime/backend/cpu/compute_cpu.h"

int main(int argc, char** argv) {
  zbpp::cpu_restart_with_faster_kernels(argv);
#ifdef ZBPP_HAVE_MPI
  const bool use_mpi = true;
#else
  const bool use_mpi = false;
#endif
  // Last resort: bad input is reported where it is met, so what escapes is a bug, or the
  // process running out of memory; run_main says which.
  return zbpp::run_main("zbrun", argc, argv, [&] { return zbpp::run_zbrun(argc, argv, std::cout, std::cerr, use_mpi); });
}
