// What zbplan and zbrun share on the command line, so both follow one rule (README, "Exit codes"):
// "did you mean" for methods, flags, subcommands and enum values, the --help layout (a metavar and
// the default of every option), --version, and turning CLI11's parse errors into messages that say
// what to do, with exit code 2.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/spelling.h"

namespace zbpp {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  ///< invalid input, a failed check, a failed run
constexpr int kExitUsage = 2;   ///< the command line itself is wrong, whatever the files hold

/// A value that must be one of `known`, in any case (it is stored in the case `known` spells it:
/// add it with ->transform, as ->check would drop the change).
/// Anything else is refused as "unknown WHAT 'x'; did you mean 'y'? (known: a, b)". `aliases` map
/// more accepted spellings (any case) to what is stored.
CLI::Validator one_of(const std::vector<std::string>& known, const std::string& what,
                      const std::vector<std::pair<std::string, std::string>>& aliases = {});

/// Sets up an app the way both programs show it: defaults of every option captured for --help
/// (clear one with ->default_str("") where the value is a "not given" marker), the help layout,
/// and --version. Call before adding options and subcommands.
void set_up_app(CLI::App* app, const std::string& program);

/// Parses the command line. Returns -1 to go on, or the exit code to return at once: 0 after
/// --help or --version (printed to `out`), 2 after a parse error (printed to `err`: what is wrong,
/// the closest flag or subcommand for an unknown one, and where to read the usage).
int parse_command_line(CLI::App* app, int argc, const char* const* argv, std::ostream& out, std::ostream& err);

/// A usage error found after parsing (flags that contradict each other, a missing part of the
/// problem): prints it as parse errors are printed and returns 2. `sub` names the subcommand for
/// the help hint ("" for none).
int usage_error(std::ostream& err, const std::string& program, const std::string& sub, const std::string& message);

/// "zbplan 0.1.0 (git 1234abcd5678)" and what the build found: CBC, OpenBLAS, MPI, CUDA, NCCL.
std::string version_text(const std::string& program);

}  // namespace zbpp
