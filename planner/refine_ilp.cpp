// Appendix G as a MILP for CBC, whole or window by window (see refine_ilp.h). This file is the
// ILP module, libzbpp_ilp.so, with CBC linked in; programs reach it through refine_ilp()
// (ilp_module.cpp), which loads the module when the ILP first runs.
//
// Variables: E, the end time of each op; one binary per pair of ops on a stage whose order is free;
// C, the cost to minimise. Orders the problem implies are constraints, not binaries (StageOrder):
// each kind of each chunk in microbatch order, and within a microbatch the order the dependency
// rule forces through the stage's chunks (one chunk: F_j before B_j' and W_j', B_j before W_j' for
// j <= j'). So every stage's first op is F_0 of its lowest virtual stage, and the span of stage s
// runs from its start to the end of its last W (one per chunk may come last).
// F_0 is pinned to the time the simulator starts it (its input's arrival): the simulator starts
// every op as early as it can, and with the first op pinned nothing in the model can gain by
// waiting, so the model's optimum is the simulator's (no schedule file can express idling).
// For the period C bounds every stage's span; for the wall clock C bounds every stage's last end
// measured from the global start (stage 0's F_0, at 0): the makespan.
//
// A window frees, on every stage, the order of the ops the incumbent starts in one time range;
// every other pair keeps the incumbent's order. Ops that start before the window cannot move
// (they wait for nothing in it), so they enter as constants.
#include "planner/refine_ilp.h"

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numeric>

#include "core/bounds.h"
#include "core/deps.h"
#include "core/simulate.h"
#include "core/validate.h"

