// The single rule of what each op waits for, how long it runs and what memory it holds.
// validate, simulate, the generators and lowering all ask here; nobody restates it.
// Semantics (paper, appendix G): F(vs,j) waits for F(vs-1,j); B(vs,j) waits for B(vs+1,j), the last
// virtual stage's B waits for its own F; W(vs,j) waits for B(vs,j). A dependency between two
// different stages arrives T_comm after its producer ends.
#pragma once

#include <cstddef>
#include <optional>

#include "planner/ir.h"
#include "planner/problem.h"

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
  bool remote;  ///< the producer runs on another stage: add T_comm
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

/// What `op` produces: F the forward output, B and BW the input gradient; W nothing.
inline std::optional<Product> product_of(OpType type) {
  switch (type) {
    case OpType::F: return Product::Forward;
    case OpType::B:
    case OpType::BW: return Product::InputGrad;
    default: return std::nullopt;
  }
}

/// How long `op` runs on `stage`. BW takes T_B + T_W.
inline Ticks op_duration(const Op& op, int stage, const Problem& problem) {
  switch (op.type) {
    case OpType::F: return problem.t_f[stage];
    case OpType::B: return problem.t_b[stage];
    case OpType::W: return problem.t_w[stage];
    case OpType::BW: return problem.t_b[stage] + problem.t_w[stage];
    default: return 0;
  }
}

/// Activation memory change of `op` on `stage`: F +M_B, B +(M_W - M_B), W -M_W, BW -M_B.
inline Mem memory_delta(const Op& op, int stage, const Problem& problem) {
  switch (op.type) {
    case OpType::F: return problem.mem_b[stage];
    case OpType::B: return problem.mem_w[stage] - problem.mem_b[stage];
    case OpType::W: return -problem.mem_w[stage];
    case OpType::BW: return -problem.mem_b[stage];
    default: return 0;
  }
}

}  // namespace zbpp
