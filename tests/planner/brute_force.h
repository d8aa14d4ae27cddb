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

/// Every order of one stage's F/B/W ops, the stage holding virtual stages `vs` (one per chunk),
/// that the dependency rule allows within each microbatch: F_j before B_j before
/// W_j of each chunk, F_j's by rising virtual stage, B_j's by falling virtual stage. With
/// `microbatch_order`, also each kind of each chunk in microbatch order (the space the ILP
/// searches); without, any interleaving of the microbatches.
inline std::vector<std::vector<Op>> stage_orders(int m, bool microbatch_order, const std::vector<int>& vs = {0}) {
  const int chunks = static_cast<int>(vs.size());
  static const OpType kinds[] = {OpType::F, OpType::B, OpType::W};
  std::vector<std::vector<Op>> out;
  std::vector<Op> cur;
  std::vector<int> done(static_cast<size_t>(m) * chunks, 0);  // per (microbatch, chunk): 0 none, 1 F, 2 B, 3 W
  auto at = [&](int j, int c) -> int& { return done[static_cast<size_t>(j) * chunks + c]; };
  // Whether (j, c)'s next op may run now.
  auto ready = [&](int j, int c) {
    const int next = at(j, c);
    if (next == 3) return false;
    if (microbatch_order && j > 0 && at(j - 1, c) <= next) return false;
    for (int o = 0; o < chunks; ++o) {
      if (next == 0 && vs[o] < vs[c] && at(j, o) < 1) return false;  // F waits for lower virtual stages' F
      if (next == 1 && vs[o] > vs[c] && at(j, o) < 2) return false;  // B waits for higher ones' B
    }
    return true;
  };
  std::function<void()> walk = [&]() {
    if (static_cast<int>(cur.size()) == 3 * m * chunks) {
      out.push_back(cur);
      return;
    }
    for (int j = 0; j < m; ++j)
      for (int c = 0; c < chunks; ++c) {
        if (!ready(j, c)) continue;
        cur.push_back({kinds[at(j, c)], j, c});
        ++at(j, c);
        walk();
        --at(j, c);
        cur.pop_back();
      }
  };
  walk();
  return out;
}

/// The smallest simulated compute cost (the span or the makespan) over all combinations of
/// per-stage orders that keep the memory limit and do not deadlock; -1 when none does. Chunked
/// problems are placed by their placement, or in a V when they give none and have 2 chunks.
inline Ticks brute_force_cost(const Problem& pr, Cost cost_kind, bool microbatch_order = true) {
  Ticks best = -1;
  Schedule s;
  s.p = pr.p;
  s.m = pr.m;
  s.chunks = pr.chunks;
  s.placement = !pr.placement.empty() ? pr.placement
                : pr.chunks == 2      ? v_shape_placement(pr.p)
                                      : interleaved_placement(pr.p, pr.chunks);
  s.stages.resize(pr.p);
  // Per stage, the orders within the memory limit (memory is per stage).
  std::vector<std::vector<std::vector<Op>>> fitting(pr.p);
  for (int st = 0; st < pr.p; ++st)
    for (auto& o : stage_orders(pr.m, microbatch_order, s.placement[st])) {
      Mem now = 0;
      bool ok = true;
      for (const Op& op : o) {
        now += memory_delta(op, st, pr);
        if (pr.mem_limit && now > *pr.mem_limit) ok = false;
      }
      if (ok) fitting[st].push_back(std::move(o));
    }
  std::function<void(int)> pick = [&](int st) {
    if (st == pr.p) {
      Ticks cost = simulate_cost(s, pr, cost_kind);
      if (cost >= 0 && (best < 0 || cost < best)) best = cost;
      return;
    }
    for (const auto& o : fitting[st]) {
      s.stages[st] = o;
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
