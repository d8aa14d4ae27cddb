// zbrun: replays a lowered schedule file, one rank per MPI process (or one thread each with
// --local). All logic lives in zbrun_cli.cpp and the runtime library.
#include <iostream>

#include "runtime/zbrun_cli.h"

int main(int argc, char** argv) {
#ifdef ZBPP_HAVE_MPI
  const bool use_mpi = true;
#else
  const bool use_mpi = false;
#endif
  return zbpp::run_zbrun(argc, argv, std::cout, std::cerr, use_mpi);
}
