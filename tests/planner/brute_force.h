// Exhaustive search over per-stage op orders for tiny problems: the reference the bounds and the
// ILP are checked against. Shared by bounds_test.cpp and refine_ilp_test.cpp.
#pragma once

#include <functional>
#include <vector>

#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"
#include "core/validate.h"

namespace zbpp::test {

/// Every order of one stage's F/B/W ops with F_j before B_j before W_j. With `microbatch_order`,
/// also each kind in microbatch order (the space the ILP searches); without, any interleaving.
inline std::vector<std::vector<Op>> stage_orders(int m, bool microbatch_order) {
  std::vector<std::vector<Op>> out;
  std::vector<Op> cur;
  std::vector<int> done(m, 0);  // per microbatch: 0 none, 1 F, 2 B, 3 W
  std::function<void()> walk = [&]() {
    if (static_cast<int>(cur.size()) == 3 * m) {
      out.push_back(cur);
      return;
    }
    for (int j = 0; j < m; ++j) {
      if (done[j] == 3) continue;
      // In microbatch order, j's next op must follow the same kind of j-1.
      if (microbatch_order && j > 0 && done[j - 1] <= done[j]) continue;
      static const OpType kinds[] = {OpType::F, OpType::B, OpType::W};
      cur.push_back({kinds[done[j]], j, 0});
      ++done[j];
      walk();
      --done[j];
      cur.pop_back();
    }
  };
  walk();
  return out;
}

/// The smallest simulated compute cost (the span or the makespan) over all combinations of
/// per-stage orders that keep the memory limit and do not deadlock; -1 when none does.
inline Ticks brute_force_cost(const Problem& pr, Cost cost_kind, bool microbatch_order = true) {
  auto orders = stage_orders(pr.m, microbatch_order);
  Ticks best = -1;
  Schedule s;
  s.p = pr.p;
  s.m = pr.m;
  s.placement = interleaved_placement(pr.p, 1);
  s.stages.resize(pr.p);
  // Per stage, the orders within the memory limit (memory is per stage).
  std::vector<std::vector<const std::vector<Op>*>> fitting(pr.p);
  for (int st = 0; st < pr.p; ++st)
    for (const auto& o : orders) {
      Mem now = 0;
      bool ok = true;
      for (const Op& op : o) {
        now += memory_delta(op, st, pr);
        if (pr.mem_limit && now > *pr.mem_limit) ok = false;
      }
      if (ok) fitting[st].push_back(&o);
    }
  std::function<void(int)> pick = [&](int st) {
    if (st == pr.p) {
      Ticks cost = simulate_cost(s, pr, cost_kind);
      if (cost >= 0 && (best < 0 || cost < best)) best = cost;
      return;
    }
    for (const auto* o : fitting[st]) {
      s.stages[st] = *o;
      pick(st + 1);
    }
  };
  pick(0);
  return best;
}

/// The smallest simulated span (the paper's cost); see brute_force_cost.
inline Ticks brute_force_span(const Problem& pr, bool microbatch_order = true) {
  return brute_force_cost(pr, Cost::kSpan, microbatch_order);
}

}  // namespace zbpp::test
