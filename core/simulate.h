// Exact event simulation of a schedule: every op starts as soon as its stage is free and its
// input has arrived, in list order. All times are integer ticks, so results never drift.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/deps.h"
#include "core/diag.h"
#include "core/ir.h"
#include "core/problem.h"

namespace zbpp {

/// What a plan minimises (zbplan plan --objective). kPeriod: the steady-state time per iteration
/// of iterations back to back under the chosen optimizer; kWall: one iteration alone, first op to
/// last optimizer step. Both are timed with the optimizer's ops (simulate_iterations.h).
enum class Objective { kPeriod, kWall };

/// What a figure measures; one name per quantity. kSpan: the paper's cost, the longest stage's
/// first op to its last in one iteration of compute ops; kMakespan: one iteration's compute ops,
/// first op anywhere to last op anywhere. kPeriod, kWall: the Objective's, optimizer included.
enum class Cost { kSpan, kMakespan, kPeriod, kWall };
/// "span", "makespan", "period", "wall".
const char* cost_name(Cost cost);
/// The figure that measures an objective: kPeriod or kWall.
Cost cost_of(Objective objective);
/// Whether a cost is one iteration's compute ops alone (kSpan, kMakespan), which a compute
/// schedule's Timeline gives, or needs the optimizer's ops and iterations back to back.
inline bool is_compute_cost(Cost cost) { return cost == Cost::kSpan || cost == Cost::kMakespan; }
/// The compute-only cost that ranks schedules as `objective` does under `optimizer` (Optimizer::kSync
/// or Optimizer::kPostValidation), for the passes that see no optimizer (the heuristic's grid, the
/// ILP's model). A synchronous step makes every iteration cost its makespan plus the all-reduce,
/// period and wall alike; under post-validation the period of one-chunk iterations is their span
/// (they overlap to the tick: golden_table5_test, search_heuristic_test) and the wall clock the
/// makespan plus the state's last messages, which the makespan only approximates (pipeline.cpp then
/// ranks by the true cost).
Cost compute_cost(Objective objective, Optimizer optimizer);

struct OpTiming {
  Ticks start = 0;
  Ticks end = 0;
};

/// The predicted timeline of one iteration and the figures derived from it.
struct Timeline {
  std::vector<std::vector<OpTiming>> ops;  ///< [stage][op index]
  std::vector<Ticks> busy;                 ///< [stage] sum of op durations
  std::vector<Mem> peak_memory;            ///< [stage] max prefix sum of memory deltas
  Ticks makespan = 0;  ///< last end anywhere - first start anywhere (compute ops; no optimizer)
  Ticks span = 0;      ///< the paper's cost: max over stages of (last end - first start)
  double span_bubble_rate = 0.0;  ///< (span - max busy) / span
};

/// Simulates a schedule whose structure already passed validation. A lowered schedule is replayed
/// as zbrun runs it (replay.h), so a RECV placed early or a SEND placed late makes its stage wait;
/// its Timeline holds the compute ops, indexed as in compute_projection.
/// On a deadlock returns nothing and appends one diagnostic with the chain of waiting ops.
std::optional<Timeline> simulate_timeline(const Schedule& schedule, const Problem& problem, std::vector<Diag>* diags);

/// A Timeline's figures (ops left empty) from each stage's first compute op's start and last
/// compute op's end, -1 for a stage without compute ops: what a replay that keeps no op times
/// gives (replay.h's compute_start, compute_end).
Timeline compute_figures(const Schedule& schedule, const Problem& problem, const std::vector<Ticks>& compute_start,
                         const std::vector<Ticks>& compute_end);

/// Only the span (the paper's cost), for searches that try many candidates; -1 on deadlock.
Ticks simulate_span(const Schedule& schedule, const Problem& problem);

/// "period", "wall".
const char* objective_name(Objective objective);
/// A schedule's true cost, by whatever measure its caller ranks by (pipeline.cpp: lowered and
/// timed over iterations back to back); -1 when it has none (it cannot be lowered or deadlocks).
/// Called from several threads at once.
using CostFn = std::function<Ticks(const Schedule&)>;
/// A compute cost (is_compute_cost) of a timeline: its span or its makespan.
Ticks cost_of(const Timeline& timeline, Cost cost);
/// simulate_span's counterpart for either compute cost; -1 on deadlock, then with its diagnostic
/// (as simulate_timeline's) appended to `deadlock` when given. With `above` >= 0 it stops as soon
/// as the cost is sure to exceed `above` (a stage's end so far plus its work still to run) and
/// returns that lower bound, which exceeds `above` (also where the rest would deadlock): searches
/// drop such candidates without simulating them whole.
Ticks simulate_cost(const Schedule& schedule, const Problem& problem, Cost cost, std::vector<Diag>* deadlock = nullptr,
                    Ticks above = -1);
/// Builds a timeline op by op, for generators that place ops in an order where each op's input
/// is already placed (the heuristic does). Same rule as simulate_timeline (deps.h), no parking.
/// It keeps the times, not the ops: the generator records its order as it likes.
/// append and input_ready are inline: the heuristic calls them for every op it places.
class TimelineBuilder {
 public:
  TimelineBuilder(const Problem& problem, const std::vector<std::vector<int>>& placement, int m);
  /// Places `op` next on `stage` and returns its end time, or -1 (placing nothing) when its input
  /// has not been placed yet.
  [[gnu::always_inline]] Ticks append(int stage, const Op& op) {
    Ticks ready = input_ready(stage, op);
    if (ready < 0) return -1;
    Ticks start = std::max(end_[stage], ready);
    Ticks end = start + op_duration(op, stage, problem_);
    if (start_[stage] < 0) start_[stage] = start;
    end_[stage] = end;
    if (auto what = product_of(op.type)) produced_[key(*what, map_.vs(stage, op.chunk), op.mb)] = end;
    return end;
  }
  /// End time of a product, or -1 when not placed yet.
  Ticks produced_at(Product what, int vs, int mb) const { return produced_[key(what, vs, mb)]; }
  /// When the input of `op` on `stage` arrives there (T_comm included), 0 when it needs none, -1 when not placed.
  [[gnu::always_inline]] Ticks input_ready(int stage, const Op& op) const {
    auto dep = dependency_of(op, stage, map_);
    if (!dep) return 0;
    Ticks t = produced_[key(dep->what, dep->vs, dep->mb)];
    return t < 0 ? -1 : t + arrival_latency(*dep, stage, map_, problem_);
  }
  Ticks stage_end(int stage) const { return end_[stage]; }
  /// Start of the stage's first op, or -1 when it has none.
  Ticks stage_start(int stage) const { return start_[stage]; }
  /// The paper's cost so far: max over stages of (last end - first start).
  Ticks span() const;
  /// Last end anywhere - first start anywhere, so far.
  Ticks makespan() const;
  /// A compute cost (is_compute_cost) so far; the period and the wall need iterations back to back.
  Ticks cost(Cost cost) const {
    if (!is_compute_cost(cost)) throw std::logic_error("TimelineBuilder::cost: not a compute cost");
    return cost == Cost::kMakespan ? makespan() : span();
  }
  const VirtualStageMap& map() const { return map_; }
  /// Empties the timeline but keeps its memory, so a search can build many candidates cheaply.
  void reset();

 private:
  size_t key(Product what, int vs, int mb) const { return product_key(what, vs, mb, map_.virtual_stages(), m_); }
  const Problem& problem_;
  VirtualStageMap map_;
  int m_;
  std::vector<Ticks> produced_, end_, start_;
};

/// Peak activation memory of each stage: max over prefixes of the memory deltas (starting at 0).
std::vector<Mem> peak_memory(const Schedule& schedule, const Problem& problem);

}  // namespace zbpp
