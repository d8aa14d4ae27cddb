// Lowering: from a compute schedule to the instructions a rank replays (level "lowered").
// Adds, per stage, RECV_F/RECV_B right before the op that consumes a tensor from another stage,
// SEND_F/SEND_B right after the op that produces one for another stage, an activation buffer slot
// on every compute op, and OPT_STEP at the end. With post-validation (paper §4) also the
// optimizer's state chain: RECV_STATE/SEND_STATE before OPT_STEP (partial gradient state) and
// RECV_VALID/SEND_VALID/VALIDATE in the next iteration (the full state back), along state_chain().
//
// Runtime semantics the lowered file is written for (and validate_lowered checks): a SEND never
// blocks (the transport buffers it); a RECV blocks until its message arrives; messages between two
// ranks of one kind (F or B) arrive in the order they were sent.
#pragma once

#include "planner/ir.h"
#include "planner/problem.h"

namespace zbpp {

/// Where VALIDATE goes with post-validation. kFirstBackward: right before the stage's first B (and
/// its RECV_B), so the warm-up forwards of the next iteration run on the speculative weights and
/// are replayed in the rare iteration whose step was rolled back. kStart: first of all, so every
/// stage holds its first forward until its step is validated (never replays, but waits for the
/// state to travel to the last stage and back every iteration).
enum class ValidateAt { kFirstBackward, kStart };

struct LowerOptions {
  std::string optimizer = kOptimizerSync;  ///< kOptimizerSync or kOptimizerPostValidation
  ValidateAt validate_at = ValidateAt::kFirstBackward;
};

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

/// Lowers a valid compute schedule. Slots: each (chunk, microbatch) takes the lowest free slot at
/// its F and frees it after its last backward op (W, or BW), so a stage needs as many slots as it
/// has microbatches in flight at its memory peak.
Schedule lower_comms(const Schedule& compute, const LowerOptions& options = {});

/// The compute ops of a schedule, in order, with slots, peers and instructions dropped; a lowered
/// file's Timeline (simulate.h) indexes its ops this way.
Schedule compute_projection(const Schedule& schedule);

/// Slots a lowered stage uses (max slot + 1), per stage.
std::vector<int> slots_per_stage(const Schedule& lowered);

}  // namespace zbpp
