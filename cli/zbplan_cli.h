// zbplan's command line, as a function so tests can run it in-process with captured output.
#pragma once

#include <ostream>

namespace zbpp {

/// Runs `zbplan` with argv; writes results to `out` and errors to `err`. Returns the exit code:
/// 0 success, 1 invalid input or schedule, 2 bad command line.
int run_zbplan(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace zbpp
