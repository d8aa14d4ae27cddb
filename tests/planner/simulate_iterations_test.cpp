// Tests for planner/simulate_iterations.cpp on a case small enough to time by hand.
#include "planner/simulate_iterations.h"

#include <catch2/catch.hpp>

#include "planner/gen_baseline.h"
#include "planner/lower.h"
#include "test_util.h"

using namespace zbpp;
using zbpp::test::make_problem;

namespace {
Schedule two_stages_one_microbatch(const std::string& optimizer) {
  std::string err;
  auto compute = schedule_from_strings({"F0 BW0", "F0 BW0"}, 1, 1, {{0}, {1}}, &err);
  REQUIRE(compute);
  return lower_comms(*compute, {optimizer, ValidateAt::kFirstBackward});
}
}  // namespace

TEST_CASE("iterations: two stages, one microbatch, timed by hand") {
  // T_F = T_B = T_W = 1, no T_comm: stage 0 runs F0 [0,1] and BW0 [4,6]; stage 1 F0 [1,2] and BW0 [2,4].
  Problem pr = make_problem(2, 1, 1, 1, 1);
  SECTION("sync: every iteration waits for the all-reduce after the last BW") {
    IterationOptions o;
    o.allreduce_latency = 1'000'000;  // 1 unit
    std::vector<Diag> diags;
    auto it = simulate_iterations(two_stages_one_microbatch(kOptimizerSync), pr, o, &diags);
    REQUIRE(it);
    CHECK(it->wall == 7'000'000);    // 6 of compute and waiting, 1 of all-reduce
    CHECK(it->period == 7'000'000);
    CHECK(it->ops[1][0].front().start == 7'000'000);  // stage 0's second F0
  }
  SECTION("post-validation: the next iteration starts after the stage's own step") {
    IterationOptions o;
    o.state_latency = 500'000;  // 0.5
    std::vector<Diag> diags;
    Schedule s = two_stages_one_microbatch(kOptimizerPostValidation);
    // stage 0: F0 SEND_F0 RECV_VALID VALIDATE RECV_B0 BW0 SEND_STATE OPT_STEP
    // stage 1: RECV_F0 F0 SEND_VALID VALIDATE BW0 SEND_B0 RECV_STATE OPT_STEP
    auto it = simulate_iterations(s, pr, o, &diags);
    REQUIRE(it);
    CHECK(it->ops[0][1].back().end == 6'500'000);   // stage 1 steps once stage 0's state arrived
    CHECK(it->ops[1][0].front().start == 6'000'000);  // stage 0 goes on at once
    CHECK(it->ops[1][0][2].end == 8'500'000);         // and gets stage 1's full state at 8 + 0.5
    CHECK(it->wall == 6'500'000);
    CHECK(it->period == 6'000'000);                  // stage 0's span: the iterations overlap
    CHECK(it->period_bubble_rate == Approx(0.5));  // 3 busy (F 1, BW 2) of 6
  }
}

TEST_CASE("iterations: the first iteration's validation does nothing and sends nothing") {
  Problem pr = make_problem(2, 1, 1, 1, 1);
  std::vector<Diag> diags;
  auto it = simulate_iterations(two_stages_one_microbatch(kOptimizerPostValidation), pr, {}, &diags);
  REQUIRE(it);
  // stage 0's RECV_VALID would otherwise wait for stage 1's SEND_VALID at 2.
  CHECK(it->ops[0][0][2].start == it->ops[0][0][1].end);
  CHECK(it->ops[0][0][2].end == 1'000'000);
}

TEST_CASE("wall objective: the ramp bound by hand, and never above a real schedule's wall clock") {
  // p=3, T_F=1, T_B=2, T_W=1, T_comm=0.5, m=4: the last stage starts at 2 * 1.5 and is busy 16.
  Problem pr = make_problem(3, 4, 1, 2, 1, 0.5);
  CHECK(wall_lower_bound(pr, {{0}, {1}, {2}}) == 19'000'000);
  for (int p : {1, 2, 4})
    for (int m : {1, 3, 8}) {
      Problem q = make_problem(p, m, 1, 1.5, 0.5, 0.25);
      for (const Schedule& s : {generate_1f1b(q), generate_zb_h1(q), generate_zb_h2(q)})
        CHECK(wall_lower_bound(q, s.placement) <= simulate_cost(s, q, Objective::kWall));
      Problem two = make_problem(p, m, 1, 1.5, 0.5, 0.25, 1, 0.5, "", 2);
      Schedule v = generate_zb_v(two);
      CHECK(wall_lower_bound(two, v.placement) <= simulate_cost(v, two, Objective::kWall));
    }
}
