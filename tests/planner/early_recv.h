// Issue 18's edited file, shared by zbplan's and zbrun's tests: a ZB-H1 plan (p=2, m=2, every op
// 1 unit) with stage 0's RECV_B1 moved before its W0, so the stage waits one unit for stage 1's B1
// and the planned span grows from 7 to 8.
#pragma once

#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace zbpp::test {

/// The file at `planned` (zbplan plan --method zb-h1 -p 2 -m 2 --tf 1 --tb 1 --tw 1) with the
/// RECV moved; its recorded figures are those of the plan before the edit.
inline nlohmann::json with_early_recv(const std::string& planned) {
  auto j = nlohmann::json::parse(std::ifstream(planned));
  REQUIRE(j["span"] == 7.0);
  auto& st0 = j["stages"][0];
  REQUIRE(st0[8]["type"] == "W");
  REQUIRE(st0[9]["type"] == "RECV_B");
  auto recv = st0[9];
  st0.erase(9);
  st0.insert(st0.begin() + 8, recv);
  return j;
}

/// `j` without the figures a file records, which readers then compute instead of checking.
inline void drop_recorded_figures(nlohmann::json* j) {
  for (const char* figure : {"makespan", "span", "span_bubble_rate", "peak_memory", "wall_lower_bound", "objective",
                             "iterations", "solver"})
    j->erase(figure);
}

}  // namespace zbpp::test
