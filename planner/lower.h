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

#include "core/ir.h"
#include "core/lowered.h"
#include "core/problem.h"

namespace zbpp {

/// Where VALIDATE goes with post-validation. kFirstBackward: right before the stage's first B (and
/// its RECV_B), so the warm-up forwards of the next iteration run on the speculative weights and
/// are replayed in the rare iteration whose step was rolled back. kStart: first of all, so every
/// stage holds its first forward until its step is post-validated (never replays, but waits for the
/// state to travel to the last stage and back every iteration).
enum class PostValidationAt { kFirstBackward, kStart };

struct LowerOptions {
  Optimizer optimizer = Optimizer::kSync;
  PostValidationAt post_validation_at = PostValidationAt::kFirstBackward;
};

/// Lowers a valid compute schedule. Slots: each (chunk, microbatch) takes the lowest free slot at
/// its F and frees it after its last backward op (W, or BW), so a stage needs as many slots as it
/// has microbatches in flight at its memory peak.
Schedule lower_comms(const Schedule& compute, const LowerOptions& options = {});

}  // namespace zbpp
