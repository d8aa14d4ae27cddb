// Certified lower bounds on the span (the paper's cost) of any valid schedule of a problem, computed
// in exact ticks for every plan, so every schedule file says how far from optimal it can be.
//
// Over schedules with the problem's shape and a given placement (any number of chunks per stage;
// a chunk's ops take the stage's times and memory). Per stage s, with lo_s and hi_s its lowest and
// highest virtual stage:
// - busy:          a stage is never idle for less than zero: span >= its compute time;
// - memory:        per stage, the idle forced before its first B (only F's fit the memory, and the
//                  first B, a B(hi_s), waits for a round trip from F(lo_s)) plus the idle forced
//                  after its last F (an F(hi_s): the trip down and back to B(lo_s) minus the B/W
//                  work the memory can hold then); or memory over time: the limit times the span
//                  covers every pair's (microbatch, chunk) M_B over its shortest lifespan, F to B;
// - critical path: the last B of stage t, a B(lo_t), waits for all of t's F's and other B's (and
//                  the W's its memory forces before it) and then climbs back through the virtual
//                  stages below; the stage's last W follows it;
// - warm-up:       one chunk: the memory bound's head, with the stages coupled: each stage's first
//                  B comes a round trip after the next stage's, and the F's it runs before it (as
//                  many as memory holds) either leave it idle or push its first B later, which the
//                  stages above inherit; the least span at which every stage's idle fits.
// Proofs in bounds.cpp; tests/planner/bounds_test.cpp checks them against exhaustive search and
// against every generator's schedules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"
#include "core/simulate.h"

namespace zbpp {

/// Where a certified bound comes from, as files name it: "busy", "memory", "critical-path",
/// "warm-up", "ramp" (the makespan's and the wall's only) or "cbc" (the ILP's).
enum class BoundSource { kBusy, kMemory, kCriticalPath, kWarmUp, kRamp, kCbc };
const char* bound_source_name(BoundSource source);
std::optional<BoundSource> parse_bound_source(std::string_view name);
/// Every source's name, in the enum's order: what a file's "bound_source" may say.
std::vector<std::string> bound_source_names();

/// How far a plan's search for the optimum went, as files name it: "optimal" (the cost meets a
/// certified bound), "time_limit", "local_optimum" (no window of the ILP improves it), "not_run".
enum class SolveStatus { kOptimal, kTimeLimit, kLocalOptimum, kNotRun };
const char* solve_status_name(SolveStatus status);
std::optional<SolveStatus> parse_solve_status(std::string_view name);
/// Every status's name, in the enum's order: what a file's "status" may say.
std::vector<std::string> solve_status_names();

struct SpanBounds {
  Ticks busy = 0;           ///< max over stages of the stage's compute time
  Ticks memory = 0;         ///< busy + forced idle before the first B and after the last F (max over stages)
  Ticks critical_path = 0;  ///< the last B's climb back to each stage, plus its last W
  Ticks warm_up = 0;        ///< one chunk: the warm-up chain's forced idle, stages together (0: not computed)
  /// One chunk: the F's each stage runs before its first B in the warm-up bound's witness, what a
  /// schedule meeting that bound would run (the heuristic tries them).
  std::vector<int> warm_up_fs;
  Ticks best = 0;           ///< the largest of the four: a lower bound on any schedule's span
  BoundSource which = BoundSource::kBusy;  ///< the bound that gives `best`
};

/// What a plan knows about its own quality; written to the schedule file as "solver". Its figures
/// measure `measure`: the plan's objective, the period or the wall clock with the optimizer, or for a
/// compute-only plan the span or the makespan that stands for it (simulate.h's compute_cost).
struct SolverReport {
  Cost measure = Cost::kSpan;  ///< what `value` and `best_bound` measure (the file's "cost")
  std::optional<SolveStatus> status;  ///< none: no report (nothing is written)
  Ticks value = 0;           ///< the schedule's exact simulated cost (the file's "objective")
  double best_bound = 0;     ///< certified lower bound on any schedule's cost (time units)
  BoundSource bound_source = BoundSource::kBusy;
  double gap = 0;            ///< (value - best_bound) / value
  double bubble_rate_bound = 0;  ///< the bubble rate a cost equal to best_bound would have
  double seconds = 0;        ///< time spent in the ILP (0 when it did not run)
  long nodes = 0;            ///< CBC branch-and-bound nodes
};

/// The report of a schedule whose `cost` is `cost_value` (see cost_lower_bound) against the
/// combinatorial bounds, as if no solver had seen it.
SolverReport bound_report(const Problem& problem, Ticks cost_value, Cost cost,
                          const std::vector<std::vector<int>>& placement, Ticks allreduce = -1);

/// No schedule's makespan, hence no wall clock, is shorter (the file records it as
/// wall_lower_bound): a stage starts no earlier than the first forward needs to
/// reach it (its virtual stage's predecessors' T_F, plus T_comm per hop) and is then busy for all
/// its ops. The "ramp" bound: (p-1)(T_F+T_comm) + m(T_F+T_B+T_W) with uniform times.
Ticks wall_lower_bound(const Problem& problem, const std::vector<std::vector<int>>& placement);

/// A certified lower bound on `cost` for every valid schedule of `problem` with `placement`;
/// `which` gets the name of the bound that gives it. kSpan and kPeriod: the span bounds; kMakespan
/// and kWall: also the ramp bound (wall_lower_bound, above).
/// `allreduce` >= 0 says the optimizer is synchronous, with that all-reduce latency: every
/// iteration then waits for it after its last op, so the period and the wall are bounded by the
/// ramp and span bounds plus it.
Ticks cost_lower_bound(const Problem& problem, Cost cost, const std::vector<std::vector<int>>& placement,
                       BoundSource* which = nullptr, Ticks allreduce = -1);

/// Lower bounds on the simulated span of every valid schedule of `problem` with `placement`
/// ([stage][chunk] -> virtual stage). A placement that does not fit the problem's shape (none, say)
/// leaves the busy bound only, which holds for every placement.
SpanBounds span_lower_bounds(const Problem& problem, const std::vector<std::vector<int>>& placement);
/// The same with the problem's own placement: its `placement`, or with one chunk the only one.
SpanBounds span_lower_bounds(const Problem& problem);

/// The bubble rate of a time figure (a span, a makespan, a period, a bound): (figure - max busy) /
/// figure, with the busy time of the busiest stage; 0 for a zero figure.
double bubble_rate_of(const Problem& problem, Ticks figure);

/// Relative gap between a schedule's cost and a bound: (cost - bound) / cost, at least 0.
double relative_gap(Ticks cost, double bound);

}  // namespace zbpp
