// The planner's pass list: generate a schedule with the chosen method (a generator, the heuristic
// search, the ILP refinement), validate it, and lower it; each pass is followed by validate().
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/bounds.h"
#include "core/diag.h"
#include "core/ir.h"
#include "core/partition.h"
#include "core/problem.h"
#include "core/simulate.h"
#include "core/simulate_iterations.h"
#include "planner/deadline.h"
#include "planner/lower.h"
#include "planner/methods.h"  // the methods plan_schedule runs

namespace zbpp {

/// A planned schedule and what the passes have to say about how they got it.
struct PlanResult {
  Schedule schedule;
  Problem problem;                 ///< the problem the schedule is for (zb-v may split stages into chunks)
  std::vector<std::string> notes;  ///< e.g. which grid point of the heuristic won; printed by zbplan
  SolverReport solver;             ///< the plan's cost against a certified lower bound (and the ILP's figures)
  /// A lowered plan: its iterations back to back, as PlanOptions::iterations times them.
  std::optional<IterationTimeline> iterations;
  /// The layers each stage runs, when the plan chose them from layer costs (partition.h).
  std::optional<PartitionRecord> partition = std::nullopt;
};

struct PlanOptions {
  /// What the plan minimises: the period of iterations back to back or one iteration's wall
  /// clock, optimizer included (simulate.h).
  Objective objective = Objective::kPeriod;
  /// The lowerings (optimizer placements) to plan for. Empty: a compute-only plan, ranked by the
  /// compute cost that stands for the objective (the span for the period, the makespan for the
  /// wall clock) and reported by it. One (any method but auto): the plan is ranked by its true
  /// cost under that lowering (the heuristic's grid and the ILP by the compute cost that ranks
  /// alike where there is one, else by the true cost itself: simulate.h's compute_cost), returned
  /// lowered, and its bound report measures the true cost. auto: every method under each lowering
  /// given, each candidate ranked by its true cost; the winner is returned lowered.
  std::vector<LowerOptions> lowerings;
  IterationOptions iterations;  ///< how true costs are timed
  double time_limit = 0;  ///< seconds for the ILP; 0: not given (ilp takes 10 s, auto leaves the ILP out)
  double ilp_seconds = 0;  ///< zbplan plan --ilp-seconds (the CLI turns it into time_limit with no deadline)
  /// When the whole call must end (zbplan plan --time-limit): the searches stop there with the
  /// best so far, the ILP gets what the search left (the lowering's share kept back).
  Deadline deadline;
  /// The deadline is zbplan's default (kDefaultSearchSeconds), not one the user gave: the notes
  /// say so, and how to give more.
  bool default_deadline = false;
  int threads = 1;        ///< CBC threads
  /// Progress lines of long work (the ILP, the searches, auto), about one a second; none when
  /// empty. zbplan says "" when the plan is done (a terminal then clears its line).
  std::function<void(const std::string&)> progress;
  /// auto: only the candidates with one chunk per stage (a layer partition gives each stage one
  /// range of layers: zbplan plan --layers).
  bool single_chunk = false;
};

/// Seconds zbplan plan gives the searches when --time-limit is not given (not the ILP methods',
/// whose ILP has its own default): a few seconds at any p; on Table 5's settings up to p = 16 auto
/// then picks what the whole search picks (tools/auto_compare.sh, docs/benchmarks.md).
inline constexpr double kDefaultSearchSeconds = 4;
/// PlanOptions::time_limit as zbplan plan's parser leaves it without --time-limit (0 is "no limit").
inline constexpr double kTimeLimitNotGiven = -1;

/// Runs the passes for `method`. Returns a validated schedule, or nothing with diagnostics
/// (an unknown method, a problem the method cannot take, or a result over the memory limit).
std::optional<PlanResult> plan_schedule(const Problem& problem, const std::string& method, std::vector<Diag>* diags,
                                        const PlanOptions& options = {});

/// The lowering pass (lower.h) followed by the validator: the instructions zbrun replays. With
/// post-validation, VALIDATE goes before each stage's first B; where that order would deadlock
/// (possible with several chunks per stage), at the start instead, with a note saying so. With
/// `timing`, also times the lowered plan's iterations back to back (planned->iterations). With
/// `planned_found`, also validates the planned schedule (through its lowering's checks: see
/// pipeline.cpp) and returns false with what the validator found there, when it finds anything.
bool lower_planned(PlanResult* planned, std::vector<Diag>* diags, const LowerOptions& options = {},
                   const IterationOptions* timing = nullptr, std::vector<Diag>* planned_found = nullptr);

}  // namespace zbpp
