// The planner's pass list: generate a schedule with the chosen method (a generator, the heuristic
// search, the ILP refinement), validate it, and lower it; each pass is followed by validate().
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/bounds.h"
#include "planner/diag.h"
#include "planner/ir.h"
#include "planner/lower.h"
#include "planner/problem.h"
#include "planner/simulate.h"
#include "planner/simulate_iterations.h"

namespace zbpp {

/// The same problem with each stage split into `chunks` equal chunks: per-op times and memory
/// divided by `chunks` (to the nearest tick/quantum), the memory limit unchanged.
Problem split_into_chunks(const Problem& problem, int chunks);

/// Methods zbplan plan knows, in the order --help lists them. "auto" runs every other method
/// and keeps the one that fits with the best objective (PlanOptions).
const std::vector<std::string>& plan_methods();

/// A planned schedule and what the passes have to say about how they got it.
struct PlanResult {
  Schedule schedule;
  Problem problem;                 ///< the problem the schedule is for (zb-v may split stages into chunks)
  std::vector<std::string> notes;  ///< e.g. which grid point of the heuristic won; printed by zbplan
  SolverReport solver;             ///< the span against a certified lower bound (and the ILP's figures)
};

struct PlanOptions {
  /// What heuristic and auto minimise: the period of overlapping iterations (post-validation)
  /// or one iteration's wall clock (a synchronous optimizer). See simulate.h.
  Objective objective = Objective::kPeriod;
  /// The lowerings (optimizer placements) auto may use. Non-empty: auto lowers each candidate with
  /// each of them and ranks by the true objective, the steady-state period of back-to-back
  /// iterations or one iteration's wall clock, optimizer included (simulate_iterations.h), and
  /// returns the winner lowered. Empty (compute-only files): by the compute schedule's span or makespan.
  std::vector<LowerOptions> lowerings;
  IterationOptions iterations;  ///< how auto times the iterations
  double time_limit = 0;  ///< seconds for the ILP; 0: not given (ilp takes 10 s, auto leaves the ILP out)
  int threads = 1;        ///< CBC threads
  std::function<void(const std::string&)> progress;  ///< ILP progress lines (nothing when empty)
};

/// Runs the passes for `method`. Returns a validated schedule, or nothing with diagnostics
/// (an unknown method, a problem the method cannot take, or a result over the memory limit).
std::optional<PlanResult> plan_schedule(const Problem& problem, const std::string& method, std::vector<Diag>* diags,
                                        const PlanOptions& options = {});

/// The lowering pass (lower.h) followed by the validator: the instructions zbrun replays. With
/// post-validation, VALIDATE goes before each stage's first B; where that order would deadlock
/// (possible with several chunks per stage), at the start instead, with a note saying so.
bool lower_planned(PlanResult* planned, std::vector<Diag>* diags, const LowerOptions& options = {});

}  // namespace zbpp
