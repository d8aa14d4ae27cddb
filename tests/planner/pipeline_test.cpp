// plan_schedule's auto: the schedule it returns is, by the true objective (iterations back to back
// with the optimizer, simulate_iterations), no worse than any candidate it tried under any
// optimizer placement it may choose.
#include "planner/pipeline.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace zbpp {
namespace {

const std::vector<LowerOptions> kPlacements = {{kOptimizerPostValidation, ValidateAt::kFirstBackward},
                                               {kOptimizerPostValidation, ValidateAt::kStart},
                                               {kOptimizerSync, ValidateAt::kFirstBackward}};

Ticks true_cost(const Schedule& lowered, const Problem& pr, Objective objective) {
  std::vector<Diag> diags;
  auto it = simulate_iterations(lowered, pr, {}, &diags);
  INFO(format_diags(diags));
  REQUIRE(it);
  return objective == Objective::kWall ? it->wall : it->period;
}

// auto's pick against every other method under every placement; returns auto's cost.
Ticks check_auto_is_best(const Problem& pr, Objective objective) {
  PlanOptions options;
  options.objective = objective;
  options.lowerings = kPlacements;
  std::vector<Diag> diags;
  auto best = plan_schedule(pr, "auto", &diags, options);
  INFO(format_diags(diags));
  REQUIRE(best);
  REQUIRE(best->schedule.level == kLevelLowered);
  const Ticks cost = true_cost(best->schedule, best->problem, objective);
  int compared = 0;
  for (const std::string method : {"1f1b", "zb-h1", "zb-h2", "heuristic", "zb-v"}) {
    std::vector<Diag> why;
    auto planned = plan_schedule(pr, method, &why, options);
    if (!planned) continue;  // over the memory limit
    for (const LowerOptions& placement : kPlacements) {
      PlanResult lowered = *planned;
      REQUIRE(lower_planned(&lowered, &why, placement));
      INFO(method << " under " << placement.optimizer << (placement.validate_at == ValidateAt::kStart ? " (start)" : ""));
      CHECK(cost <= true_cost(lowered.schedule, lowered.problem, objective));
      ++compared;
    }
  }
  CHECK(compared >= 6);
  return cost;
}

TEST_CASE("auto: its pick is the best candidate by the true period or wall clock, optimizer included") {
  // The paper's 1.5B model, p=8, m=24 (Table 5's times), at three memory limits and both objectives.
  for (const char* limit : {"1p", "1.3p", "2p"})
    for (Objective objective : {Objective::kPeriod, Objective::kWall}) {
      INFO("limit " << limit << ", objective " << objective_name(objective));
      check_auto_is_best(test::make_problem(8, 24, 18.522, 18.086, 9.337, 0.601, 1, 0.3664, limit), objective);
    }
  // Uneven stages.
  ProblemInput in;
  in.p = 4;
  in.m = 12;
  in.t_f = {1.0, 1.4, 0.8, 1.2};
  in.t_b = {1.1, 1.3, 0.9, 1.5};
  in.t_w = {0.6, 0.5, 0.7, 0.4};
  in.t_comm = 0.05;
  in.mem_b = {1};
  in.mem_w = {0.5};
  in.mem_limit = "1.5p";
  std::vector<Diag> diags;
  auto uneven = build_problem(in, "", &diags);
  REQUIRE(uneven);
  check_auto_is_best(*uneven, Objective::kPeriod);
}

TEST_CASE("auto: at 1.3p on the 1.5B model it runs ZB-V under post-validation, its period equal to its span") {
  // Ranked by span, auto once chose ZB-V under post-validation when its period there was 1254.098
  // (the verdict was relayed against its first B's), worse than the heuristic's 1225.17; with the
  // verdict following the first B's (lower.h's state_chain) the period is the span, 1189.271, below
  // the synchronous step's 1192.877.
  const Problem pr = test::make_problem(8, 24, 18.522, 18.086, 9.337, 0.601, 1, 0.3664, "1.3p");
  const Ticks cost = check_auto_is_best(pr, Objective::kPeriod);
  CHECK(cost == *to_quanta(1189.271));
  PlanOptions options;
  options.lowerings = kPlacements;
  std::vector<Diag> diags;
  auto best = plan_schedule(pr, "auto", &diags, options);
  REQUIRE(best);
  CHECK(best->schedule.method == "zb-v");
  CHECK(best->schedule.optimizer == kOptimizerPostValidation);
  CHECK(simulate_timeline(best->schedule, best->problem, &diags)->span == cost);
}

}  // namespace
}  // namespace zbpp
