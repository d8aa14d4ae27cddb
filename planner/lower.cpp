// Lowering to runtime instructions (see lower.h).
#include "planner/lower.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "core/deps.h"

namespace zbpp {

namespace {

// Adds the optimizer's ops to one lowered stage (see lower.h and validate.cpp's check_optimizer_ops).
void add_optimizer_ops(std::vector<Op>* ops, int st, const StateChain& chain, const LowerOptions& options) {
  if (options.optimizer != Optimizer::kPostValidation) {
    ops->push_back({OpType::OPT_STEP, 0, 0, -1, -1});
    return;
  }
  // The verdict's first stage holds it from its own step: it sends it first thing. The others
  // receive it and pass it on where they post-validate.
  const bool holds_verdict = chain.verdict_from[st] < 0;
  std::vector<Op> post_validation;
  if (!holds_verdict) post_validation.push_back({OpType::RECV_VALID, 0, 0, chain.verdict_from[st], -1});
  const Op send_valid{OpType::SEND_VALID, 0, 0, chain.verdict_to[st], -1};
  if (!holds_verdict && send_valid.peer >= 0) post_validation.push_back(send_valid);
  post_validation.push_back({OpType::VALIDATE, 0, 0, -1, -1});
  size_t at = 0;
  if (options.post_validation_at == PostValidationAt::kFirstBackward) {
    while (at < ops->size() && (*ops)[at].type != OpType::B && (*ops)[at].type != OpType::BW) ++at;
    if (at > 0 && (*ops)[at - 1].type == OpType::RECV_B) --at;
  }
  ops->insert(ops->begin() + static_cast<std::ptrdiff_t>(at), post_validation.begin(), post_validation.end());
  if (holds_verdict && send_valid.peer >= 0) ops->insert(ops->begin(), send_valid);
  if (chain.state_from[st] >= 0) ops->push_back({OpType::RECV_STATE, 0, 0, chain.state_from[st], -1});
  if (chain.state_to[st] >= 0) ops->push_back({OpType::SEND_STATE, 0, 0, chain.state_to[st], -1});
  ops->push_back({OpType::OPT_STEP, 0, 0, -1, -1});
}

}  // namespace

Schedule lower_comms(const Schedule& compute, const LowerOptions& options) {
  Schedule out = compute.without_ops();
  out.level = Level::kLowered;
  out.optimizer = options.optimizer;
  VirtualStageMap map(compute.placement);
  const StateChain chain = state_chain(compute);
  // Slot bookkeeping: the slot of each (chunk, mb) and the free slots, lowest on top.
  std::vector<int> slot_of(static_cast<size_t>(compute.chunks) * compute.m);
  std::priority_queue<int, std::vector<int>, std::greater<>> free_slots;
  for (int st = 0; st < compute.p; ++st) {
    const auto& ops = compute.stages[st];
    auto& lowered = out.stages[st];
    lowered.reserve(3 * ops.size() + 8);  // at most a RECV and a SEND per compute op, and the optimizer's
    std::fill(slot_of.begin(), slot_of.end(), -1);
    free_slots = {};
    int next_slot = 0;
    for (const Op& op : ops) {
      size_t key = static_cast<size_t>(op.chunk) * compute.m + op.mb;
      Op with_slot = op;
      if (op.type == OpType::F) {
        if (free_slots.empty()) free_slots.push(next_slot++);
        slot_of[key] = free_slots.top();
        free_slots.pop();
      }
      with_slot.slot = slot_of[key];
      // Input from another stage: receive it just before use.
      if (auto dep = dependency_of(op, st, map); dep && dep->remote)
        lowered.push_back({recv_type(dep->what), op.mb, op.chunk, map.stage_of[dep->vs], -1});
      lowered.push_back(with_slot);
      // Output for another stage: send it right after it is made.
      if (auto to = consumer_of(op, st, map); to && to->remote)
        lowered.push_back({send_type(to->what), op.mb, op.chunk, to->stage, -1});
      if (op.type == OpType::W || op.type == OpType::BW) free_slots.push(slot_of[key]);
    }
    add_optimizer_ops(&lowered, st, chain, options);
  }
  return out;
}

}  // namespace zbpp