namespace zbpp {

namespace {

using Clock = std::chrono::steady_clock;

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

// Sum over stages of (last end - first start): the tie-breaker that lets the search accept a
// schedule that leaves the costliest stage as it is but shortens others (room for the next window).
// Stage starts are the same in every schedule, so this is the sum of stage ends: it serves the
// period and the wall clock alike.
Ticks total_span(const Timeline& t) {
  Ticks sum = 0;
  for (const auto& ops : t.ops)
    if (!ops.empty()) sum += ops.back().end - ops.front().start;
  return sum;
}

struct Incumbent {
  Schedule schedule;
  Timeline timeline;
  Ticks cost = 0, total = 0;  // the model's cost (span or makespan); total: the tie-breaker
  Ticks true_cost = -1;       // IlpOptions::true_cost's, when given: it ranks first
  // Per stage, where its cost is measured from: its own start for the period, the global start
  // (the first op anywhere; stage 0's F_0, at 0) for the wall clock. Every stage starts with F_0
  // at the same time in every schedule of the model's space, so these never change.
  std::vector<Ticks> origin;
};

std::vector<Ticks> cost_origins(const Timeline& t, Cost cost) {
  std::vector<Ticks> origin(t.ops.size());
  Ticks first = t.ops[0].front().start;
  for (const auto& ops : t.ops) first = std::min(first, ops.front().start);
  for (size_t s = 0; s < t.ops.size(); ++s)
    origin[s] = cost == Cost::kSpan ? t.ops[s].front().start : first;
  return origin;
}

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
                   Ticks t_drop, double seconds, int threads, double tie_weight, Ticks known_bound) {
  const auto built_from = Clock::now();
  const int p = pr.p, n = 3 * pr.m * pr.chunks;
  const double comm = from_quanta(pr.t_comm);
  const double c_inc = from_quanta(inc.cost);
  auto dur = [&](int s, const Op& op) { return from_quanta(op_duration(op, s, pr)); };
  std::vector<double> stage_start(p, 0.0);  // the simulator's start of F_0, the same in every schedule
  std::vector<double> origin(p, 0.0);       // what C measures stage s from (Incumbent::origin)
  for (int s = 0; s < p; ++s) {
    stage_start[s] = from_quanta(inc.timeline.ops[s][0].start);
    origin[s] = from_quanta(inc.origin[s]);
  }

  // Ops that start before the window's earliest op keep their times: constants.
  Ticks t_fix = -1;
  for (int s = 0; s < p; ++s)
    if (lo[s] < hi[s]) {
      Ticks t = inc.timeline.ops[s][lo[s]].start;
      t_fix = t_fix < 0 ? t : std::min(t_fix, t);
    }
  // Column of each op (stage s, position i), kConstant or kDropped.
  constexpr int kConstant = -1, kDropped = -2;
  std::vector<std::vector<int>> col(p, std::vector<int>(n, kConstant));
  std::vector<int> last(p, n - 1);  // each stage's last modelled op
  std::vector<double> lb, ub, obj;
  std::vector<int> integer;
  for (int s = 0; s < p; ++s)
    for (int i = 0; i < n; ++i) {
      if (inc.timeline.ops[s][i].start >= t_drop) {
        col[s][i] = kDropped;
        last[s] = std::min(last[s], i - 1);
        continue;
      }
      if (inc.timeline.ops[s][i].start < t_fix) continue;
      col[s][i] = static_cast<int>(lb.size());
      const Op& op = inc.schedule.stages[s][i];
      // Every op of a schedule that costs no more than the incumbent ends by origin + C_incumbent.
      double lo_e = stage_start[s] + dur(s, op), hi_e = origin[s] + c_inc;
      if (i == 0) hi_e = lo_e;  // F_0 pinned
      lb.push_back(lo_e);
      ub.push_back(std::max(lo_e, hi_e));
      obj.push_back(0.0);
    }
  for (int s = 0; s < p; ++s)
    if (col[s][last[s]] >= 0) obj[col[s][last[s]]] = tie_weight;
  const int col_c = static_cast<int>(lb.size());
  {
    // C is at least the certified bound and each stage's busy time from its cost's origin (for
    // the wall clock: the stage starts at stage_start, the same in every schedule, and is then busy).
    Ticks floor_ticks = known_bound;
    for (int s = 0; s < p; ++s) {
      Ticks from_origin = inc.timeline.ops[s][0].start - inc.origin[s];
      floor_ticks = std::max(floor_ticks, from_origin + pr.busy_time(s));
    }
    lb.push_back(std::min(from_quanta(floor_ticks), c_inc));
    ub.push_back(c_inc + 1e-6);
    obj.push_back(1.0);
  }
  auto end_of = [&](int s, int i) { return from_quanta(inc.timeline.ops[s][i].end); };

  // Rows in triplet form: sum coef * col >= rhs ('G') or <= rhs ('L').
  struct Row {
    std::vector<std::pair<int, double>> terms;
    double lo, hi;
  };
  std::vector<Row> rows;
  const double inf = 1e30;
  // E[y] - E[x] >= gap for ops given as (stage, position); constants fold into the right side.
  auto precede = [&](int sx, int x, int sy, int y, double gap) {
    if (col[sx][x] == kDropped || col[sy][y] == kDropped) return;
    Row r{{}, gap, inf};
    if (col[sy][y] >= 0) r.terms.push_back({col[sy][y], 1.0});
    else r.lo -= end_of(sy, y);
    if (col[sx][x] >= 0) r.terms.push_back({col[sx][x], -1.0});
    else r.lo += end_of(sx, x);
    if (!r.terms.empty()) rows.push_back(std::move(r));
  };

  // Position of each op on each stage, to find dependencies.
  const VirtualStageMap map(inc.schedule.placement);
  const StageOrder order(map);
  auto key = [&](const Op& op) { return (op.chunk * 3 + compute_kind(op.type)) * pr.m + op.mb; };
  std::vector<std::vector<int>> pos(p, std::vector<int>(n));
  for (int s = 0; s < p; ++s)
    for (int i = 0; i < n; ++i) pos[s][key(inc.schedule.stages[s][i])] = i;

  struct Pair {
    int s, x, y, col;  // x before y (the incumbent's order) when the binary is 1
  };
  std::vector<Pair> pairs;
  for (int s = 0; s < p; ++s) {
    const auto& ops = inc.schedule.stages[s];
    auto in_window = [&](int i) { return i >= lo[s] && i < hi[s]; };
    for (int i = 1; i < n; ++i)
      if (!in_window(i) && !in_window(i - 1)) precede(s, i - 1, s, i, dur(s, ops[i]));
    for (int i = lo[s]; i < hi[s]; ++i) {
      if (lo[s] > 0) precede(s, lo[s] - 1, s, i, dur(s, ops[i]));
      if (hi[s] < n) precede(s, i, s, hi[s], dur(s, ops[hi[s]]));
      for (int k = lo[s]; k < i; ++k) {
        if (order.implied_before(s, ops[k], ops[i])) {
          precede(s, k, s, i, dur(s, ops[i]));
        } else {
          pairs.push_back({s, k, i, static_cast<int>(lb.size())});
          lb.push_back(0.0);
          ub.push_back(1.0);
          obj.push_back(0.0);
          integer.push_back(pairs.back().col);
        }
      }
    }
    // Dependencies between stages (deps.h), each a hop of T_comm.
    for (int i = 0; i < n; ++i) {
      auto dep = dependency_of(ops[i], s, map);
      if (!dep || !dep->remote) continue;
      const int from = map.stage_of[dep->vs];
      const Op producer{dep->what == Product::Forward ? OpType::F : OpType::B, dep->mb, map.chunk_of[dep->vs]};
      precede(from, pos[from][key(producer)], s, i, comm + dur(s, ops[i]));
    }
    // C >= E[last] + the rest of the stage - origin of stage s (its start, or the global start).
    const double rest = end_of(s, n - 1) - end_of(s, last[s]);
    Row r{{{col_c, 1.0}}, rest - origin[s], inf};
    if (col[s][last[s]] >= 0) r.terms.push_back({col[s][last[s]], -1.0});
    else r.lo += end_of(s, last[s]);
    rows.push_back(std::move(r));
    // A window that reaches the stage's end may put another op last: with chunks, each chunk's
    // last W can be (every other op comes before some W). C covers them all.
    if (hi[s] == n)
      for (int i = lo[s]; i < n - 1; ++i)
        if (col[s][i] >= 0 && ops[i].type == OpType::W && ops[i].mb == pr.m - 1)
          rows.push_back({{{col_c, 1.0}, {col[s][i], -1.0}}, -origin[s], inf});
  }
  // Disjunctions: with o = 1, x then y; with o = 0, y then x. Two ops of one stage end at most
  // the incumbent's cost apart (every end lies in [stage start, origin + cost], origin <= start).
  const double big_m = c_inc + 1.0;
  for (const Pair& q : pairs) {
    const auto& ops = inc.schedule.stages[q.s];
    Row xy{{{col[q.s][q.y], 1.0}, {col[q.s][q.x], -1.0}, {q.col, -big_m}}, dur(q.s, ops[q.y]) - big_m, inf};
    Row yx{{{col[q.s][q.x], 1.0}, {col[q.s][q.y], -1.0}, {q.col, big_m}}, dur(q.s, ops[q.x]), inf};
    rows.push_back(std::move(xy));
    rows.push_back(std::move(yx));
  }
  if (pr.mem_limit) {
    // For each free op b: the memory of every op before it, plus its own, within the limit.
    const double limit = from_quanta(*pr.mem_limit);
    std::vector<std::vector<std::pair<int, double>>> free_terms(static_cast<size_t>(p) * n);
    std::vector<double> free_const(static_cast<size_t>(p) * n, 0.0);
    for (const Pair& q : pairs) {
      const auto& ops = inc.schedule.stages[q.s];
      double mx = from_quanta(memory_delta(ops[q.x], q.s, pr)), my = from_quanta(memory_delta(ops[q.y], q.s, pr));
      free_terms[q.s * n + q.y].push_back({q.col, mx});  // x before y when o = 1
      free_const[q.s * n + q.x] += my;                   // y before x when o = 0: (1 - o) * my
      free_terms[q.s * n + q.x].push_back({q.col, -my});
    }
    for (int s = 0; s < p; ++s) {
      const auto& ops = inc.schedule.stages[s];
      double before = 0;
      for (int i = 0; i < lo[s]; ++i) before += from_quanta(memory_delta(ops[i], s, pr));
      for (int i = lo[s]; i < hi[s]; ++i) {
        double constant = before + from_quanta(memory_delta(ops[i], s, pr)) + free_const[s * n + i];
        for (int k = lo[s]; k < hi[s]; ++k)
          if (k != i && order.implied_before(s, ops[k], ops[i])) constant += from_quanta(memory_delta(ops[k], s, pr));
        Row r{free_terms[s * n + i], -inf, limit - constant + 1e-9};
        if (r.terms.empty()) continue;
        rows.push_back(std::move(r));
      }
    }
  }

  // Column-major matrix for Cbc_loadProblem.
  const int ncols = static_cast<int>(lb.size()), nrows = static_cast<int>(rows.size());
  std::vector<CoinBigIndex> start(ncols + 1, 0);
  for (const Row& r : rows)
    for (auto [c, v] : r.terms) ++start[c + 1];
  for (int c = 0; c < ncols; ++c) start[c + 1] += start[c];
  std::vector<int> index(start[ncols]);
  std::vector<double> value(start[ncols]);
  std::vector<CoinBigIndex> fill(start.begin(), start.end() - 1);
  std::vector<double> row_lo(nrows), row_hi(nrows);
  for (int r = 0; r < nrows; ++r) {
    row_lo[r] = rows[r].lo;
    row_hi[r] = rows[r].hi;
    for (auto [c, v] : rows[r].terms) {
      index[fill[c]] = r;
      value[fill[c]++] = v;
    }
  }
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_Model* mdl = model.get();
  Cbc_loadProblem(mdl, ncols, nrows, start.data(), index.data(), value.data(), lb.data(), ub.data(), obj.data(),
                  row_lo.data(), row_hi.data());
  for (int c : integer) Cbc_setInteger(mdl, c);

  // Warm start: the incumbent's end times and orders (every binary 1).
  std::vector<double> x0(ncols, 1.0);
  for (int s = 0; s < p; ++s)
    for (int i = 0; i < n; ++i)
      if (col[s][i] >= 0) x0[col[s][i]] = end_of(s, i);
  x0[col_c] = c_inc;
  std::vector<int> all(ncols);
  std::iota(all.begin(), all.end(), 0);
  Cbc_setMIPStartI(mdl, ncols, all.data(), x0.data());
  Cbc_setLogLevel(mdl, 0);
  const double build_seconds = std::chrono::duration<double>(Clock::now() - built_from).count();
  Cbc_setMaximumSeconds(mdl, std::max(0.01, seconds - build_seconds));
  Cbc_setParameter(mdl, "threads", std::to_string(std::max(1, threads)).c_str());
  Cbc_setParameter(mdl, "timeMode", "elapsed");  // wall clock: the machine may be shared
  // CBC 2.10.8's preprocessing crashed (CglPreProcess::postProcess) on a window model stopped at
  // its time limit, so windows go without it; the whole model keeps it (without, CBC left tiny
  // models unproven).
  if (tie_weight > 0) Cbc_setParameter(mdl, "preprocess", "off");
  Cbc_solve(mdl);

  Solve out;
  out.build_seconds = build_seconds;
  out.binaries = static_cast<int>(pairs.size());
  out.bound = Cbc_getBestPossibleObjValue(mdl);
  out.optimal = Cbc_isProvenOptimal(mdl) != 0;
  out.nodes = Cbc_getNodeCount(mdl);
  const double* x = Cbc_bestSolution(mdl);
  if (!x) return out;
  out.objective = Cbc_getObjValue(mdl);
  // Each stage's window in the order the binaries say: its rank is how many window ops precede it.
  Schedule found = inc.schedule;
  for (int s = 0; s < p; ++s) {
    int w = hi[s] - lo[s];
    if (w <= 1) continue;
    const auto& ops = inc.schedule.stages[s];
    std::vector<int> rank(w, 0);
    for (int i = lo[s]; i < hi[s]; ++i)
      for (int k = lo[s]; k < i; ++k) ++rank[i - lo[s]];  // the incumbent's order, corrected below
    for (const Pair& q : pairs)
      if (q.s == s && x[q.col] < 0.5) {  // y before x: undo the rank the loop above gave y
        --rank[q.y - lo[s]];
        ++rank[q.x - lo[s]];
      }
    std::vector<int> at(w, -1);
    for (int k = 0; k < w; ++k) {
      if (rank[k] < 0 || rank[k] >= w || at[rank[k]] >= 0) return out;  // inconsistent: not a total order
      at[rank[k]] = lo[s] + k;
    }
    for (int r = 0; r < w; ++r) found.stages[s][lo[s] + r] = ops[at[r]];
  }
  out.schedule = std::move(found);
  return out;
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

std::optional<IlpResult> refine_with_cbc(const Problem& pr, const Schedule& warm_in, const IlpOptions& options,
                                         std::vector<Diag>* diags) {
  const auto started = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
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
  inc.schedule.level = kLevelCompute;
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
  // Span bounds hold for the wall clock too (wall >= span); the ramp bound only for the wall.
  const Ticks known = std::max(options.known_bound, cost_lower_bound(pr, measure, inc.schedule.placement));
  IlpResult result;
  result.measure = measure;
  result.warm_cost = inc.cost;
  result.lower_bound = from_quanta(known);
  double last_report = -1;
  auto report = [&](bool force) {
    if (!options.progress || (!force && elapsed() - last_report < 1.0)) return;
    last_report = elapsed();
    options.progress({elapsed(), inc.cost, result.lower_bound, result.windows});
  };
  // A candidate order replaces the incumbent only if the exact simulator says it is better.
  auto consider = [&](std::optional<Schedule> candidate) {
    if (!candidate || !validate(*candidate, pr).empty()) return false;
    std::vector<Diag> why;
    auto t = simulate_timeline(*candidate, pr, &why);
    if (!t) return false;
    Ticks total = total_span(*t), cost = cost_of(*t, measure);
    // The true cost, when given, ranks first (the model's cost only stands for it); then the
    // model's cost and the tie-breaker.
    Ticks true_cost = options.true_cost ? options.true_cost(*candidate) : -1;
    if (options.true_cost && (true_cost < 0 || (inc.true_cost >= 0 && true_cost > inc.true_cost))) return false;
    if (true_cost == inc.true_cost && (cost > inc.cost || (cost == inc.cost && total >= inc.total))) return false;
    inc.schedule = std::move(*candidate);
    inc.timeline = std::move(*t);
    inc.cost = cost;
    inc.total = total;
    inc.true_cost = true_cost;
    return true;
  };
  auto met_bound = [&] { return inc.cost <= known; };

  // Whole model: one binary per free pair on every stage.
  const VirtualStageMap map(inc.schedule.placement);
  const StageOrder order(map);
  long full_binaries = 0;
  for (int s = 0; s < p; ++s)
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < i; ++k)
        full_binaries += !order.implied_before(s, inc.schedule.stages[s][k], inc.schedule.stages[s][i]);
  result.mode = full_binaries <= options.full_model_binaries ? "full" : "lns";
  result.status = "time_limit";
  if (met_bound()) {
    result.status = "optimal";
  } else if (result.mode == "full") {
    std::vector<int> lo(p, 0), hi(p, n);
    Solve sv = solve_window(pr, inc, lo, hi, std::numeric_limits<Ticks>::max(), options.seconds - elapsed(),
                            options.threads, 0.0, known);
    ++result.windows;
    result.nodes += sv.nodes;
    result.binaries = sv.binaries;
    result.model_objective = sv.objective;
    consider(std::move(sv.schedule));
    // CBC's bound holds for every schedule (the model loses nothing). Optimal only if the
    // simulated incumbent meets it: a CBC solution the validator rejected proves nothing.
    result.lower_bound = std::max(result.lower_bound, std::min(sv.bound, from_quanta(inc.cost)));
    if (sv.optimal && from_quanta(inc.cost) <= sv.bound + 1e-6) result.status = "optimal";
  } else {
    // Large-neighbourhood search: time windows holding about window_ops ops on the busiest stage,
    // half-overlapping, swept from start to end; windows grow when a sweep finds nothing.
    Ticks mean_op = 0;
    for (int s = 0; s < p; ++s) mean_op = std::max(mean_op, pr.busy_time(s) / std::max(1, n));
    int window_ops = std::max(2, options.window_ops);
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
      for (Ticks t0 = 0; t0 < inc.timeline.makespan; t0 += std::max<Ticks>(1, len / 2))
        for (int s0 = 0; s0 < p; s0 += kBlock / 2) {
          windows.push_back({t0, s0});
          score.push_back(window_idle(inc, t0, len, s0, std::min(p, s0 + kBlock)));
          if (s0 + kBlock >= p) break;
        }
      std::vector<size_t> order(windows.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
      for (size_t w : order) {
        auto [t0, s0] = windows[w];
        if (done) break;
        double left = options.seconds - elapsed();
        if (left < 0.05) {
          done = true;
          break;
        }
        std::vector<int> lo, hi;
        window_positions(inc, t0, len, &lo, &hi);
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
            if (hi[s] < n) t_drop = std::max(t_drop, inc.timeline.ops[s][hi[s]].start + 1);
        }
        Solve sv = solve_window(pr, inc, lo, hi, t_drop,
                                std::min(left - last_build_seconds - 0.2, std::max(1.0, options.seconds / 10)),
                                options.threads, tie_weight, known);
        last_build_seconds = sv.build_seconds;
        ++result.windows;
        result.nodes += sv.nodes;
        result.binaries = std::max(result.binaries, sv.binaries);
        if (consider(std::move(sv.schedule))) improved = true;
        report(false);
        if (met_bound()) done = true;
      }
      if (done) break;
      if (!improved) {
        if (window_ops >= max_window_ops) {
          result.status = "local_optimum";
          break;
        }
        window_ops += std::max(1, window_ops / 2);
      }
    }
  }
  if (met_bound()) result.status = "optimal";
  result.proven_optimal = result.status == "optimal";
  // Optimal means the bound meets the cost (to CBC's tolerance): report them equal.
  if (result.proven_optimal) result.lower_bound = from_quanta(inc.cost);
  result.schedule = std::move(inc.schedule);
  result.schedule.method = "ilp";
  result.cost = inc.cost;
  result.seconds = elapsed();
  report(true);
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
