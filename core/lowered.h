// What a lowered schedule (level "lowered", written by planner/lower.h) means, shared by every
// reader: the optimizer's state chain of post-validation, the compute ops a lowered file's timeline
// indexes, the buffer slots a stage uses. The validator, the simulator and zbrun need these without
// the lowering pass itself.
#pragma once

#include <vector>

#include "core/ir.h"

namespace zbpp {

/// Post-validation's two message paths through the stages. The partial state visits the stages
/// in the order their iterations start (by the virtual stage of each stage's first F, lowest
/// first), so it ends, complete, on the stage that starts its next iteration last: its wait for
/// the state delays nobody. The verdict (the complete state) leaves that stage first thing in the
/// next iteration and is relayed in the order the stages run their first backward op (by the
/// virtual stage of each stage's first B or BW, highest first), each stage passing it on just
/// before its first B, so nobody waits for it. One chunk per stage (and interleaved): state
/// 0 -> p-1, verdict p-1 -> p-2 -> ... -> 0. ZB-V, whose first B is on stage 0: state 0 -> p-1,
/// verdict p-1 -> 0 -> 1 -> ... -> p-2 (docs/post-validation.md). Needs a schedule whose every
/// stage has a forward and a backward op.
struct StateChain {
  std::vector<int> state;    ///< the stages in the order the partial state visits them
  std::vector<int> verdict;  ///< the stages in the order the verdict reaches them (state.back() first)
  /// [stage] -> where it receives the state from and sends it to, and the same for the verdict; -1: nobody
  std::vector<int> state_from, state_to, verdict_from, verdict_to;
};
StateChain state_chain(const Schedule& schedule);

/// The compute ops of a schedule, in order, with slots, peers and instructions dropped; a lowered
/// file's Timeline (simulate.h) indexes its ops this way.
Schedule compute_projection(const Schedule& schedule);

/// Slots a lowered stage uses (max slot + 1), per stage.
std::vector<int> slots_per_stage(const Schedule& lowered);

}  // namespace zbpp
