// Shared by the command-line harnesses (fuzz_zbplan_cli, fuzz_zbrun_cli): the input as an argument
// list, a private working directory of real files that every run may read or overwrite and that is
// restored after it, and the filter that keeps inputs cheap.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"

namespace zbpp::fuzz {

/// What every command line must end with: exit code 0, 1 or 2, and a message when it fails.
inline void require_cli_outcome(const std::string& program, int code, const std::string& output) {
  require(code >= 0 && code <= 2, (program + " returned an exit code other than 0, 1 or 2").c_str());
  require(code == 0 || !output.empty(), (program + " failed without saying why").c_str());
}

/// The input, one argument per line.
inline std::vector<std::string> args_from_bytes(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string arg;
  for (size_t i = 0; i <= size; ++i) {
    if (i == size || data[i] == '\n') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += static_cast<char>(data[i]);
    }
  }
  return args;
}

/// Whether the argument holds a number above `limit` anywhere (decimal, hex, octal or exponent form).
inline bool has_big_number(const std::string& arg, double limit) {
  for (size_t i = 0; i < arg.size(); ++i) {
    if (arg[i] < '0' || arg[i] > '9') continue;
    const char* at = arg.c_str() + i;
    if (std::strtod(at, nullptr) > limit || static_cast<double>(std::strtoull(at, nullptr, 0)) > limit) return true;
  }
  return false;
}

/// A private temporary directory, made the working directory and removed at exit, holding files
/// that restore() brings back after each run (most runs write nothing, so only changed files are
/// rewritten: that keeps the harness fast).
class FixtureDir {
 public:
  explicit FixtureDir(const std::string& prefix) {
    namespace fs = std::filesystem;
    std::string dir = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(dir.data())) std::abort();
    fs::current_path(dir);
    dir_() = dir;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(dir_(), ec);
    });
  }

  /// Keeps the file `name` (already written in the directory) as it is now.
  void keep(const std::string& name) {
    std::ifstream in(name, std::ios::binary);
    fixtures_[name] = {std::string(std::istreambuf_iterator<char>(in), {}), std::filesystem::last_write_time(name)};
  }

  /// Whether the directory holds the kept files only, none of them rewritten (zbrun --check).
  bool untouched() const {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::current_path()))
      if (!fixtures_.count(entry.path().filename().string())) return false;
    for (const auto& [name, fixture] : fixtures_)
      if (fs::last_write_time(name, ec) != fixture.written || fs::file_size(name, ec) != fixture.text.size())
        return false;
    return true;
  }

  /// Removes what a run wrote and rewrites the kept files it changed.
  void restore() {
    namespace fs = std::filesystem;
    for (const auto& entry : fs::directory_iterator(fs::current_path()))
      if (!fixtures_.count(entry.path().filename().string())) fs::remove_all(entry.path());
    for (auto& [name, fixture] : fixtures_) {
      std::error_code ec;
      if (fs::is_regular_file(name, ec) && fs::last_write_time(name, ec) == fixture.written &&
          fs::file_size(name, ec) == fixture.text.size())
        continue;
      std::ofstream(name, std::ios::binary) << fixture.text;
      fixture.written = fs::last_write_time(name, ec);
    }
  }

 private:
  struct Fixture {
    std::string text;
    std::filesystem::file_time_type written;
  };
  static std::string& dir_() {
    static std::string dir;
    return dir;
  }
  std::map<std::string, Fixture> fixtures_;
};

}  // namespace zbpp::fuzz
