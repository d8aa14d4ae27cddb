// A command-line value that names a file. One that starts with '-' is almost always a flag the
// option before it swallowed (`zbrun s.json --metrics --check` would write metrics to a file named
// "--check" and train), so the CLIs refuse it rather than write to it.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace zbpp {

inline CLI::Validator file_name() {
  return CLI::Validator(
      [](std::string& v) {
        return !v.empty() && v[0] == '-' ? "'" + v + "' looks like a flag, not a file name" : std::string();
      },
      "FILE");
}

/// The same for a directory (shown as DIR in --help).
inline CLI::Validator dir_name() {
  return CLI::Validator(
      [](std::string& v) {
        return !v.empty() && v[0] == '-' ? "'" + v + "' looks like a flag, not a directory name" : std::string();
      },
      "DIR");
}

}  // namespace zbpp
