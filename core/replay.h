// The one replay of lowered schedules, timed as the runtime runs them: each stage walks its list in
// order; a SEND never blocks; a RECV waits for the n-th SEND on its channel (ir.h's message_kind,
// per pair of ranks) plus the channel's latency; a compute op runs for its duration (its remote
// input came through an earlier RECV, a local input made later in the list never comes); a
// synchronous OPT_STEP ends, when iterations follow, for every stage at the last arrival plus the
// all-reduce. Validation (does it finish?), one iteration's timing (simulate_timeline) and
// iterations back to back (simulate_iterations) all ask here, so a file's planned figures hold
// every wait its SEND/RECV order causes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/diag.h"
#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"

namespace zbpp {

struct ReplayOptions {
  int iterations = 1;
  /// The validator's replay: the post-validation ops wait in the first iteration as in every later one.
  /// Timing leaves them out of the first iteration, which has no previous step to check.
  bool post_validation_in_first_iteration = false;
  bool op_times = true;         ///< keep every op's times (LoweredReplay::ops)
  Ticks state_latency = 0;      ///< one optimizer-state message between neighbours
  Ticks allreduce_latency = 0;  ///< the synchronous all-reduce once all stages reached it
};

struct LoweredReplay {
  std::vector<std::vector<std::vector<OpTiming>>> ops;  ///< [iteration][stage][op index]; empty without op_times
  std::vector<Ticks> first_start;    ///< [stage] start of its first op in the first iteration
  std::vector<Ticks> iteration_end;  ///< [iteration * p + stage] end of its last op in that iteration
  /// [stage] start of its first compute op and end of its last in the first iteration; -1: it has none.
  /// They give that iteration's compute figures (simulate_iterations' first) without op times.
  std::vector<Ticks> compute_start, compute_end;
};

/// Replays a lowered schedule whose ops' fields are in range and whose compute ops pass
/// validate_structure (validate_lowered's first checks).
/// On a deadlock returns nothing and appends one diagnostic with the chain of waiting ops,
/// "deadlock in replay: ..." for one iteration, "deadlock in iteration i of k: ..." for several.
std::optional<LoweredReplay> replay_lowered(const Schedule& lowered, const Problem& problem,
                                            const ReplayOptions& options, std::vector<Diag>* diags);

/// "op 12 (SEND_F3 to 2)": an op of a stage's list with its peer, as the validator and deadlock
/// chains name it.
std::string op_with_peer(const Schedule& schedule, int stage, int index);

/// The one formatter of deadlock chains: from stage `first`, stuck at op cursor[first], follows
/// what each stuck op waits for (`blocker`: stage -> (stage, op index), or (-1, -1) when nothing
/// runs it) until a stage repeats: "<prefix> waits for stage 1 op 2 (B0); stage 1 is stuck at op 0
/// (F1), which waits for ...". A finished stage has cursor at the end of its list.
Diag deadlock_chain(const Schedule& schedule, const std::vector<int>& cursor, int first, const std::string& prefix,
                    const std::function<std::pair<int, int>(int stage)>& blocker);

}  // namespace zbpp
