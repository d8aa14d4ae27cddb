// Appendix G as a MILP for CBC (see refine_ilp.h).
//
// Variables: E[s][k], the end time of op k on stage s (k = j for F_j, m + j for B_j, 2m + j for
// W_j); one binary per pair of ops whose order is not implied; C, the span to minimise. Implied
// orders: each kind in microbatch order, F_j before B_j before W_j, hence F_j before B_j' and W_j'
// and B_j before W_j' for j <= j'. The free pairs are (F_j, B_j'), (F_j, W_j'), (B_j, W_j') with
// j > j'. The last op of a stage is therefore W_{m-1} and its first F_0, so the span is
// E[s][W_{m-1}] - E[s][F_0] + T_F.
#include "planner/refine_ilp.h"

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

#include "planner/deps.h"
#include "planner/simulate.h"
#include "planner/validate.h"

namespace zbpp {

std::string IlpResult::summary() const {
  char buf[256];
  double s = from_quanta(span);
  double gap = s > 0 ? std::max(0.0, (s - lower_bound) / s) : 0.0;
  std::snprintf(buf, sizeof buf, "span %s (warm start %s), lower bound %.6g, gap %.2f %%%s, %d order variables",
                format_quanta(span).c_str(), format_quanta(warm_span).c_str(), lower_bound, 100 * gap,
                proven_optimal ? " (optimal)" : "", binaries);
  return buf;
}

namespace {

struct Row {
  std::vector<int> cols;
  std::vector<double> coefs;
  char sense;
  double rhs;
};

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

bool kinds_in_microbatch_order(const Schedule& s) {
  for (const auto& ops : s.stages) {
    int next[3] = {0, 0, 0};
    for (const Op& op : ops) {
      int k = op.type == OpType::F ? 0 : op.type == OpType::B ? 1 : 2;
      if (op.mb != next[k]++) return false;
    }
  }
  return true;
}

}  // namespace

std::optional<IlpResult> refine_ilp(const Problem& pr, const Schedule& warm_in, const IlpOptions& options,
                                    std::vector<Diag>* diags) {
  auto fail = [&](const std::string& msg) {
    diags->push_back({"", "", -1, -1, "", "ilp: " + msg});
    return std::nullopt;
  };
  if (pr.chunks != 1 || warm_in.chunks != 1) return fail("the ILP plans one chunk per stage");
  Schedule warm = split_bw(warm_in);
  warm.level = kLevelCompute;
  if (!validate(warm, pr).empty()) return fail("the warm start is not a valid schedule");
  if (!kinds_in_microbatch_order(warm)) return fail("the warm start must run F's, B's and W's in microbatch order");
  std::vector<Diag> unused;
  auto warm_timeline = simulate_timeline(warm, pr, &unused);
  const int p = pr.p, m = pr.m, n = 3 * m;
  const double H = from_quanta(warm_timeline->makespan) + from_quanta(*std::max_element(pr.t_f.begin(), pr.t_f.end()));
  const double comm = from_quanta(pr.t_comm);

  auto dur = [&](int s, int k) {
    return from_quanta(k < m ? pr.t_f[s] : k < 2 * m ? pr.t_b[s] : pr.t_w[s]);
  };
  auto mem = [&](int s, int k) {
    OpType t = k < m ? OpType::F : k < 2 * m ? OpType::B : OpType::W;
    return from_quanta(memory_delta(Op{t, 0, 0}, s, pr));
  };
  // Columns: E[s][k] = s * n + k, then C, then the binaries.
  auto E = [&](int s, int k) { return s * n + k; };
  const int col_c = p * n;
  struct Pair {
    int s, a, b, col;  // a before b when the binary is 1
  };
  std::vector<Pair> pairs;
  int next_col = col_c + 1;
  for (int s = 0; s < p; ++s)
    for (int j = 0; j < m; ++j)
      for (int j2 = 0; j2 < j; ++j2) {
        pairs.push_back({s, j, m + j2, next_col++});          // F_j vs B_j'
        pairs.push_back({s, j, 2 * m + j2, next_col++});      // F_j vs W_j'
        pairs.push_back({s, m + j, 2 * m + j2, next_col++});  // B_j vs W_j'
      }

  std::vector<Row> rows;
  auto add = [&](std::vector<int> cols, std::vector<double> coefs, char sense, double rhs) {
    rows.push_back({std::move(cols), std::move(coefs), sense, rhs});
  };
  for (int s = 0; s < p; ++s) {
    for (int kind = 0; kind < 3; ++kind)
      for (int j = 1; j < m; ++j) add({E(s, kind * m + j), E(s, kind * m + j - 1)}, {1, -1}, 'G', dur(s, kind * m + j));
    for (int j = 0; j < m; ++j) {
      add({E(s, m + j), E(s, j)}, {1, -1}, 'G', dur(s, m + j));            // F_j before B_j
      add({E(s, 2 * m + j), E(s, m + j)}, {1, -1}, 'G', dur(s, 2 * m + j));  // B_j before W_j
      if (s > 0) add({E(s, j), E(s - 1, j)}, {1, -1}, 'G', comm + dur(s, j));
      if (s + 1 < p) add({E(s, m + j), E(s + 1, m + j)}, {1, -1}, 'G', comm + dur(s, m + j));
    }
    // C >= E[W_{m-1}] - E[F_0] + T_F, and never less than the stage's busy time (a cut that
    // tightens CBC's lower bound; the big-M order constraints alone relax to almost nothing).
    add({col_c, E(s, 3 * m - 1), E(s, 0)}, {1, -1, 1}, 'G', dur(s, 0));
    add({col_c}, {1}, 'G', m * (dur(s, 0) + dur(s, m) + dur(s, 2 * m)));
  }
  for (const Pair& q : pairs) {
    add({E(q.s, q.b), E(q.s, q.a), q.col}, {1, -1, -H}, 'G', dur(q.s, q.b) - H);  // o = 1: a, then b
    add({E(q.s, q.a), E(q.s, q.b), q.col}, {1, -1, H}, 'G', dur(q.s, q.a));       // o = 0: b, then a
  }
  if (pr.mem_limit) {
    // For each op b: M_B-style deltas of every op before it, plus its own, within the limit.
    std::vector<std::vector<std::pair<int, int>>> free_with(static_cast<size_t>(p) * n);  // (col, sign)
    for (const Pair& q : pairs) {
      free_with[q.s * n + q.b].push_back({q.col, q.a});   // a before b when o = 1
      free_with[q.s * n + q.a].push_back({-q.col - 1, q.b});  // b before a when o = 0
    }
    double limit = from_quanta(*pr.mem_limit);
    auto fixed_before = [&](int a, int b) {  // implied "a before b" (a != b, pair not free)
      int ka = a / m, ja = a % m, kb = b / m, jb = b % m;
      if (ka == kb) return ja < jb;
      if (ka < kb) return ja <= jb;  // F before B/W, B before W of later or same microbatch
      return false;                  // a later kind before an earlier kind: only through free pairs
    };
    for (int s = 0; s < p; ++s)
      for (int b = 0; b < n; ++b) {
        double constant = mem(s, b);
        std::vector<int> cols;
        std::vector<double> coefs;
        for (int a = 0; a < n; ++a)
          if (a != b && fixed_before(a, b)) constant += mem(s, a);
        for (auto [col, a] : free_with[s * n + b]) {
          if (col >= 0) {
            cols.push_back(col);
            coefs.push_back(mem(s, a));
          } else {  // (1 - o) * mem
            constant += mem(s, a);
            cols.push_back(-col - 1);
            coefs.push_back(-mem(s, a));
          }
        }
        add(cols, coefs, 'L', limit - constant + 1e-9);
      }
  }

  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_Model* mdl = model.get();
  for (int s = 0; s < p; ++s)
    for (int k = 0; k < n; ++k) Cbc_addCol(mdl, "", dur(s, k), H, 0.0, 0, 0, nullptr, nullptr);
  Cbc_addCol(mdl, "", 0.0, 1e30, 1.0, 0, 0, nullptr, nullptr);
  for (size_t i = 0; i < pairs.size(); ++i) Cbc_addCol(mdl, "", 0.0, 1.0, 0.0, 1, 0, nullptr, nullptr);
  for (const Row& r : rows)
    Cbc_addRow(mdl, "", static_cast<int>(r.cols.size()), r.cols.data(), r.coefs.data(), r.sense, r.rhs);

  // Warm start: the heuristic's end times and orders.
  std::vector<double> start_values(next_col, 0.0);
  std::vector<std::vector<int>> position(p, std::vector<int>(n, 0));
  for (int s = 0; s < p; ++s)
    for (size_t i = 0; i < warm.stages[s].size(); ++i) {
      const Op& op = warm.stages[s][i];
      int k = (op.type == OpType::F ? 0 : op.type == OpType::B ? m : 2 * m) + op.mb;
      start_values[E(s, k)] = from_quanta(warm_timeline->ops[s][i].end);
      position[s][k] = static_cast<int>(i);
    }
  start_values[col_c] = from_quanta(warm_timeline->span);
  for (const Pair& q : pairs) start_values[q.col] = position[q.s][q.a] < position[q.s][q.b] ? 1.0 : 0.0;
  std::vector<int> all_cols(next_col);
  std::iota(all_cols.begin(), all_cols.end(), 0);
  Cbc_setMIPStartI(mdl, next_col, all_cols.data(), start_values.data());
  Cbc_setLogLevel(mdl, 0);
  Cbc_setMaximumSeconds(mdl, options.seconds);
  Cbc_setParameter(mdl, "threads", "1");
  Cbc_solve(mdl);

  IlpResult result;
  result.binaries = static_cast<int>(pairs.size());
  result.warm_span = warm_timeline->span;
  result.lower_bound = Cbc_getBestPossibleObjValue(mdl);
  result.proven_optimal = Cbc_isProvenOptimal(mdl) != 0;
  result.schedule = warm;
  result.span = warm_timeline->span;
  const double* x = Cbc_bestSolution(mdl);
  if (x) {
    // Each stage's order: ops by start time (end - duration), ties by kind then microbatch.
    Schedule found = warm;
    for (int s = 0; s < p; ++s) {
      std::vector<int> ks(n);
      std::iota(ks.begin(), ks.end(), 0);
      std::stable_sort(ks.begin(), ks.end(), [&](int a, int b) {
        double sa = x[E(s, a)] - dur(s, a), sb = x[E(s, b)] - dur(s, b);
        if (std::fabs(sa - sb) > 1e-7) return sa < sb;
        return a < b;
      });
      found.stages[s].clear();
      for (int k : ks) found.stages[s].push_back({k < m ? OpType::F : k < 2 * m ? OpType::B : OpType::W, k % m, 0});
    }
    found.method = "ilp";
    if (validate(found, pr).empty()) {
      Ticks span = simulate_span(found, pr);
      if (span >= 0 && span <= result.span) {
        result.schedule = std::move(found);
        result.span = span;
      }
    }
  }
  result.schedule.method = "ilp";
  return result;
}

}  // namespace zbpp
