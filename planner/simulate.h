// Exact event simulation of a schedule: every op starts as soon as its stage is free and its
// input has arrived, in list order. All times are integer ticks, so results never drift.
#pragma once

#include <optional>
#include <vector>

#include "planner/diag.h"
#include "planner/ir.h"
#include "planner/problem.h"

namespace zbpp {

struct OpTiming {
  Ticks start = 0;
  Ticks end = 0;
};

/// The predicted timeline of one iteration and the figures derived from it.
struct Timeline {
  std::vector<std::vector<OpTiming>> ops;  ///< [stage][op index]
  std::vector<Ticks> busy;                 ///< [stage] sum of op durations
  std::vector<Mem> peak_memory;            ///< [stage] max prefix sum of memory deltas
  Ticks makespan = 0;  ///< wall clock: last end anywhere - first start anywhere
  Ticks span = 0;      ///< the paper's cost: max over stages of (last end - first start)
  double bubble_rate = 0.0;  ///< (span - max busy) / span
};

/// Simulates a schedule whose structure already passed validate_structure().
/// On a deadlock returns nothing and appends one diagnostic with the chain of waiting ops.
std::optional<Timeline> simulate_timeline(const Schedule& schedule, const Problem& problem, std::vector<Diag>* diags);

/// Only the span (the paper's cost), for searches that try many candidates; -1 on deadlock.
Ticks simulate_span(const Schedule& schedule, const Problem& problem);

/// Peak activation memory of each stage: max over prefixes of the memory deltas (starting at 0).
std::vector<Mem> peak_memory(const Schedule& schedule, const Problem& problem);

}  // namespace zbpp
