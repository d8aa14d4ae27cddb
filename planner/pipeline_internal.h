// What planner/pipeline.cpp (the pass list) and planner/plan_auto.cpp (--method auto, which runs
// it for every method) share; not for other callers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/lower.h"
#include "planner/pipeline.h"

namespace zbpp {

// A method's schedule before the validator: what it generated, searched or refined, for the
// problem it planned (the V methods split a one-chunk problem into 2 chunks).
struct Generated {
  std::string method;
  Schedule schedule;
  Problem problem;
  std::vector<std::string> notes;
  std::optional<SolverReport> ilp_report;  // where the ILP refined the schedule
};

// plan_schedule's two halves: the method's passes, its searches ranked for options' first lowering;
// then the validator, the lowering options give (if any) and the plan's cost against its bounds.
// auto runs the second alone to lower one search's schedule under each optimizer placement.
std::optional<Generated> generate(const Problem& original, const std::string& method, std::vector<Diag>* diags,
                                  const PlanOptions& options);
std::optional<PlanResult> validate_and_lower(Generated generated, std::vector<Diag>* diags, const PlanOptions& options);

// The optimizer placement a lowering stands for, as the notes name it.
std::string lowering_name(const LowerOptions& l);
// A lowered plan's true cost: its objective's figure of the iterations back to back.
Ticks true_cost_in(const IterationTimeline& it, Objective objective);
// The compute cost the searches rank by (a compute-only plan is ranked as for overlapping iterations).
Cost ranking_cost(const PlanOptions& o);
// How a note that the time limit cut a plan's search begins (auto repeats it on the candidate's line).
inline constexpr const char* kTimeLimitNote = "time limit";
// The note a plan on a problem split into 2 chunks carries.
std::string split_note(const std::string& method);
// --method auto: every method, each under every lowering given (plan_auto.cpp).
std::optional<PlanResult> plan_auto(const Problem& pr, std::vector<Diag>* diags, const PlanOptions& options);

}  // namespace zbpp
