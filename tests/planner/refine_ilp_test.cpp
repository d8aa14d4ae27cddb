// Tests for planner/refine_ilp.cpp: on tiny problems (per-stage times, T_comm, with and without a
// tight memory limit) the whole model proves optimality and equals an exhaustive search, from a
// good and from a poor warm start; no bound exceeds that optimum; the schedule validates and its
// simulated span is within the model's objective. The window search never loses to its warm start.
#include "planner/refine_ilp.h"

#include <algorithm>
#include <random>

#include <catch2/catch.hpp>

#include "brute_force.h"
#include "planner/bounds.h"
#include "planner/gen_baseline.h"
#include "planner/search_heuristic.h"
#include "planner/simulate.h"
#include "test_util.h"

using namespace zbpp;

namespace {

Problem random_problem(std::mt19937& rng, int p, int m, bool tight) {
  std::uniform_int_distribution<int> t(2, 20), c(0, 3);
  ProblemInput in;
  in.p = p;
  in.m = m;
  in.t_f.clear(), in.t_b.clear(), in.t_w.clear();
  for (int s = 0; s < p; ++s) {
    in.t_f.push_back(t(rng));
    in.t_b.push_back(t(rng));
    in.t_w.push_back(t(rng));
  }
  in.t_comm = c(rng);
  in.mem_b = {1};
  in.mem_w = {0.4};
  // Tight: the activations of p microbatches at most (1p), so the limit shapes the schedule.
  if (tight) in.mem_limit = std::uniform_int_distribution<int>(0, 1)(rng) ? "1p" : "1";
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  return *pr;
}

void check_result(const IlpResult& r, const Problem& pr, Ticks warm_span) {
  test::check_invariants(r.schedule, pr);
  CHECK(r.span == simulate_span(r.schedule, pr));
  CHECK(r.span <= warm_span);
  CHECK(from_quanta(r.span) >= r.lower_bound - 1e-6);
  if (r.model_objective >= 0) CHECK(from_quanta(r.span) <= r.model_objective + 1e-6);
  for (const auto& ops : r.schedule.stages) {
    int next[3] = {0, 0, 0};
    for (const Op& op : ops) CHECK(op.mb == next[op.type == OpType::F ? 0 : op.type == OpType::B ? 1 : 2]++);
  }
}

}  // namespace

TEST_CASE("ilp: proves optimality on tiny problems and matches exhaustive search") {
  std::mt19937 rng(2024);
  int improved = 0;
  for (auto [p, m] : {std::pair{2, 2}, std::pair{2, 3}, std::pair{3, 2}})
    for (bool tight : {false, true})
      for (int trial = 0; trial < 4; ++trial) {
        Problem pr = random_problem(rng, p, m, tight);
        INFO("p=" << p << " m=" << m << (tight ? " tight" : "") << " trial " << trial);
        Ticks optimum = test::brute_force_span(pr);
        if (optimum < 0) continue;
        CHECK(span_lower_bounds(pr).best <= optimum);
        // From the heuristic, and from 1F1B (a poor start the model must improve on).
        std::vector<Diag> diags;
        auto heuristic = search_heuristic(pr, &diags);
        REQUIRE(heuristic);
        std::vector<Schedule> starts = {heuristic->schedule};
        if (validate(generate_1f1b(pr), pr).empty()) starts.push_back(generate_1f1b(pr));
        for (const Schedule& warm : starts) {
          IlpOptions options;
          options.seconds = 20;
          auto r = refine_ilp(pr, warm, options, &diags);
          INFO(format_diags(diags));
          REQUIRE(r);
          CHECK(r->mode == "full");
          CHECK(r->proven_optimal);
          CHECK(r->status == "optimal");
          CHECK(r->span == optimum);
          CHECK(r->lower_bound == Approx(from_quanta(optimum)).margin(1e-6));
          check_result(*r, pr, simulate_span(warm, pr));
          improved += r->span < simulate_span(warm, pr);
        }
      }
  CHECK(improved >= 5);  // the 1F1B starts leave the model real work
}

TEST_CASE("ilp: stops at once when the warm start meets the certified bound") {
  // 1p with ZB-H1's shape: the memory bound equals ZB-H1's span.
  Problem pr = test::make_problem(4, 8, 1.2, 1.0, 0.6, 0.05, 1, 0.4, "1p");
  auto h1 = generate_zb_h1(pr);
  std::vector<Diag> diags;
  auto r = refine_ilp(pr, h1, IlpOptions{}, &diags);
  REQUIRE(r);
  CHECK(r->status == "optimal");
  CHECK(r->windows == 0);
  CHECK(r->span == simulate_span(h1, pr));
}

TEST_CASE("ilp: the window search keeps microbatch order and never loses to the warm start") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3; ++trial) {
    Problem pr = random_problem(rng, 4, 8, trial == 1);
    std::vector<Diag> diags;
    Schedule warm = generate_1f1b(pr);
    if (!validate(warm, pr).empty()) continue;
    IlpOptions options;
    options.seconds = 2;
    options.full_model_binaries = 0;  // force the LNS
    options.window_ops = 4;
    auto r = refine_ilp(pr, warm, options, &diags);
    REQUIRE(r);
    CHECK(r->mode == "lns");
    CHECK(r->windows > 0);
    check_result(*r, pr, simulate_span(warm, pr));
    CHECK(r->span < simulate_span(warm, pr));  // 1F1B's BW leaves room that windows find
  }
}

TEST_CASE("ilp: p=32, m=256 returns a valid schedule no worse than the heuristic within its limit") {
  std::mt19937 rng(32);
  std::uniform_real_distribution<double> t(9, 12);
  ProblemInput in;
  in.p = 32;
  in.m = 256;
  in.t_f.clear(), in.t_b.clear();
  for (int s = 0; s < 32; ++s) in.t_f.push_back(t(rng)), in.t_b.push_back(t(rng));
  in.t_w = {7.7};
  in.t_comm = 0.46;
  in.mem_b = {1};
  in.mem_w = {0.3664};
  in.mem_limit = "2p";
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  auto heuristic = search_heuristic(*pr, &diags);
  REQUIRE(heuristic);
  IlpOptions options;
  options.seconds = 1.5;
  auto r = refine_ilp(*pr, heuristic->schedule, options, &diags);
  REQUIRE(r);
  CHECK(r->mode == "lns");
  check_result(*r, *pr, heuristic->span);
  CHECK(r->seconds < options.seconds + 2);  // loose: the machine may be shared
}

TEST_CASE("ilp: refuses what it cannot model") {
  Problem two = test::make_problem(2, 2, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  std::vector<Diag> diags;
  Schedule any;
  IlpOptions options;
  options.seconds = 1;
  CHECK_FALSE(refine_ilp(two, any, options, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "ilp: the ILP plans one chunk per stage");
}
