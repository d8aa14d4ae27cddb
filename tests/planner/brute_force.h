// Exhaustive search over per-stage op orders for tiny problems: the reference the bounds and the
// ILP are checked against. Shared by bounds_test.cpp and refine_ilp_test.cpp.
#pragma once

#include <functional>
#include <vector>

#include "core/deps.h"
#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"
#include "core/validate.h"

namespace zbpp::test {

/// Every order of one stage's F/B/W ops (every chunk's) that keeps the memory limit and could run:
/// per (microbatch, chunk) F before B before W, and among one microbatch's chunks on the stage the
/// F's up the virtual stages and the B's down (any other order deadlocks). With
/// `microbatch_order`, also each kind of each chunk in microbatch order (the space the ILP searches).
inline std::vector<std::vector<Op>> stage_orders(const Problem& pr, const std::vector<int>& chunk_vs, int stage,
                                                 bool microbatch_order) {
  const int m = pr.m, chunks = static_cast<int>(chunk_vs.size());
  std::vector<std::vector<Op>> out;
  std::vector<Op> cur;
  std::vector<int> done(static_cast<size_t>(m) * chunks, 0);  // per (mb, chunk): 0 none, 1 F, 2 B, 3 W
  auto at = [&](int j, int c) -> int& { return done[static_cast<size_t>(j) * chunks + c]; };
  Mem held = 0;
  std::function<void()> walk = [&]() {
    if (static_cast<int>(cur.size()) == 3 * m * chunks) {
      out.push_back(cur);
      return;
    }
    for (int j = 0; j < m; ++j)
      for (int c = 0; c < chunks; ++c) {
        const int next = at(j, c);
        if (next == 3) continue;
        // In microbatch order, j's next op must follow the same kind of j-1.
        if (microbatch_order && j > 0 && at(j - 1, c) <= next) continue;
        bool ready = true;
        for (int d = 0; d < chunks; ++d) {
          if (next == 0 && chunk_vs[d] < chunk_vs[c] && at(j, d) < 1) ready = false;  // F's up
          if (next == 1 && chunk_vs[d] > chunk_vs[c] && at(j, d) < 2) ready = false;  // B's down
        }
        if (!ready) continue;
        static const OpType kinds[] = {OpType::F, OpType::B, OpType::W};
        const Op op{kinds[next], j, c};
        const Mem delta = memory_delta(op, stage, pr);
        if (pr.mem_limit && held + delta > *pr.mem_limit) continue;
        held += delta;
        cur.push_back(op);
        ++at(j, c);
        walk();
        --at(j, c);
        cur.pop_back();
        held -= delta;
      }
  };
  walk();
  return out;
}

/// The smallest simulated compute cost (the span or the makespan) over all combinations of
/// per-stage orders that keep the memory limit and do not deadlock, with `placement` (empty: the
/// problem's, else a V for 2 chunks, else interleaved); -1 when none does.
inline Ticks brute_force_cost(const Problem& pr, Cost cost_kind, bool microbatch_order = true,
                              const std::vector<std::vector<int>>& placement = {}) {
  Ticks best = -1;
  Schedule s;
  s.p = pr.p;
  s.m = pr.m;
  s.chunks = pr.chunks;
  s.placement = !placement.empty()     ? placement
                : !pr.placement.empty() ? pr.placement
                : pr.chunks == 2        ? v_shape_placement(pr.p)
                                        : interleaved_placement(pr.p, pr.chunks);
  s.stages.resize(pr.p);
  std::vector<std::vector<std::vector<Op>>> fitting(pr.p);  // per stage (memory is per stage)
  for (int st = 0; st < pr.p; ++st) fitting[st] = stage_orders(pr, s.placement[st], st, microbatch_order);
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
inline Ticks brute_force_span(const Problem& pr, bool microbatch_order = true,
                              const std::vector<std::vector<int>>& placement = {}) {
  return brute_force_cost(pr, Cost::kSpan, microbatch_order, placement);
}

}  // namespace zbpp::test
