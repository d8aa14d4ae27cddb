// The ILP refinement (see refine_ilp.h): checks the warm start, then solves the whole model or, for
// larger problems, window after window (ilp_model.cpp builds and solves each). With ilp_model.cpp
// this is the ILP module, libzbpp_ilp.so, with CBC linked in; programs reach it through
// refine_ilp() (ilp_module.cpp), which loads the module when the ILP first runs.
#include "planner/refine_ilp.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <string>

#include "core/bounds.h"
#include "core/deps.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "planner/ilp_model.h"

namespace zbpp {

namespace {

// Up to this many ops the LNS models every op after the window exactly; beyond, a horizon.
constexpr long kExactOps = 2000;
// Stages one LNS window spans at most.
constexpr int kBlock = 8;

// The warm start with BW split into B then W.
Schedule split_bw(const Schedule& s) {
  Schedule out = s;
  for (auto& ops : out.stages) {
    std::vector<Op> split;
    for (const Op& op : ops) {
      if (op.type == OpType::BW) {
        split.push_back({OpType::B, op.mb, op.chunk});
        split.push_back({OpType::W, op.mb, op.chunk});
      } else {
        split.push_back({op.type, op.mb, op.chunk});
      }
    }
    ops = std::move(split);
  }
  return out;
}

// Whether every stage runs the F's, B's and W's of each chunk in microbatch order.
bool kinds_in_microbatch_order(const Schedule& s) {
  for (const auto& ops : s.stages) {
    std::vector<int> next(static_cast<size_t>(3) * s.chunks, 0);
    for (const Op& op : ops)
      if (op.mb != next[op.chunk * 3 + compute_kind(op.type)]++) return false;
  }
  return true;
}

// Sum over stages of (last end - first start): the tie-breaker that lets the search accept a
// schedule that leaves the costliest stage as it is but shortens others (room for the next window).
// Stage starts are the same in every schedule, so this is the sum of stage ends: it serves the
// span and the makespan alike.
Ticks total_span(const Timeline& t) {
  Ticks sum = 0;
  for (const auto& ops : t.ops)
    if (!ops.empty()) sum += ops.back().end - ops.front().start;
  return sum;
}

std::vector<Ticks> cost_origins(const Timeline& t, Cost cost) {
  std::vector<Ticks> origin(t.ops.size());
  Ticks first = t.ops[0].front().start;
  for (const auto& ops : t.ops) first = std::min(first, ops.front().start);
  for (size_t s = 0; s < t.ops.size(); ++s)
    origin[s] = cost == Cost::kSpan ? t.ops[s].front().start : first;
  return origin;
}

// The time range of one window: on every stage, the ops the incumbent starts in [t0, t0 + len).
void window_positions(const Incumbent& inc, Ticks t0, Ticks len, std::vector<int>* lo, std::vector<int>* hi) {
  const int p = static_cast<int>(inc.timeline.ops.size());
  lo->assign(p, 0);
  hi->assign(p, 0);
  for (int s = 0; s < p; ++s) {
    const auto& t = inc.timeline.ops[s];
    auto first = std::lower_bound(t.begin(), t.end(), t0, [](const OpTiming& o, Ticks v) { return o.start < v; });
    auto last = std::lower_bound(t.begin(), t.end(), t0 + len, [](const OpTiming& o, Ticks v) { return o.start < v; });
    (*lo)[s] = static_cast<int>(first - t.begin());
    (*hi)[s] = static_cast<int>(last - t.begin());
  }
}

// How much idle time stages [s_begin, s_end) have in [t0, t0 + len): the idle of a stage whose
// cost is the incumbent's (the longest span, or a last end at the makespan) counts 1000 times
// (rounded to a rank, not a measure).
double window_idle(const Incumbent& inc, Ticks t0, Ticks len, int s_begin, int s_end) {
  double total = 0;
  for (int s = s_begin; s < s_end; ++s) {
    const auto& t = inc.timeline.ops[s];
    Ticks idle = 0;
    for (size_t i = 1; i < t.size(); ++i) {
      Ticks a = std::max(t[i - 1].end, t0), b = std::min(t[i].start, t0 + len);
      if (b > a) idle += b - a;
      if (t[i].start >= t0 + len) break;
    }
    bool longest = !t.empty() && t.back().end - inc.origin[s] == inc.cost;
    total += static_cast<double>(idle) * (longest ? 1000.0 : 1.0);
  }
  return total;
}

// One refinement: the incumbent (the best schedule so far, by the exact simulator), the bound it
// is measured against, and the solves that try to improve it, whole or window by window.
class Refinement {
 public:
  Refinement(const Problem& pr, const IlpOptions& options, Incumbent inc, Ticks known, IlpResult* result,
             Clock::time_point started)
      : pr_(pr), options_(options), inc_(std::move(inc)), known_(known), result_(result), started_(started) {}

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }
  bool met_bound() const { return inc_.cost <= known_; }
  Incumbent& incumbent() { return inc_; }

