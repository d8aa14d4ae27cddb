// zbrun's command line as a function, so tests can run the in-process (--local) mode directly.
#pragma once

#include <ostream>

namespace zbpp {

/// Runs zbrun. `use_mpi` is false when the program was built without MPI. Exit codes: 0 success,
/// 1 a failed run or bad input (the message names the rank and op), 2 bad command line.
int run_zbrun(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool use_mpi);

}  // namespace zbpp
