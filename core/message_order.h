// The order of one link's messages: a lowered file's messages from one stage to another arrive in
// the order sent, per kind (lower.h), so the stage that receives them must run the ops that need
// them in that order. One finding, as data; the validator (validate.h) says it by stage and op,
// zbplan import (io/import_csv.h) by CSV row and column.
#pragma once

#include <vector>

#include "core/deps.h"
#include "core/ir.h"

namespace zbpp {

/// Where the n-th input that `from` sends `to` (of one kind) is not the n-th that `to` needs: the
/// first such n on the link. Each op's microbatch is its own (`op.mb`).
struct MessageCrossing {
  Product what;        ///< the link's kind: activations or input gradients
  int from, to;        ///< the sending and the receiving stage
  int position;        ///< n, counting the link's messages from 0
  int sender_op;       ///< index on `from` of the op whose output is the n-th message sent
  int sent_for_vs;     ///< the virtual stage (on `to`) that output is for
  int receiver_op;     ///< index on `to` of the op that needs the n-th message, another one
  int needed_from_vs;  ///< the virtual stage (on `from`) whose output it needs
};

/// The first crossing of every link whose order crosses, by (from, to, what); none when each stage
/// takes every link's inputs in the order they are sent. For a schedule that passed
/// validate_structure (ops outside the problem's chunks and microbatches are passed over). Only
/// schedules where one stage sends another the inputs of several chunks (the interleaved
/// placement) can cross, as long as each chunk's ops of one kind run in microbatch order.
std::vector<MessageCrossing> find_message_crossings(const Schedule& schedule);

}  // namespace zbpp
