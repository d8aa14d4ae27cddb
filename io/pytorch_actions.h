// PyTorch's action names (torch.distributed.pipelining's _ComputationType) and ours, in one table
// the CSV export and import both read: PyTorch's I (input gradient) is our B, its B (full backward)
// our BW, its W our W; its stage index is our virtual stage.
#pragma once

#include "core/ir.h"

namespace zbpp::pytorch {

// What a CSV action is to us: an op, a message, or one of the actions we read and ignore.
enum class ActionKind { kCompute, kMessage, kReduceGrad, kUnshard, kReshard };

struct ActionType {
  const char* name;
  ActionKind kind;
  OpType type;  ///< the op or message (kCompute, kMessage)
};

// In the order PyTorch's action pattern tries them (none is a prefix of another).
constexpr ActionType kActionTypes[] = {
    {"F", ActionKind::kCompute, OpType::F},           {"I", ActionKind::kCompute, OpType::B},
    {"B", ActionKind::kCompute, OpType::BW},          {"W", ActionKind::kCompute, OpType::W},
    {"UNSHARD", ActionKind::kUnshard, OpType::F},     {"RESHARD", ActionKind::kReshard, OpType::F},
    {"REDUCE_GRAD", ActionKind::kReduceGrad, OpType::F}, {"SEND_F", ActionKind::kMessage, OpType::SEND_F},
    {"RECV_F", ActionKind::kMessage, OpType::RECV_F}, {"SEND_B", ActionKind::kMessage, OpType::SEND_B},
    {"RECV_B", ActionKind::kMessage, OpType::RECV_B}};

/// PyTorch's name of one of our compute ops or messages; null for the others.
inline const char* action_name(OpType t) {
  for (const auto& a : kActionTypes)
    if ((a.kind == ActionKind::kCompute || a.kind == ActionKind::kMessage) && a.type == t) return a.name;
  return nullptr;
}

}  // namespace zbpp::pytorch