  void report(bool force) {
    if (!options_.progress || (!force && elapsed() - last_report_ < 1.0)) return;
    last_report_ = elapsed();
    options_.progress({elapsed(), inc_.cost, result_->lower_bound, result_->windows});
  }

  // A candidate order replaces the incumbent only if the exact simulator says it is better.
  bool consider(std::optional<Schedule> candidate) {
    if (!candidate || !validate(*candidate, pr_).empty()) return false;
    std::vector<Diag> why;
    auto t = simulate_timeline(*candidate, pr_, &why);
    if (!t) return false;
    Ticks total = total_span(*t), cost = cost_of(*t, options_.measure);
    // The true cost, when given, ranks first (the model's cost only stands for it); then the
    // model's cost and the tie-breaker.
    Ticks true_cost = options_.true_cost ? options_.true_cost(*candidate) : -1;
    if (options_.true_cost && (true_cost < 0 || (inc_.true_cost >= 0 && true_cost > inc_.true_cost))) return false;
    if (true_cost == inc_.true_cost && (cost > inc_.cost || (cost == inc_.cost && total >= inc_.total))) return false;
    inc_.schedule = std::move(*candidate);
    inc_.timeline = std::move(*t);
    inc_.cost = cost;
    inc_.total = total;
    inc_.true_cost = true_cost;
    return true;
  }

  // The whole model in one solve.
  void solve_whole(int n) {
    const int p = pr_.p;
    std::vector<int> lo(p, 0), hi(p, n);
    Solve sv = solve_window(pr_, inc_, lo, hi, std::numeric_limits<Ticks>::max(), options_.seconds - elapsed(),
                            options_.threads, 0.0, known_);
    ++result_->windows;
    result_->nodes += sv.nodes;
    result_->binaries = sv.binaries;
    result_->model_objective = sv.objective;
    consider(std::move(sv.schedule));
    // CBC's bound holds for every schedule (the model loses nothing). Optimal only if the
    // simulated incumbent meets it: a CBC solution the validator rejected proves nothing.
    result_->lower_bound = std::max(result_->lower_bound, std::min(sv.bound, from_quanta(inc_.cost)));
    if (sv.optimal && from_quanta(inc_.cost) <= sv.bound + 1e-6) result_->status = SolveStatus::kOptimal;
  }

