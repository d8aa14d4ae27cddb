// A lowered schedule planned in-process, for the runtime's direct tests (interpreter, driver).
#pragma once

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "planner/pipeline.h"

namespace zbpp {

/// `method` for p stages, m microbatches and `chunks` per stage (T_F = T_B = 1, T_W = 0.5),
/// lowered for `optimizer`.
inline Schedule planned(const std::string& method, int p, int m, Optimizer optimizer, int chunks = 1,
                        const std::string& mem_limit = "") {
  ProblemInput in;
  in.p = p;
  in.m = m;
  in.chunks = chunks;
  in.t_f = {1};
  in.t_b = {1};
  in.t_w = {0.5};
  in.mem_limit = mem_limit;
  std::vector<Diag> diags;
  auto problem = build_problem(in, "", &diags);
  REQUIRE(problem);
  auto r = plan_schedule(*problem, method, &diags);
  REQUIRE(r);
  REQUIRE(lower_planned(&*r, &diags, LowerOptions{optimizer}));
  return r->schedule;
}

}  // namespace zbpp
