// Helpers for tests that drive zbplan and zbrun through their CLIs, in-process (zbrun --local).
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "cli/zbplan_cli.h"
#include "cli/zbrun_cli.h"

namespace zbpp::test {

struct Run {
  int code;
  std::string out, err;
};

inline Run call(int (*fn)(int, const char* const*, std::ostream&, std::ostream&), std::vector<std::string> args) {
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = fn(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

inline int zbrun_local(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  return run_zbrun(argc, argv, out, err, false);
}

inline std::string tmp(const std::string& name) { return std::string(ZBPP_TEST_TMP) + "/" + name; }

inline std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// How often `needle` occurs in `text`.
inline size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Plans `method` for the tiny model's test problem and returns the schedule path. `tag` keeps
// test cases (which ctest may run at the same time) from sharing files.
inline std::string plan(const std::string& tag, const std::string& method, int p, int m, std::vector<std::string> extra = {}) {
  std::string path = tmp(tag + "_" + method + "_p" + std::to_string(p) + "_m" + std::to_string(m) + ".json");
  std::vector<std::string> args = {"zbplan", "plan", "--method", method, "-p", std::to_string(p), "-m", std::to_string(m),
                                   "--tf", "1", "--tb", "1", "--tw", "0.5", "-o", path};
  args.insert(args.end(), extra.begin(), extra.end());
  Run r = call(run_zbplan, args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return path;
}

// Runs a schedule (with more zbrun flags in `extra`) and returns (per-step losses as printed, final weights digest).
inline std::pair<std::vector<std::string>, std::string> train(const std::string& schedule, int steps, const std::string& lr = "0.001",
                                                              std::vector<std::string> extra = {}) {
  std::string metrics = schedule + ".metrics.jsonl";
  std::vector<std::string> args = {"zbrun", schedule, "--local", "--steps", std::to_string(steps), "--quiet", "--metrics", metrics,
                                   "--lr", lr};
  args.insert(args.end(), extra.begin(), extra.end());
  Run r = call(zbrun_local, args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::vector<std::string> losses;
  std::ifstream in(metrics);
  std::string line, digest;
  while (std::getline(in, line)) {
    auto at = line.find("\"loss\": ");
    if (at != std::string::npos) losses.push_back(line.substr(at + 8, line.find(',', at) - at - 8));
    auto d = line.find("\"weights_digest\": \"");
    if (d != std::string::npos) digest = line.substr(d + 19, 16);
  }
  REQUIRE(static_cast<int>(losses.size()) == steps);
  REQUIRE(digest.size() == 16);
  return {losses, digest};
}


}  // namespace zbpp::test
