// Tests for planner/refine_ilp.cpp: on tiny problems (per-stage times, T_comm, with and without a
// tight memory limit) the whole model proves optimality and equals an exhaustive search, from a
// good and from a poor warm start, for the span and for the makespan (which stands for the wall
// clock); no bound exceeds that optimum; the schedule validates and its simulated cost is within the
// model's objective. The window search never loses to its warm start. At 1p the makespan objective
// beats ZB-H1 where it can.
#include "planner/refine_ilp.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "brute_force.h"
#include "core/bounds.h"
#include "core/simulate.h"
#include "planner/gen_baseline.h"
#include "planner/gen_v.h"
#include "planner/lower.h"
#include "planner/search_heuristic.h"
#include "test_util.h"

using namespace zbpp;

namespace {

// Times per stage (per chunk op, with `chunks` > 1), T_comm, and a limit that shapes the schedule
// or none.
Problem random_problem(std::mt19937& rng, int p, int m, bool tight, int chunks = 1) {
  std::uniform_int_distribution<int> t(2, 20), c(0, 3);
  ProblemInput in = test::per_stage_input(p, m, chunks, [&](int) {
    const double f = t(rng), b = t(rng), w = t(rng);  // drawn in this order, whatever the compiler's
    return std::array<double, 3>{f, b, w};
  });
  const double c0 = c(rng);
  in.t_comm.clear();  // one latency per link from p = 3, the wrap link included: varied, with one draw
  for (int l = 0; l < (p >= 3 ? p : 1); ++l) in.t_comm.push_back(std::fmod(c0 + l, 4.0));
  in.mem_b = {1};
  in.mem_w = {0.4};
  // Tight: the activations of p microbatches at most (1p), so the limit shapes the schedule; with
  // chunks, down to p chunk activations (in a V, half of 1F1B's).
  if (tight) in.mem_limit = std::uniform_int_distribution<int>(0, 1)(rng) ? "1p" : chunks == 1 ? "1" : "0.5p";
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  return *pr;
}

// The result is valid, keeps microbatch order, and its cost by its objective is exact, no worse
// than the warm start's, within the model's objective and not below its own bound.
void check_result(const IlpResult& r, const Problem& pr, Ticks warm_cost) {
  test::check_invariants(r.schedule, pr);
  CHECK(r.cost == simulate_cost(r.schedule, pr, r.measure));
  CHECK(r.cost <= warm_cost);
  CHECK(from_quanta(r.cost) >= r.lower_bound - 1e-6);
  if (r.model_objective >= 0) CHECK(from_quanta(r.cost) <= r.model_objective + 1e-6);
  for (const auto& ops : r.schedule.stages) {
    std::vector<int> next(3 * static_cast<size_t>(pr.chunks), 0);  // per chunk and kind
    for (const Op& op : ops) CHECK(op.mb == next[op.chunk * 3 + (op.type == OpType::F ? 0 : op.type == OpType::B ? 1 : 2)]++);
  }
}

// The whole model minimising `objective` from `warm` proves `optimum` (exhaustive search's), and its
// result passes check_result; returns whether it improved on the warm start.
bool check_proves_optimum(const Problem& pr, const Schedule& warm, Cost objective, Ticks optimum) {
  std::vector<Diag> diags;
  IlpOptions options;
  options.measure = objective;
  options.seconds = 20;
  auto r = refine_ilp(pr, warm, options, &diags);
  INFO(format_diags(diags));
  REQUIRE(r);
  CHECK(r->measure == objective);
  CHECK(r->mode == IlpMode::kFull);
  CHECK(r->proven_optimal);
  CHECK(r->status == SolveStatus::kOptimal);
  CHECK(r->cost == optimum);
  CHECK(r->lower_bound == Approx(from_quanta(optimum)).margin(1e-6));
  CHECK(r->summary().rfind(objective == Cost::kMakespan ? "makespan " : "span ", 0) == 0);
  const Ticks warm_cost = simulate_cost(warm, pr, objective);
  check_result(*r, pr, warm_cost);
  return r->cost < warm_cost;
}

// On random tiny problems, the whole model minimising `objective` (the span or the makespan),
// warm-started from the heuristic and from 1F1B, must prove the optimum exhaustive search finds;
// returns how many solves improved on their warm start.
int check_against_exhaustive_search(Cost objective, unsigned seed, int trials) {
  std::mt19937 rng(seed);
  int improved = 0;
  for (auto [p, m] : {std::pair{2, 2}, std::pair{2, 3}, std::pair{3, 2}})
    for (bool tight : {false, true})
      for (int trial = 0; trial < trials; ++trial) {
        Problem pr = random_problem(rng, p, m, tight);
        INFO("p=" << p << " m=" << m << (tight ? " tight" : "") << " trial " << trial);
        Ticks optimum = test::brute_force_cost(pr, objective);
        if (optimum < 0) continue;
        // The certified bound (span bounds, and for the makespan the ramp) is below the optimum.
        CHECK(cost_lower_bound(pr, objective, interleaved_placement(p, 1)) <= optimum);
        // From the heuristic, and from 1F1B (a poor start the model must improve on).
        std::vector<Diag> diags;
        auto heuristic = search_heuristic(pr, &diags, 0, objective);
        REQUIRE(heuristic);
        std::vector<Schedule> starts = {heuristic->schedule};
        if (validate(generate_1f1b(pr), pr).empty()) starts.push_back(generate_1f1b(pr));
        for (const Schedule& warm : starts) improved += check_proves_optimum(pr, warm, objective, optimum);
      }
  return improved;
}

// p = 2, m = 2, two chunks per stage, with and without a tight limit: from the V search and from
// V-Min (V placement), or from 1F1B-I (interleaved placement), the whole model minimising
// `objective` must reach what exhaustive search over every stage order finds, and prove it.
// Returns how many solves ran and how many improved on their warm start.
std::pair<int, int> check_chunks_against_exhaustive_search(Cost objective, unsigned seed, bool interleaved,
                                                           int trials) {
  std::mt19937 rng(seed);
  int solves = 0, improved = 0;
  for (bool tight : {false, true})
    for (int trial = 0; trial < trials; ++trial) {
      Problem pr = random_problem(rng, 2, 2, tight, 2);
      if (interleaved) pr.placement = interleaved_placement(2, 2);
      INFO((interleaved ? "interleaved" : "V") << (tight ? " tight" : "") << " trial " << trial);
      const Ticks optimum = test::brute_force_cost(pr, objective);
      if (optimum < 0) continue;
      CHECK(cost_lower_bound(pr, objective, pr.placement.empty() ? v_shape_placement(2) : pr.placement) <= optimum);
      std::vector<Diag> diags;
      std::vector<Schedule> starts;
      if (interleaved) {
        std::string err;
        if (auto megatron = generate_1f1b_interleaved(pr, &err)) starts.push_back(*megatron);
      } else {
        if (auto found = search_v(pr, &diags, objective)) starts.push_back(found->schedule);
        starts.push_back(generate_v_block(pr, VBlock::kMin));
      }
      for (const Schedule& warm : starts) {
        if (!validate(warm, pr).empty()) continue;  // over the limit
        ++solves;
        improved += check_proves_optimum(pr, warm, objective, optimum);
      }
    }
  return {solves, improved};
}

}  // namespace

