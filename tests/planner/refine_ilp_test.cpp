// Tests for planner/refine_ilp.cpp: on small problems CBC proves optimality and the result equals
// a brute-force search over the same space; it never loses to its warm start; W's stay in
// microbatch order.
#include "planner/refine_ilp.h"

#include <algorithm>
#include <functional>

#include <catch2/catch.hpp>

#include "planner/search_heuristic.h"
#include "planner/simulate.h"
#include "test_util.h"

using namespace zbpp;

namespace {

// Every order of one stage's F/B/W ops with each kind in microbatch order and F_j < B_j < W_j.
std::vector<std::vector<Op>> stage_orders(int m) {
  std::vector<std::vector<Op>> out;
  std::vector<Op> cur;
  std::function<void(int, int, int)> walk = [&](int f, int b, int w) {
    if (w == m) {
      out.push_back(cur);
      return;
    }
    auto go = [&](OpType t, int mb, int nf, int nb, int nw) {
      cur.push_back({t, mb, 0});
      walk(nf, nb, nw);
      cur.pop_back();
    };
    if (f < m) go(OpType::F, f, f + 1, b, w);
    if (b < f) go(OpType::B, b, f, b + 1, w);
    if (w < b) go(OpType::W, w, f, b, w + 1);
  };
  walk(0, 0, 0);
  return out;
}

Ticks brute_force_span(const Problem& pr) {
  auto orders = stage_orders(pr.m);
  Ticks best = -1;
  Schedule s;
  s.p = pr.p;
  s.m = pr.m;
  s.placement = interleaved_placement(pr.p, 1);
  s.stages.resize(pr.p);
  std::function<void(int)> pick = [&](int st) {
    if (st == pr.p) {
      if (!validate_memory(s, pr).empty()) return;
      Ticks span = simulate_span(s, pr);
      if (span >= 0 && (best < 0 || span < best)) best = span;
      return;
    }
    for (const auto& o : orders) {
      s.stages[st] = o;
      pick(st + 1);
    }
  };
  pick(0);
  return best;
}

}  // namespace

TEST_CASE("ilp: proves optimality on small problems and matches brute force") {
  for (auto [p, m, limit] : {std::tuple{2, 2, "1p"}, std::tuple{2, 3, "2p"}, std::tuple{3, 2, ""}, std::tuple{2, 3, "1p"}}) {
    INFO("p=" << p << " m=" << m << " limit " << limit);
    Problem pr = test::make_problem(p, m, 1.0, 1.5, 0.7, 0.2, 1, 0.4, limit);
    std::vector<Diag> diags;
    auto warm = search_heuristic(pr, &diags);
    REQUIRE(warm);
    auto result = refine_ilp(pr, warm->schedule, IlpOptions{20}, &diags);
    INFO(format_diags(diags));
    REQUIRE(result);
    test::check_invariants(result->schedule, pr);
    CHECK(result->proven_optimal);
    CHECK(result->span <= warm->span);
    CHECK(result->span == brute_force_span(pr));
    CHECK(from_quanta(result->span) == Approx(result->lower_bound).margin(1e-6));
  }
}

TEST_CASE("ilp: keeps W in microbatch order and never loses to the warm start") {
  Problem pr = test::make_problem(4, 6, 1.2, 1.0, 0.6, 0.05, 1, 0.4, "1.5p");
  std::vector<Diag> diags;
  auto warm = search_heuristic(pr, &diags);
  REQUIRE(warm);
  auto result = refine_ilp(pr, warm->schedule, IlpOptions{2}, &diags);
  REQUIRE(result);
  test::check_invariants(result->schedule, pr);
  CHECK(result->span <= warm->span);
  CHECK(result->span == simulate_span(result->schedule, pr));
  CHECK(from_quanta(result->span) >= result->lower_bound - 1e-6);
  for (const auto& ops : result->schedule.stages) {
    int next_w = 0;
    for (const Op& op : ops)
      if (op.type == OpType::W) CHECK(op.mb == next_w++);
  }
}

TEST_CASE("ilp: refuses what it cannot model") {
  Problem two = test::make_problem(2, 2, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  std::vector<Diag> diags;
  Schedule any;
  CHECK_FALSE(refine_ilp(two, any, IlpOptions{1}, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "ilp: the ILP plans one chunk per stage");
}
