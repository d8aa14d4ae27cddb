// Tests for core/simulate.cpp: exact start/end times, comm latency, span vs makespan, memory,
// deadlock chains.
#include "core/simulate.h"

#include <catch2/catch.hpp>

#include "planner/gen_baseline.h"
#include "test_util.h"

using namespace zbpp;
using zbpp::test::inline_schedule;
using zbpp::test::make_problem;

namespace {
constexpr Ticks U = kQuantaPerUnit;  // one time unit in ticks
}

TEST_CASE("simulate: ops start when the stage is free and the input has arrived") {
  // F=2, B=3, W=1, T_comm=1 on two stages, one microbatch.
  Problem pr = make_problem(2, 1, 2, 3, 1, 1);
  Schedule s = inline_schedule({"F0 B0 W0", "F0 B0 W0"}, 1);
  std::vector<Diag> diags;
  auto t = simulate_timeline(s, pr, &diags);
  REQUIRE(t);
  // stage 0: F0 [0,2]; stage 1: F0 [3,5] (2 + comm), B0 [5,8], W0 [8,9]; stage 0: B0 [9,12], W0 [12,13]
  CHECK(t->ops[1][0].start == 3 * U);
  CHECK(t->ops[1][1].end == 8 * U);
  CHECK(t->ops[0][1].start == 9 * U);
  CHECK(t->ops[0][2].end == 13 * U);
  CHECK(t->span == 13 * U);
  CHECK(t->makespan == 13 * U);
  CHECK(t->busy == std::vector<Ticks>{6 * U, 6 * U});
  CHECK(t->span_bubble_rate == Approx(7.0 / 13.0));
}

TEST_CASE("simulate: each hop takes its own link's T_comm, in both directions") {
  // F=2, B=3, W=1 on three stages; link 0 takes 1, link 1 takes 4.
  ProblemInput in = test::per_stage_input(3, 1, 1, [](int) { return std::array<double, 3>{2, 3, 1}; });
  in.t_comm = {1, 4};
  const Problem pr = test::checked_problem(in);
  Schedule s = inline_schedule({"F0 B0 W0", "F0 B0 W0", "F0 B0 W0"}, 1);
  std::vector<Diag> diags;
  auto t = simulate_timeline(s, pr, &diags);
  REQUIRE(t);
  // F0: stage 0 [0,2], stage 1 [3,5], stage 2 [9,11]; B0: stage 2 [11,14], stage 1 [18,21], stage 0 [22,25]
  CHECK(t->ops[1][0].start == 3 * U);
  CHECK(t->ops[2][0].start == 9 * U);
  CHECK(t->ops[1][1].start == 18 * U);
  CHECK(t->ops[0][1].start == 22 * U);
  CHECK(t->makespan == 26 * U);
}

TEST_CASE("simulate: span measures each stage from its own first op, makespan from the first op anywhere") {
  // Stage 1 starts late and ends last: its span (6) is less than the makespan (9).
  Problem pr = make_problem(2, 1, 2, 3, 1, 1);
  Schedule s = inline_schedule({"F0 BW0", "F0 B0 W0"}, 1);
  std::vector<Diag> diags;
  auto t = simulate_timeline(s, pr, &diags);
  REQUIRE(t);
  // stage 0: F0 [0,2], BW0 waits for stage 1's B0 (ends 8) + comm: [9,13]
  CHECK(t->ops[0][1].start == 9 * U);
  CHECK(t->span == 13 * U);
  CHECK(t->makespan == 13 * U);
}

TEST_CASE("simulate: times never drift over many ops") {
  // 0.1 is not exact in binary floating point; in ticks it is exact, so 3000 ops sum exactly.
  Problem pr = make_problem(1, 1000, 0.1, 0.1, 0.1);
  Schedule s;
  s.p = 1;
  s.m = 1000;
  s.placement = {{0}};
  s.stages.resize(1);
  for (int j = 0; j < 1000; ++j) {
    s.stages[0].push_back({OpType::F, j});
    s.stages[0].push_back({OpType::B, j});
    s.stages[0].push_back({OpType::W, j});
  }
  std::vector<Diag> diags;
  auto t = simulate_timeline(s, pr, &diags);
  REQUIRE(t);
  CHECK(t->span == 300 * U);
  CHECK(t->span_bubble_rate == 0.0);
}

TEST_CASE("simulate: peak memory is the largest prefix sum of F +M_B, B +(M_W-M_B), W -M_W, BW -M_B") {
  Problem pr = make_problem(1, 3, 1, 1, 1, 0, 2, 0.5);
  Schedule s = inline_schedule({"F0 F1 B0 F2 W0 B1 BW2 W1"}, 3);
  // 2, 4, 2.5, 4.5, 4, 2.5, 0.5, 0
  CHECK(peak_memory(s, pr) == std::vector<Mem>{4'500'000});
}

TEST_CASE("simulate: a deadlock is reported as the chain of waiting ops") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  // Stage 1 wants F1 first, but stage 0 sends F1 only after B0, which stage 1 runs after F1.
  Schedule s = inline_schedule({"F0 B0 W0 F1 B1 W1", "F1 F0 B0 W0 B1 W1"}, 2);
  std::vector<Diag> diags;
  CHECK_FALSE(simulate_timeline(s, pr, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) ==
        "stage 0, op 1 (B0): deadlock: waits for stage 1 op 2 (B0); stage 1 is stuck at op 0 (F1), which waits for "
        "stage 0 op 3 (F1); stage 0 is stuck at op 1 (B0)");
  CHECK(simulate_span(s, pr) == -1);
}

TEST_CASE("simulate: the fast span agrees with the full timeline") {
  Problem pr = make_problem(2, 2, 2, 3, 1, 0.5);
  Schedule s = inline_schedule({"F0 F1 B0 W0 B1 W1", "F0 B0 F1 B1 W0 W1"}, 2);
  std::vector<Diag> diags;
  auto t = simulate_timeline(s, pr, &diags);
  REQUIRE(t);
  CHECK(simulate_span(s, pr) == t->span);
}

TEST_CASE("simulate_cost: with a threshold, the cost itself at or under it, a lower bound over it above") {
  for (Cost cost : {Cost::kSpan, Cost::kMakespan}) {
    for (const Problem& pr : {make_problem(4, 12, 1.0, 1.2, 0.6, 0.1, 1, 0.5, ""),
                              make_problem(6, 9, 1.7, 1.1, 0.9, 0.3, 1, 0.5, "")}) {
      for (const Schedule& s : {generate_1f1b(pr), generate_zb_h1(pr), generate_zb_h2(pr)}) {
        const Ticks exact = simulate_cost(s, pr, cost);
        REQUIRE(exact > 0);
        CHECK(simulate_cost(s, pr, cost, nullptr, exact) == exact);
        CHECK(simulate_cost(s, pr, cost, nullptr, exact + 7) == exact);
        const Ticks stopped = simulate_cost(s, pr, cost, nullptr, exact - 1);
        CHECK(stopped > exact - 1);
        CHECK(stopped <= exact);  // a lower bound of the cost
        // Far under the cost, it stops early with the bound it had then.
        CHECK(simulate_cost(s, pr, cost, nullptr, exact / 3) <= exact);
      }
    }
  }
}