TEST_CASE("ilp: proves optimality on tiny problems and matches exhaustive search") {
  // At least 5 solves improve on their warm start: the 1F1B starts leave the model real work.
  CHECK(check_against_exhaustive_search(Cost::kSpan, 2024, 4) >= 5);
}

TEST_CASE("ilp: stops at once when the warm start meets the certified bound") {
  // 1p with ZB-H1's shape: the memory bound equals ZB-H1's span.
  Problem pr = test::make_problem(4, 8, 1.2, 1.0, 0.6, 0.05, 1, 0.4, "1p");
  auto h1 = generate_zb_h1(pr);
  std::vector<Diag> diags;
  auto r = refine_ilp(pr, h1, IlpOptions{}, &diags);
  REQUIRE(r);
  CHECK(r->status == SolveStatus::kOptimal);
  CHECK(r->windows == 0);
  CHECK(r->cost == simulate_span(h1, pr));
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
    CHECK(r->mode == IlpMode::kLns);
    CHECK(r->windows > 0);
    check_result(*r, pr, simulate_span(warm, pr));
    CHECK(r->cost < simulate_span(warm, pr));  // 1F1B's BW leaves room that windows find
  }
}

TEST_CASE("ilp (makespan): the window search shortens the makespan and never loses to the warm start") {
  std::mt19937 rng(11);
  int ran = 0;
  for (int trial = 0; trial < 2; ++trial) {
    Problem pr = random_problem(rng, 4, 8, trial == 1);
    std::vector<Diag> diags;
    Schedule warm = generate_1f1b(pr);
    if (!validate(warm, pr).empty()) continue;
    IlpOptions options;
    options.measure = Cost::kMakespan;
    options.seconds = 1;
    options.full_model_binaries = 0;  // force the LNS
    options.window_ops = 4;
    auto r = refine_ilp(pr, warm, options, &diags);
    REQUIRE(r);
    CHECK(r->mode == IlpMode::kLns);
    CHECK(r->windows > 0);
    const Ticks warm_makespan = simulate_cost(warm, pr, Cost::kMakespan);
    check_result(*r, pr, warm_makespan);
    CHECK(r->cost < warm_makespan);
    CHECK(from_quanta(cost_lower_bound(pr, Cost::kMakespan, warm.placement)) <= r->lower_bound + 1e-9);
    ++ran;
  }
  CHECK(ran == 2);
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
  in.t_comm = {0.46};
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
  CHECK(r->mode == IlpMode::kLns);
  check_result(*r, *pr, heuristic->span);
  CHECK(r->seconds < options.seconds + 2);  // loose: the machine may be shared
}

