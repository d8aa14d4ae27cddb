// What both programs' mains do around their command line: what escapes it is reported with the
// command line and exit 1 instead of std::terminate. Kept apart from cli_common.h, so that the
// mains do not compile CLI11.
#pragma once

#include <functional>
#include <string>

namespace zbpp {

/// Runs `body` and returns its exit code. Running out of memory (ulimit -v, the machine's) is said as
/// such, with what to do; anything else that escapes is a bug to report. Both exit 1.
int run_main(const std::string& program, int argc, const char* const* argv, const std::function<int()>& body);

}  // namespace zbpp