  // Large-neighbourhood search: time windows holding about window_ops ops on the busiest stage,
  // half-overlapping, swept from start to end; windows grow when a sweep finds nothing.
  void search_windows(int n) {
    const int p = pr_.p;
    Ticks mean_op = 0;
    for (int s = 0; s < p; ++s) mean_op = std::max(mean_op, pr_.busy_time(s) / std::max(1, n));
    int window_ops = std::max(2, options_.window_ops);
    const int max_window_ops = 3 * window_ops;
    const double tie_weight = 1e-3 / p;
    double last_build_seconds = 0;
    bool done = false;
    while (!done) {
      bool improved = false;
      const Ticks len = std::max<Ticks>(1, window_ops * mean_op);
      // A window is a time range on a block of up to kBlock consecutive stages (half-overlapping
      // blocks), so one model stays small however deep the pipeline is.
      // Windows holding idle time of a costliest stage come first (only those can shorten the
      // cost directly), then those holding other idle time, then the rest, each in time order.
      std::vector<std::pair<Ticks, int>> windows;
      std::vector<double> score;
      for (Ticks t0 = 0; t0 < inc_.timeline.makespan; t0 += std::max<Ticks>(1, len / 2))
        for (int s0 = 0; s0 < p; s0 += kBlock / 2) {
          windows.push_back({t0, s0});
          score.push_back(window_idle(inc_, t0, len, s0, std::min(p, s0 + kBlock)));
          if (s0 + kBlock >= p) break;
        }
      std::vector<size_t> order(windows.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
      for (size_t w : order) {
        auto [t0, s0] = windows[w];
        if (done) break;
        double left = options_.seconds - elapsed();
        if (left < 0.05) {
          done = true;
          break;
        }
        std::vector<int> lo, hi;
        window_positions(inc_, t0, len, &lo, &hi);
        for (int s = 0; s < p; ++s)
          if (s < s0 || s >= s0 + kBlock) hi[s] = lo[s];
        int free_ops = 0;
        for (int s = 0; s < p; ++s) free_ops += std::max(0, hi[s] - lo[s] - 1);
        if (free_ops == 0) continue;
        // Building a model takes about as long as building the last one: CBC gets what is left
        // after that, and no model starts that could not be built in time.
        if (left < 2 * last_build_seconds + 0.25) {
          done = true;
          break;
        }
        // Big problems: model only a horizon of two windows past this one (and at least each
        // stage's first op after its window).
        Ticks t_drop = std::numeric_limits<Ticks>::max();
        if (static_cast<long>(p) * n > kExactOps) {
          t_drop = t0 + 3 * len;
          for (int s = 0; s < p; ++s)
            if (hi[s] < n) t_drop = std::max(t_drop, inc_.timeline.ops[s][hi[s]].start + 1);
        }
        Solve sv = solve_window(pr_, inc_, lo, hi, t_drop,
                                std::min(left - last_build_seconds - 0.2, std::max(1.0, options_.seconds / 10)),
                                options_.threads, tie_weight, known_);
        last_build_seconds = sv.build_seconds;
        ++result_->windows;
        result_->nodes += sv.nodes;
        result_->binaries = std::max(result_->binaries, sv.binaries);
        if (consider(std::move(sv.schedule))) improved = true;
        report(false);
        if (met_bound()) done = true;
      }
      if (done) break;
      if (!improved) {
        if (window_ops >= max_window_ops) {
          result_->status = SolveStatus::kLocalOptimum;
          break;
        }
        window_ops += std::max(1, window_ops / 2);
      }
    }
  }

 private:
  const Problem& pr_;
  const IlpOptions& options_;
  Incumbent inc_;
  const Ticks known_;
  IlpResult* result_;
  const Clock::time_point started_;
  double last_report_ = -1;
};

std::optional<IlpResult> refine_with_cbc(const Problem& pr, const Schedule& warm_in, const IlpOptions& options,
                                         std::vector<Diag>* diags) {
  const auto started = Clock::now();
  auto fail = [&](const std::string& msg) {
    diags->push_back({"", "", -1, -1, "", "ilp: " + msg});
    return std::nullopt;
  };
  if (warm_in.chunks != pr.chunks)
    return fail("the warm start has " + std::to_string(warm_in.chunks) + " chunk(s) per stage, but the problem has " +
                std::to_string(pr.chunks));
  if (!pr.placement.empty() && warm_in.placement != pr.placement)
    return fail("the warm start places chunks otherwise than the problem's placement");
  Incumbent inc;
  inc.schedule = split_bw(warm_in);
  inc.schedule.level = Level::kCompute;
  if (auto found = validate(inc.schedule, pr); !found.empty())
    return fail("the warm start is not a valid schedule: " + format_diag(found[0]));
  if (!kinds_in_microbatch_order(inc.schedule))
    return fail("the warm start must run the F's, B's and W's of each chunk in microbatch order on every stage");
  std::vector<Diag> unused;
  const Cost measure = options.measure;
  if (!is_compute_cost(measure)) return fail("the model minimises a compute cost: the span or the makespan");
  inc.timeline = *simulate_timeline(inc.schedule, pr, &unused);
  inc.cost = cost_of(inc.timeline, measure);
  if (options.true_cost) inc.true_cost = options.true_cost(inc.schedule);
  inc.total = total_span(inc.timeline);
  inc.origin = cost_origins(inc.timeline, measure);

  const int p = pr.p, n = 3 * pr.m * pr.chunks;
  // Span bounds hold for the makespan too (makespan >= span); the ramp bound only for the makespan.
  const Ticks known = std::max(options.known_bound, cost_lower_bound(pr, measure, inc.schedule.placement));
  IlpResult result;
  result.measure = measure;
  result.warm_cost = inc.cost;
  result.lower_bound = from_quanta(known);
  // Whole model: one binary per free pair on every stage.
  const VirtualStageMap map(inc.schedule.placement);
  const StageOrder order(map);
  long full_binaries = 0;
  for (int s = 0; s < p; ++s)
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < i; ++k)
        full_binaries += !order.implied_before(s, inc.schedule.stages[s][k], inc.schedule.stages[s][i]);
  result.mode = full_binaries <= options.full_model_binaries ? IlpMode::kFull : IlpMode::kLns;
  result.status = SolveStatus::kTimeLimit;
  Refinement refinement(pr, options, std::move(inc), known, &result, started);
  if (refinement.met_bound()) result.status = SolveStatus::kOptimal;
  else if (result.mode == IlpMode::kFull) refinement.solve_whole(n);
  else refinement.search_windows(n);
  Incumbent& best = refinement.incumbent();
  if (refinement.met_bound()) result.status = SolveStatus::kOptimal;
  result.proven_optimal = result.status == SolveStatus::kOptimal;
  // Optimal means the bound meets the cost (to CBC's tolerance): report them equal.
  if (result.proven_optimal) result.lower_bound = from_quanta(best.cost);
  result.schedule = std::move(best.schedule);
  result.schedule.method = "ilp";
  result.cost = best.cost;
  result.seconds = refinement.elapsed();
  refinement.report(true);
  return result;
}

}  // namespace

}  // namespace zbpp

// The module's two exported symbols (everything else is hidden); the loader checks the layout
// first, then calls refine_ilp's work through the second.
extern "C" __attribute__((visibility("default"))) const char* zbpp_ilp_abi() {
  static const std::string abi = zbpp::ilp_module_abi();
  return abi.c_str();
}

extern "C" __attribute__((visibility("default"))) bool zbpp_ilp_refine(const zbpp::Problem& problem,
                                                                      const zbpp::Schedule& warm,
                                                                      const zbpp::IlpOptions& options,
                                                                      std::vector<zbpp::Diag>* diags,
                                                                      zbpp::IlpResult* result) {
  // Nothing thrown in here may cross into a program that knows nothing of CBC: it becomes a diagnostic.
  try {
    auto refined = zbpp::refine_with_cbc(problem, warm, options, diags);
    if (!refined) return false;
    *result = std::move(*refined);
    return true;
  } catch (const std::exception& e) {
    diags->push_back({"", "", -1, -1, "", std::string("ilp: internal error in the ILP module: ") + e.what()});
  } catch (...) {
    diags->push_back({"", "", -1, -1, "", "ilp: internal error in the ILP module: unknown exception"});
  }
  return false;
}
