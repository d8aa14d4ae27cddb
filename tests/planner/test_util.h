// Helpers shared by planner tests: inline schedules and the invariant check run after each pass.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ir.h"
#include "core/problem.h"
#include "core/validate.h"
#include "planner/search_heuristic.h"

namespace zbpp::test {

/// The problem built from `in`; fails the test if it is rejected.
inline Problem checked_problem(const ProblemInput& in) {
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  INFO(format_diags(diags));
  REQUIRE(pr);
  return *pr;
}

/// The simulated timeline of a valid schedule; fails the test on a deadlock.
inline Timeline timeline_or_fail(const Schedule& s, const Problem& pr) {
  std::vector<Diag> diags;
  auto t = simulate_timeline(s, pr, &diags);
  INFO(format_diags(diags));
  REQUIRE(t);
  return *t;
}

/// A problem from plain numbers (times per op, memory per op); fails the test if it is rejected.
inline Problem make_problem(int p, int m, double tf, double tb, double tw, double tcomm = 0, double mem_b = 1,
                            double mem_w = 0.5, const std::string& limit = "", int chunks = 1) {
  ProblemInput in;
  in.p = p;
  in.m = m;
  in.chunks = chunks;
  in.t_f = {tf};
  in.t_b = {tb};
  in.t_w = {tw};
  in.t_comm = {tcomm};
  in.mem_b = {mem_b};
  in.mem_w = {mem_w};
  in.mem_limit = limit;
  return checked_problem(in);
}

/// A problem input of p stages, m microbatches and `chunks` whose stage s takes times(s) = {T_F,
/// T_B, T_W} (per op of a chunk).
inline ProblemInput per_stage_input(int p, int m, int chunks, const std::function<std::array<double, 3>(int)>& times) {
  ProblemInput in;
  in.p = p;
  in.m = m;
  in.chunks = chunks;
  in.t_f.clear(), in.t_b.clear(), in.t_w.clear();
  for (int s = 0; s < p; ++s) {
    const auto [f, b, w] = times(s);
    in.t_f.push_back(f);
    in.t_b.push_back(b);
    in.t_w.push_back(w);
  }
  return in;
}

/// A problem whose stages take different times (stage s: T_F = 2 + s % 3, T_B = 3 + s % 2,
/// T_W = 1 + s % 4), M_B = 1 and M_W = 0.5 per op of a chunk.
inline Problem uneven_problem(int p, int m, int chunks, double t_comm, const std::string& limit = "") {
  ProblemInput in = per_stage_input(p, m, chunks, [](int s) {
    return std::array<double, 3>{2.0 + s % 3, 3.0 + s % 2, 1.0 + s % 4};
  });
  in.t_comm = {t_comm};
  in.mem_limit = limit;
  return checked_problem(in);
}

/// A one-chunk schedule from one short-form string per stage ("F0 F1 B0 W0 ...").
inline Schedule inline_schedule(const std::vector<std::string>& stages, int m) {
  std::string err;
  std::vector<std::vector<int>> placement;
  for (int s = 0; s < static_cast<int>(stages.size()); ++s) placement.push_back({s});
  auto s = schedule_from_strings(stages, m, 1, placement, &err);
  INFO(err);
  REQUIRE(s);
  return *s;
}

/// The invariants every pass must keep (ninja's VerifyGraph): the full validator finds nothing.
inline void check_invariants(const Schedule& s, const Problem& pr) {
  auto diags = validate(s, pr);
  INFO(format_diags(diags));
  CHECK(diags.empty());
}

/// The schedules of the heuristic's grid points that keep the problem's memory limit, in grid order.
inline std::vector<Schedule> heuristic_grid(const Problem& pr) {
  std::vector<Schedule> out;
  for (const HeuristicOptions& point : heuristic_grid_points(pr)) {
    std::string why;
    if (auto s = heuristic_schedule(pr, point, &why)) out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace zbpp::test