TEST_CASE("ilp (makespan): proves the least makespan on tiny problems and matches exhaustive search") {
  // At least 5 solves improve on their warm start: the 1F1B starts leave the model real work.
  CHECK(check_against_exhaustive_search(Cost::kMakespan, 2026, 3) >= 5);
}

TEST_CASE("ilp (makespan): at 1p it proves a makespan below ZB-H1's, the heuristic's and the span-optimal one's") {
  // Uneven stages and T_comm: here neither ZB-H1 nor the heuristic is makespan-optimal at 1p.
  ProblemInput in;
  in.p = 3;
  in.m = 5;
  in.t_f = {1, 1.5, 1};
  in.t_b = {1, 2, 1};
  in.t_w = {1, 0.5, 1.2};
  in.t_comm = {0.3};
  in.mem_b = {1};
  in.mem_w = {0.5};
  in.mem_limit = "1p";
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  auto heuristic = search_heuristic(*pr, &diags, 0, Cost::kMakespan);
  REQUIRE(heuristic);
  const Schedule h1 = generate_zb_h1(*pr);
  REQUIRE(validate(h1, *pr).empty());
  IlpOptions options;
  options.measure = Cost::kMakespan;
  options.seconds = 20;
  auto r = refine_ilp(*pr, heuristic->schedule, options, &diags);
  INFO(format_diags(diags));
  REQUIRE(r);
  check_result(*r, *pr, heuristic->cost);
  CHECK(r->mode == IlpMode::kFull);
  CHECK(r->status == SolveStatus::kOptimal);
  CHECK(r->proven_optimal);
  CHECK(r->cost == *to_quanta(22.8));
  CHECK(r->cost < heuristic->cost);  // 23.4
  CHECK(r->cost < simulate_cost(h1, *pr, Cost::kMakespan));  // 23.8
  CHECK(r->lower_bound == Approx(22.8).margin(1e-6));
  // A certified bound that is not CBC's stays below the optimum: span bounds and the ramp.
  CHECK(cost_lower_bound(*pr, Cost::kMakespan, h1.placement) <= r->cost);
  // What --objective period plans (the ILP from the span heuristic) reaches the least span, 22.8,
  // with a longer makespan (23): minimising the span is not enough.
  auto span_heuristic = search_heuristic(*pr, &diags, 0, Cost::kSpan);
  REQUIRE(span_heuristic);
  IlpOptions span_options;
  span_options.seconds = 20;
  auto by_span = refine_ilp(*pr, span_heuristic->schedule, span_options, &diags);
  REQUIRE(by_span);
  CHECK(by_span->status == SolveStatus::kOptimal);
  CHECK(by_span->cost == *to_quanta(22.8));
  CHECK(simulate_cost(by_span->schedule, *pr, Cost::kMakespan) > r->cost);
}

TEST_CASE("ilp (chunks): proves the exhaustive optimum on tiny V problems") {
  // From the V search and from V-Min: at least 5 solves, at least 2 improving on their start.
  auto [solves, improved] = check_chunks_against_exhaustive_search(Cost::kSpan, 21, false, 2);
  CHECK(solves >= 5);
  CHECK(improved >= 2);
}

TEST_CASE("ilp (chunks): proves the exhaustive optimum on tiny interleaved problems") {
  // From 1F1B-I, which holds every microbatch's activations: it fits only some limits.
  auto [solves, improved] = check_chunks_against_exhaustive_search(Cost::kSpan, 22, true, 1);
  CHECK(solves >= 2);
  CHECK(improved >= 1);
}

TEST_CASE("ilp (chunks, makespan): proves the least makespan on tiny V problems") {
  auto [solves, improved] = check_chunks_against_exhaustive_search(Cost::kMakespan, 23, false, 1);
  CHECK(solves >= 3);
  CHECK(improved >= 1);
}

