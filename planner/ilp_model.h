// The MILP of one window (ilp_model.cpp), as the ILP refinement (refine_ilp.cpp) drives it: the ILP
// module's internal interface.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "core/deps.h"
#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"

namespace zbpp {

using Clock = std::chrono::steady_clock;

// Which ops of one stage run in a fixed order in every schedule of the model's space. Within one
// microbatch the dependency rule (deps.h) orders a stage's F's by rising virtual stage, then its
// B's by falling virtual stage (the forward pass goes up through every virtual stage, the backward
// pass back down), and each W after its own B: a rank per op, F(vs) = vs, B(vs) = 2V - 1 - vs.
// Across microbatches each kind of each chunk runs in microbatch order. So x comes before y when
// x.mb <= y.mb and x comes before y's kind and chunk within one microbatch, or x is y's kind and
// chunk with a smaller microbatch. With one chunk: F_j before B_j' and W_j', B_j before W_j'.
class StageOrder {
 public:
  explicit StageOrder(const VirtualStageMap& map) : map_(map) {}
  bool implied_before(int stage, const Op& x, const Op& y) const {
    if (x.type == y.type && x.chunk == y.chunk) return x.mb < y.mb;
    if (x.type == OpType::W || x.mb > y.mb) return false;
    // A W comes after whatever comes before or is its own B.
    return y.type == OpType::W ? rank(stage, x) <= rank(stage, {OpType::B, y.mb, y.chunk}) : rank(stage, x) < rank(stage, y);
  }

 private:
  int rank(int stage, const Op& op) const {
    const int vs = map_.vs(stage, op.chunk);
    return op.type == OpType::F ? vs : 2 * map_.virtual_stages() - 1 - vs;
  }
  const VirtualStageMap& map_;
};

struct Incumbent {
  Schedule schedule;
  Timeline timeline;
  Ticks cost = 0, total = 0;  // the model's cost (span or makespan); total: the tie-breaker
  Ticks true_cost = -1;       // IlpOptions::true_cost's, when given: it ranks first
  // Per stage, where its cost is measured from: its own start for the span, the global start
  // (the first op anywhere; stage 0's F_0, at 0) for the makespan. Every stage starts with F_0
  // at the same time in every schedule of the model's space, so these never change.
  std::vector<Ticks> origin;
};

struct Solve {
  std::optional<Schedule> schedule;  // the order CBC found (not yet checked)
  double build_seconds = 0;          // building the model, before CBC's clock starts
  double objective = -1;             // its objective in the model
  double bound = 0;                  // CBC's bound on the objective
  bool optimal = false;
  long nodes = 0;
  int binaries = 0;
};

// One MILP over the incumbent with stage s's ops at positions [lo[s], hi[s]) free to reorder.
// `tie_weight` > 0 adds that weight times the sum of the stages' ends to the objective.
// Ops that start at or after `t_drop` are left out (a horizon for big problems): each stage's end is
// then its last modelled op's end plus the incumbent's rest of that stage, an estimate that the
// exact simulation after the solve confirms or rejects.
// The objective enters through inc.origin and inc.cost.
Solve solve_window(const Problem& pr, const Incumbent& inc, const std::vector<int>& lo, const std::vector<int>& hi,
                   Ticks t_drop, double seconds, int threads, double tie_weight, Ticks known_bound);

}  // namespace zbpp
