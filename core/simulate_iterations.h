// Several iterations of a lowered schedule back to back, optimizer included: what a training run
// costs per iteration. With a synchronous optimizer every stage waits at OPT_STEP for one
// all-reduce; with post-validation the only links between iterations are the state messages
// (RECV_STATE/SEND_STATE, RECV_VALID/SEND_VALID), so a stage starts its next iteration as soon as
// its own step and its inputs allow, while later stages still finish the current one.
#pragma once

#include <optional>
#include <vector>

#include "core/diag.h"
#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"

namespace zbpp {

struct IterationOptions {
  int iterations = 3;
  Ticks state_latency = -1;      ///< one optimizer-state message between neighbours; -1: the slowest link's T_comm
  Ticks allreduce_latency = -1;  ///< the synchronous all-reduce once all stages reached it; -1: 2*ceil(log2 p)*the slowest T_comm
  bool op_times = true;  ///< keep every op's times (IterationTimeline::ops); false: the figures only
};

struct IterationTimeline {
  int iterations = 0;
  std::vector<std::vector<std::vector<OpTiming>>> ops;  ///< [iteration][stage][op index of the lowered list]; empty without op_times
  /// Steady state: max over stages of the time between the ends of its last two OPT_STEPs.
  Ticks period = 0;
  double period_bubble_rate = 0;  ///< (period - max per-stage busy time) / period
  Ticks wall = 0;                 ///< the first iteration alone: first op anywhere to last OPT_STEP end anywhere
  double wall_bubble_rate = 0;    ///< (wall - max per-stage busy time) / wall
  Ticks state_latency = 0, allreduce_latency = 0;  ///< the latencies used
  /// The first iteration's compute figures, ops left empty: what simulate_timeline gives for the
  /// lowered file (one iteration alone times its compute ops as the first of several: the
  /// optimizer's ops that link iterations come after them, or wait in no first iteration).
  Timeline first;
};

/// Simulates `options.iterations` (>= 2) iterations of a lowered schedule that passed validation.
/// In the first iteration the post-validation ops do nothing (there is no previous step). Returns
/// nothing with a diagnostic naming the stuck stage, iteration and op on a deadlock.
std::optional<IterationTimeline> simulate_iterations(const Schedule& lowered, const Problem& problem,
                                                     const IterationOptions& options, std::vector<Diag>* diags);

}  // namespace zbpp