TEST_CASE("ilp (chunks): on V problems (p = 2..4, m = 4..8) the result validates, lowers and never loses to the V search") {
  // Stages of similar times (as a model's layers split evenly), so no stage's busy time alone
  // settles the span, at half and at all of 1F1B's activation memory.
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> tf(9, 11), tb(10, 13), tw(5, 8), tc(0, 1);
  int improved = 0;
  for (auto [p, m, limit] : {std::tuple{2, 4, "0.75p"}, std::tuple{3, 6, "0.75p"}, std::tuple{4, 8, "0.5p"}}) {
    ProblemInput in;
    in.p = p, in.m = m, in.chunks = 2;
    in.t_f.clear(), in.t_b.clear(), in.t_w.clear();
    for (int s = 0; s < p; ++s) in.t_f.push_back(tf(rng)), in.t_b.push_back(tb(rng)), in.t_w.push_back(tw(rng));
    in.t_comm = {static_cast<double>(tc(rng))};
    in.mem_b = {1};
    in.mem_w = {0.4};
    in.mem_limit = limit;
    const Problem pr = test::checked_problem(in);
    INFO("p=" << p << " m=" << m << " limit " << limit);
    std::vector<Diag> diags;
    auto warm = search_v(pr, &diags);
    INFO(format_diags(diags));
    REQUIRE(warm);
    IlpOptions options;
    options.seconds = 1;
    auto r = refine_ilp(pr, warm->schedule, options, &diags);
    REQUIRE(r);
    CHECK(r->warm_cost == warm->span);
    check_result(*r, pr, warm->span);
    CHECK(r->seconds < options.seconds + 1);  // loose: the machine may be shared
    CHECK(from_quanta(cost_lower_bound(pr, Cost::kSpan, warm->schedule.placement)) <= r->lower_bound + 1e-9);
    for (const Optimizer optimizer : {Optimizer::kSync, Optimizer::kPostValidation}) {
      LowerOptions lowering;
      lowering.optimizer = optimizer;
      lowering.post_validation_at = PostValidationAt::kStart;
      test::check_invariants(lower_comms(r->schedule, lowering), pr);
    }
    improved += r->cost < warm->span;
  }
  CHECK(improved >= 1);
}

TEST_CASE("ilp: refuses a warm start it cannot refine, saying why") {
  Problem v = test::make_problem(2, 2, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  const Schedule zb_v = generate_zb_v_handcrafted(v);
  REQUIRE(validate(zb_v, v).empty());
  auto refused = [&](const Problem& pr, const Schedule& warm) {
    std::vector<Diag> diags;
    IlpOptions options;
    options.seconds = 1;
    CHECK_FALSE(refine_ilp(pr, warm, options, &diags));
    REQUIRE(diags.size() == 1);
    return format_diag(diags[0]);
  };
  CHECK(refused(test::make_problem(2, 2, 1, 1, 1), zb_v) ==
        "ilp: the warm start has 2 chunk(s) per stage, but the problem has 1");
  Problem interleaved = v;
  interleaved.placement = interleaved_placement(2, 2);
  CHECK(refused(interleaved, zb_v) == "ilp: the warm start places chunks otherwise than the problem's placement");
  Schedule broken = zb_v;
  broken.stages[0].pop_back();
  CHECK(refused(v, broken).rfind("ilp: the warm start is not a valid schedule: ", 0) == 0);
  // Chunk 1's F's out of microbatch order on both stages (valid, but outside the model's space).
  std::string err;
  auto swapped = schedule_from_strings({"F0 F1 F1:1 F0:1 B0:1 B1:1 W0:1 W1:1 B0 B1 W0 W1",
                                        "F0 F1 F1:1 F0:1 B0:1 B0 B1:1 B1 W0:1 W0 W1:1 W1"},
                                       2, 2, v_shape_placement(2), &err);
  INFO(err);
  REQUIRE(swapped);
  REQUIRE(validate(*swapped, v).empty());
  CHECK(refused(v, *swapped) ==
        "ilp: the warm start must run the F's, B's and W's of each chunk in microbatch order on every stage");
}

TEST_CASE("ilp: the module is found beside the program, and a missing one is named with what to do") {
  // Every refine_ilp call in these tests went through the loader to the copy beside planner_tests.
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(n > 0);
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.find_last_of('/'));
  CHECK(ilp_module_paths() == std::vector<std::string>{dir + "/libzbpp_ilp.so", dir + "/../lib/zbpp/libzbpp_ilp.so"});
  std::string why;
  CHECK(load_ilp_module(ilp_module_paths(), &why));
  CHECK(why.empty());
  CHECK_FALSE(load_ilp_module({"/nonexistent/a.so", "/nonexistent/b.so"}, &why));
  CHECK(why ==
        "the ILP needs its module libzbpp_ilp.so, which is not at /nonexistent/a.so, /nonexistent/b.so; build zbplan "
        "where CBC is installed (coinor-libcbc-dev; cmake then builds the module beside zbplan), or put "
        "libzbpp_ilp.so beside the program or in its ../lib/zbpp");
}
