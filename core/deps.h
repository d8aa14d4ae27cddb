// The single rule of what each op waits for, where its output goes, how long it runs and what
// memory it holds, and how the messages of a lowered file stand for it. validate, simulate, the
// replay of lowered files, the generators, lowering, the CSV importer, the ILP and the runtime all
// ask here; nobody restates it.
// Semantics (paper, appendix G): F(vs,j) waits for F(vs-1,j); B(vs,j) waits for B(vs+1,j), the last
// virtual stage's B waits for its own F; W(vs,j) waits for B(vs,j). A dependency between two
// different stages arrives the hop's T_comm after its producer ends (arrival_latency).
#pragma once

#include <cstddef>
#include <optional>

#include "core/ir.h"
#include "core/problem.h"

namespace zbpp {

/// What a compute op makes available to others: its output activation, or its input gradient.
enum class Product { Forward = 0, InputGrad = 1 };
inline constexpr int kProducts = 2;

/// Index of a product in a flat table of kProducts * virtual_stages * m entries (the simulator's
/// and the timeline builder's "produced at" tables).
inline size_t product_key(Product what, int vs, int mb, int virtual_stages, int m) {
  return (static_cast<size_t>(what) * virtual_stages + vs) * m + mb;
}

/// The product an op waits for, where it comes from, and whether it crosses stages.
struct Dependency {
  Product what;
  int vs;       ///< virtual stage of the producer
  int mb;
  bool remote;  ///< the producer runs on another stage: add the hop's T_comm (arrival_latency)
};

// Inline: these run for every op placed or simulated, in the planner's hottest loops. GCC left
// dependency_of out of line in the simulator (a call and an optional in memory per op): always
// inlined, the simulator runs ~20 % fewer instructions.

/// What `op` (run by `stage`) waits for; nothing for the first virtual stage's F.
[[gnu::always_inline]] inline std::optional<Dependency> dependency_of(const Op& op, int stage,
                                                                      const VirtualStageMap& map) {
  const int vs = map.vs(stage, op.chunk);
  Product what;
  int producer;  // virtual stage
  switch (op.type) {
    case OpType::F:
      if (vs == 0) return std::nullopt;
      what = Product::Forward, producer = vs - 1;
      break;
    case OpType::B:
    case OpType::BW:
      if (vs == map.virtual_stages() - 1)
        what = Product::Forward, producer = vs;  // the last virtual stage's B waits for its own F
      else
        what = Product::InputGrad, producer = vs + 1;
      break;
    case OpType::W:
      what = Product::InputGrad, producer = vs;
      break;
    default:
      return std::nullopt;
  }
  return Dependency{what, producer, op.mb, map.stage_of[producer] != stage};
}

/// How long `dep`, which an op on `stage` waits for, takes to arrive after its producer ends: the
/// hop between the two stages (problem.h), 0 on the same stage.
[[gnu::always_inline]] inline Ticks arrival_latency(const Dependency& dep, int stage, const VirtualStageMap& map,
                                                    const Problem& pr) {
  return dep.remote ? pr.hop(map.stage_of[dep.vs], stage) : 0;
}

/// Where the product of `op` (run by `stage`) goes: the virtual stage that consumes it, which
/// needs a message when it runs on another stage. F's output goes to the next virtual stage (the
/// last virtual stage's to its own B), B's and BW's input gradient to the previous one (none from
/// the first virtual stage); W makes nothing.
struct Consumer {
  Product what;
  int vs;       ///< virtual stage of the consumer
  int stage;    ///< the stage that runs it
  bool remote;  ///< on another stage: a SEND and a RECV carry the product there
};
inline std::optional<Consumer> consumer_of(const Op& op, int stage, const VirtualStageMap& map) {
  const int vs = map.vs(stage, op.chunk);
  int to;
  Product what;
  switch (op.type) {
    case OpType::F:
      what = Product::Forward, to = vs == map.virtual_stages() - 1 ? vs : vs + 1;
      break;
    case OpType::B:
    case OpType::BW:
      if (vs == 0) return std::nullopt;
      what = Product::InputGrad, to = vs - 1;
      break;
    default:
      return std::nullopt;
  }
  const int at = map.stage_of[to];
  return Consumer{what, to, at, at != stage};
}

/// The virtual stage that made a product consumed by `consumer_vs` over a message: activations
/// come from the previous virtual stage, gradients from the next.
inline int message_producer_vs(Product what, int consumer_vs) {
  return what == Product::Forward ? consumer_vs - 1 : consumer_vs + 1;
}
/// The virtual stage a product of `producer_vs` travels to in a message.
inline int message_consumer_vs(Product what, int producer_vs) {
  return what == Product::Forward ? producer_vs + 1 : producer_vs - 1;
}

/// The tensor messages of a lowered file (lower.h): SEND_F/RECV_F carry activations, SEND_B/RECV_B
/// input gradients (ir.h's MessageKind kActivation and kGradient).
inline bool is_tensor_message(OpType t) {
  return t == OpType::SEND_F || t == OpType::RECV_F || t == OpType::SEND_B || t == OpType::RECV_B;
}
inline Product message_product(OpType tensor_message) {
  return tensor_message == OpType::SEND_F || tensor_message == OpType::RECV_F ? Product::Forward : Product::InputGrad;
}
inline MessageKind message_kind(Product what) { return what == Product::Forward ? kActivation : kGradient; }
inline OpType send_type(Product what) { return what == Product::Forward ? OpType::SEND_F : OpType::SEND_B; }
inline OpType recv_type(Product what) { return what == Product::Forward ? OpType::RECV_F : OpType::RECV_B; }
/// The virtual stage at the other end of a tensor message that `vs` sends or receives: a SEND's
/// consumer, a RECV's producer.
inline int message_peer_vs(OpType tensor_message, int vs) {
  const Product what = message_product(tensor_message);
  return is_send(tensor_message) ? message_consumer_vs(what, vs) : message_producer_vs(what, vs);
}
/// The compute op a tensor message goes with: a SEND carries what this op made, a RECV brings
/// what it needs (F for activations, B for gradients; B stands for BW too).
inline Op message_compute_op(const Op& message) {
  return {message_product(message.type) == Product::Forward ? OpType::F : OpType::B, message.mb, message.chunk};
}

/// The optimizer's ops that check the previous step (post-validation, lower.h); in the first
/// iteration there is no previous step, and they do nothing.
inline bool is_post_validation_op(OpType t) {
  return t == OpType::RECV_VALID || t == OpType::SEND_VALID || t == OpType::VALIDATE;
}

/// Index of a compute op's kind in per-kind tables: F 0, B 1, W 2, BW 3.
enum ComputeKind { kKindF = 0, kKindB = 1, kKindW = 2, kKindBW = 3 };
inline constexpr int kComputeKinds = 4;
inline ComputeKind compute_kind(OpType compute) {
  switch (compute) {
    case OpType::F: return kKindF;
    case OpType::B: return kKindB;
    case OpType::W: return kKindW;
    default: return kKindBW;
  }
}

/// What `op` produces: F the forward output, B and BW the input gradient; W nothing.
inline std::optional<Product> product_of(OpType type) {
  switch (type) {
    case OpType::F: return Product::Forward;
    case OpType::B:
    case OpType::BW: return Product::InputGrad;
    default: return std::nullopt;
  }
}

/// How long `op` runs on `stage` (its chunk's figures). BW takes T_B + T_W.
inline Ticks op_duration(const Op& op, int stage, const Problem& problem) {
  switch (op.type) {
    case OpType::F: return problem.f_time(stage, op.chunk);
    case OpType::B: return problem.b_time(stage, op.chunk);
    case OpType::W: return problem.w_time(stage, op.chunk);
    case OpType::BW: return problem.b_time(stage, op.chunk) + problem.w_time(stage, op.chunk);
    default: return 0;
  }
}

/// Activation memory change of `op` on `stage`: F +M_B, B +(M_W - M_B), W -M_W, BW -M_B.
inline Mem memory_delta(const Op& op, int stage, const Problem& problem) {
  switch (op.type) {
    case OpType::F: return problem.b_mem(stage, op.chunk);
    case OpType::B: return problem.w_mem(stage, op.chunk) - problem.b_mem(stage, op.chunk);
    case OpType::W: return -problem.w_mem(stage, op.chunk);
    case OpType::BW: return -problem.b_mem(stage, op.chunk);
    default: return 0;
  }
}

}  // namespace zbpp
