// The paper's automatic scheduling heuristic (§3.1) and its grid search: under a memory limit,
// as many warm-up F's as help, then F and B in a 1F1B-like steady state, with W's filling the
// gaps that would otherwise be idle (or freeing memory when the limit is hit); the tail runs the
// remaining W's. One chunk per stage.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/diag.h"
#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"

namespace zbpp {

/// The heuristic's switches; the grid search tries every combination.
struct HeuristicOptions {
  bool allow_bubble_before_first_b = true;  ///< stop warm-up F's before they would delay the first B
  bool prioritize_b = false;                ///< let a stage far ahead of the next skip an F to run B sooner
  bool no_bubble_greedy = false;            ///< fill a gap shorter than T_W with a W even when it is no new maximum
  /// The F's each stage runs before its first B (as memory and m allow), in place of the estimate
  /// allow_bubble_before_first_b makes; empty: the estimate. The warm-up bound's witness
  /// (bounds.h's warm_up_fs) gives the counts a schedule meeting that bound runs.
  std::vector<int> warm_up_fs;
  std::string name() const;                 ///< e.g. "bubble-before-b,prioritize-b"
};

/// One heuristic schedule, or nothing (with the reason in *why) when it cannot keep the memory limit.
std::optional<Schedule> heuristic_schedule(const Problem& problem, const HeuristicOptions& options, std::string* why);

/// The grid search's points in tie-breaking order: the 8 switch combinations, then the warm-up
/// bound's counts (with every switch on).
std::vector<HeuristicOptions> heuristic_grid_points(const Problem& problem);

struct SearchResult {
  Schedule schedule;
  Ticks span = 0;               ///< the paper's cost of the schedule
  Ticks cost = 0;               ///< what the search minimised (the compute cost, or the true one)
  std::string winner;           ///< the switches that produced it ("bubble-before-b,...") or the seed ("zb-h1")
  int candidates = 0;           ///< grid points and seeds tried
  int feasible = 0;             ///< those that kept the memory limit
  int pruned = 0;               ///< those stopped once their compute cost was sure to exceed the best
  std::string cut;              ///< what a deadline left out ("" where the search ran to its end)
};

/// Grid search over all switch combinations, in `threads` threads (0: two when the problem is
/// big enough to pay for a thread). The handcrafted ZB-H1, ZB-H2 and 1F1B orders join as seeds
/// when they fit the memory limit, so the result is never worse than any of them. Keeps the
/// smallest `cost` (a compute cost: the span or the makespan), or, when `true_cost` is given, the
/// smallest true cost it gives (a candidate it gives -1 is left out). Ties: the first in grid order,
/// then the seeds, so the result never depends on the thread count. Candidates other than the
/// first two grid points stop once their compute cost is sure to exceed the best of those two
/// (`pruned`; never with `true_cost`): the result is the one the whole grid gives. Nothing, with a
/// diagnostic, when no candidate fits the memory limit.
std::optional<SearchResult> search_heuristic(const Problem& problem, std::vector<Diag>* diags, int threads = 0,
                                             Cost cost = Cost::kSpan, const CostFn& true_cost = {});

}  // namespace zbpp
