// Appendix G as a MILP for CBC, for the whole problem or one window of it (see refine_ilp.h): built,
// solved, and the order CBC found read back. Part of the ILP module, libzbpp_ilp.so.
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
// Minimising the span, C bounds every stage's span; minimising the makespan, C bounds every
// stage's last end measured from the global start (stage 0's F_0, at 0).
//
// A window frees, on every stage, the order of the ops the incumbent starts in one time range;
// every other pair keeps the incumbent's order. Ops that start before the window cannot move
// (they wait for nothing in it), so they enter as constants.
#include "planner/ilp_model.h"

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>

namespace zbpp {

Solve solve_window(const Problem& pr, const Incumbent& inc, const std::vector<int>& lo, const std::vector<int>& hi,
                   Ticks t_drop, double seconds, int threads, double tie_weight, Ticks known_bound) {
  const auto built_from = Clock::now();
  const int p = pr.p, n = 3 * pr.m * pr.chunks;
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
    // the makespan: the stage starts at stage_start, the same in every schedule, and is then busy).
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
    // Dependencies between stages (deps.h), each a hop of its link's T_comm.
    for (int i = 0; i < n; ++i) {
      auto dep = dependency_of(ops[i], s, map);
      if (!dep || !dep->remote) continue;
      const int from = map.stage_of[dep->vs];
      const Op producer{dep->what == Product::Forward ? OpType::F : OpType::B, dep->mb, map.chunk_of[dep->vs]};
      precede(from, pos[from][key(producer)], s, i, from_quanta(pr.hop(from, s)) + dur(s, ops[i]));
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
  if (pr.limited()) {
    // For each free op b: the memory of every op before it, plus its own, within its stage's limit.
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
      if (!pr.limit(s)) continue;
      const double limit = from_quanta(*pr.limit(s));
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

}  // namespace zbpp
