// The single rule of what each op waits for, how long it runs and what memory it holds.
// validate, simulate, the generators and (later) lowering all ask here; nobody restates it.
// Semantics (paper, appendix G): F(vs,j) waits for F(vs-1,j); B(vs,j) waits for B(vs+1,j), the last
// virtual stage's B waits for its own F; W(vs,j) waits for B(vs,j). A dependency between two
// different stages arrives T_comm after its producer ends.
#pragma once

#include <optional>

#include "planner/ir.h"
#include "planner/problem.h"

namespace zbpp {

/// What a compute op makes available to others: its output activation, or its input gradient.
enum class Product { Forward = 0, InputGrad = 1 };
inline constexpr int kProducts = 2;

/// The product an op waits for, where it comes from, and whether it crosses stages.
struct Dependency {
  Product what;
  int vs;       ///< virtual stage of the producer
  int mb;
  bool remote;  ///< the producer runs on another stage: add T_comm
};

/// What `op` (run by `stage`) waits for; nothing for the first virtual stage's F.
std::optional<Dependency> dependency_of(const Op& op, int stage, const VirtualStageMap& map);
/// What `op` produces: F the forward output, B and BW the input gradient; W nothing.
std::optional<Product> product_of(OpType type);
/// How long `op` runs on `stage`. BW takes T_B + T_W.
Ticks op_duration(const Op& op, int stage, const Problem& problem);
/// Activation memory change of `op` on `stage`: F +M_B, B +(M_W - M_B), W -M_W, BW -M_B.
Mem memory_delta(const Op& op, int stage, const Problem& problem);

}  // namespace zbpp
