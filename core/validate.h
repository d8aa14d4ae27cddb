// Checks that a schedule is one the runtime can replay: complete, ordered, within the memory
// limit and free of deadlock. Every finding names the stage and the op's position.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/diag.h"
#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"

namespace zbpp {

/// Shape against the problem, op fields in range, exactly one F and one B+W (or one BW) per
/// (stage, chunk, microbatch), and on each stage F before B before W.
std::vector<Diag> validate_structure(const Schedule& schedule, const Problem& problem);
/// The inputs one stage sends another, per kind (activations, gradients), are needed there in the
/// order they are sent: a lowered file's messages on one link arrive in the order sent (lower.h),
/// so a compute schedule whose stage runs them in another order cannot be lowered. The first
/// crossing of each link (message_order.h's find_message_crossings), named by the op that needs
/// another message than the one that comes.
std::vector<Diag> validate_message_order(const Schedule& schedule);
/// Peak activation memory of every stage within the problem's limit (no-op without a limit).
std::vector<Diag> validate_memory(const Schedule& schedule, const Problem& problem);
/// A lowered schedule (lower.h): its compute projection passes validate_structure; every input
/// from another stage is received before use and every output for another stage is sent after it
/// is made, to the right peer; the sends from one stage to another match the receives there one
/// to one, in the same order, per kind (F, B); OPT_STEP ends each stage; and replaying the file
/// (SEND never blocks, RECV waits for its message) finishes. A deadlock names both ranks' positions.
std::vector<Diag> validate_lowered(const Schedule& schedule, const Problem& problem);
/// validate_lowered but its last check, the replay, for a caller that replays the file over
/// iterations back to back anyway: when that finishes, so does the check's (its second iteration
/// runs the same ops, the validation's included, paired alike, with more waits: a valid file's
/// messages pair up within each iteration). Where it does not, validate_lowered names the finding.
std::vector<Diag> validate_lowered_but_replay(const Schedule& schedule, const Problem& problem);
/// Whether a lowered schedule's shape matches the problem and every op's microbatch, chunk and
/// peer index its tables: what replay_lowered needs to run safely (not to mean anything), so that
/// a caller may replay it while validate_lowered_but_replay checks the rest.
bool lowered_replayable(const Schedule& schedule, const Problem& problem);

/// All checks in order; the deadlock check (a simulation) runs only on a sound structure.
/// Lowered schedules get validate_lowered as well. `file` is put into every diagnostic.
/// `timeline`, when given, receives a compute-level schedule's simulated timeline when it passes
/// (the deadlock check's), so a pass that needs it does not simulate again.
std::vector<Diag> validate(const Schedule& schedule, const Problem& problem, const std::string& file = "",
                           std::optional<Timeline>* timeline = nullptr);
/// validate() but its last check, validate_message_order, for a reader that says a crossing in its
/// own terms after the rest passes (zbplan import names the CSV's cells: io/import_csv.h).
std::vector<Diag> validate_but_message_order(const Schedule& schedule, const Problem& problem,
                                             const std::string& file = "");

/// What does not stop a replay but breaks the promise that every schedule trains bit-identical
/// weights: a stage's W (or BW) ops of one chunk out of microbatch order add that chunk's weight
/// gradients in another order. One warning per stage and chunk, naming both ops; run on a schedule
/// that passed validate().
std::vector<Diag> validate_warnings(const Schedule& schedule, const std::string& file = "");

}  // namespace zbpp
