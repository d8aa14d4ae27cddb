// Tests for core/bounds.cpp: no bound ever exceeds the optimum an exhaustive search finds on
// tiny problems (per-stage times, T_comm, tight and loose limits, one chunk and several in a V or
// interleaved), nor any schedule a generator or the V search makes over a grid of settings; at the
// 1p limit the memory bound equals ZB-H1's span in all 12 Table 5 settings, and the critical path
// meets ZB-2p at 1.5B/m24.
#include "core/bounds.h"

#include <fstream>
#include <random>
#include <sstream>

#include <catch2/catch.hpp>

#include "brute_force.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "planner/gen_baseline.h"
#include "planner/gen_v.h"
#include "planner/search_heuristic.h"
#include "test_util.h"

using namespace zbpp;

namespace {

Problem random_problem(std::mt19937& rng, int p, int m, int chunks = 1) {
  std::uniform_int_distribution<int> t(2, 20), c(0, 4), mb(2, 6), mw(0, 6), lim(0, 3);
  ProblemInput in;
  in.p = p;
  in.m = m;
  in.chunks = chunks;
  in.t_f.clear(), in.t_b.clear(), in.t_w.clear(), in.mem_b.clear(), in.mem_w.clear();
  for (int s = 0; s < p; ++s) {
    in.t_f.push_back(t(rng));
    in.t_b.push_back(t(rng));
    in.t_w.push_back(t(rng));
    in.mem_b.push_back(mb(rng));
    in.mem_w.push_back(std::min<double>(mw(rng), in.mem_b.back()));
  }
  in.t_comm.clear();  // one latency per link from p = 3 (problem.h), the wrap link included
  for (int l = 0; l < (p >= 3 ? p : 1); ++l) in.t_comm.push_back(c(rng));
  // No limit, or room for 1..3 microbatches' activations (of one chunk) on the most demanding stage.
  int l = lim(rng);
  if (l > 0) in.mem_limit = std::to_string(l * 6 + (chunks > 1 ? 6 : 0));
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  return *pr;
}

std::vector<std::vector<std::string>> table5_rows() {
  std::ifstream in(std::string(ZBPP_GOLDEN_DIR) + "/table5.tsv");
  REQUIRE(in);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> v;
    std::stringstream fields(line);
    for (std::string f; std::getline(fields, f, '\t');) v.push_back(f);
    rows.push_back(v);
  }
  return rows;
}

Problem table5_problem(const std::vector<std::string>& v, const std::string& limit) {
  int h = std::stoi(v[8]), a = std::stoi(v[9]);
  return test::make_problem(std::stoi(v[1]), std::stoi(v[2]), std::stod(v[3]), std::stod(v[4]), std::stod(v[5]),
                            std::stod(v[6]), 34.0 * h + 5.0 * a * 1024, 32.0 * h, limit);
}

}  // namespace

TEST_CASE("bounds: never above the exhaustive optimum on tiny problems") {
  std::mt19937 rng(11);
  int checked = 0, tight = 0;
  for (auto [p, m, trials] : {std::tuple{2, 2, 60}, std::tuple{2, 3, 40}, std::tuple{3, 2, 40}}) {
    for (int i = 0; i < trials; ++i) {
      Problem pr = random_problem(rng, p, m);
      Ticks best = test::brute_force_span(pr);
      if (best < 0) continue;  // the limit admits no schedule
      SpanBounds b = span_lower_bounds(pr);
      INFO("p=" << p << " m=" << m << " trial " << i << ": optimum " << best << ", busy " << b.busy << ", memory "
                << b.memory << ", critical path " << b.critical_path);
      CHECK(b.busy <= best);
      CHECK(b.memory <= best);
      CHECK(b.critical_path <= best);
      CHECK(b.warm_up <= best);
      CHECK(b.best == std::max({b.busy, b.memory, b.critical_path, b.warm_up}));
      ++checked;
      tight += b.best == best;
    }
  }
  CHECK(checked > 100);
  // The bounds are not trivial: they meet the optimum on a good share of these problems.
  CHECK(tight * 4 > checked);
}

TEST_CASE("bounds: the warm-up bound is never above a valid schedule's span, and met where it binds") {
  // Too big for the exhaustive search (the bound adds to the per-stage ones from about five F's
  // before stage 0's first B): every schedule the heuristic's grid and the seeds make is checked
  // against it. T_B + 2 T_comm a little above T_F, m from 3p (as in Table 5) and room for 1.5p-2p
  // microbatches make the idle before each stage's first B add up over the stages.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> stages(3, 8), tf(10, 14), less(0, 2), tw(4, 8), c(1, 3), room(3, 4);
  int checked = 0, binding = 0, met = 0;
  for (int i = 0; i < 60; ++i) {
    ProblemInput in;
    in.p = stages(rng);
    in.m = 3 * in.p + static_cast<int>(rng() % static_cast<unsigned>(in.p + 1));
    const int f = tf(rng);
    in.t_f = {static_cast<double>(f)}, in.t_b = {f - 0.5 * less(rng)};
    in.t_w = {static_cast<double>(tw(rng))};
    in.t_comm.clear();
    for (int l = 0; l < in.p; ++l) in.t_comm.push_back(0.3 * c(rng));
    in.mem_b = {1}, in.mem_w = {0.5};
    in.mem_limit = std::to_string(room(rng) * 0.5).substr(0, 3) + "p";
    const Problem pr = test::checked_problem(in);
    const SpanBounds b = span_lower_bounds(pr);
    std::vector<Schedule> candidates = test::heuristic_grid(pr);
    for (Schedule (*seed)(const Problem&) : {generate_zb_h1, generate_zb_h2, generate_1f1b})
      if (Schedule s = seed(pr); validate(s, pr).empty()) candidates.push_back(s);
    INFO("trial " << i << ": p=" << pr.p << " m=" << pr.m << " limit " << in.mem_limit << ", warm-up " << b.warm_up
                  << ", memory " << b.memory << ", critical path " << b.critical_path);
    Ticks least = -1;
    for (const Schedule& s : candidates) {
      REQUIRE(validate(s, pr).empty());
      const Ticks span = test::timeline_or_fail(s, pr).span;
      CHECK(b.warm_up <= span);
      least = least < 0 ? span : std::min(least, span);
    }
    if (least < 0) continue;
    ++checked;
    if (b.warm_up > std::max({b.busy, b.memory, b.critical_path})) {
      ++binding;
      CHECK(b.which == BoundSource::kWarmUp);
      met += b.warm_up == least;
    }
  }
  INFO(checked << " checked, the warm-up bound the best in " << binding << ", met in " << met);
  CHECK(checked >= 40);
  CHECK(binding >= 10);  // the coupling adds to the per-stage bounds here
  CHECK(met >= 5);
}

TEST_CASE("bounds: hold for any order (p=2, m=2 and p=3, m=2), and microbatch order loses nothing there") {
  std::mt19937 rng(5);
  for (int i = 0; i < 60; ++i) {
    Problem pr = random_problem(rng, 2 + i % 2, 2);
    Ticks best = test::brute_force_span(pr, /*microbatch_order=*/false);
    if (best < 0) continue;
    INFO("trial " << i);
    CHECK(span_lower_bounds(pr).best <= best);
    // Microbatches are alike: running each kind in microbatch order (the ILP's space) loses nothing.
    CHECK(test::brute_force_span(pr, true) == best);
  }
}

TEST_CASE("bounds: a worked example (p=2, m=2, T_F=1, T_B=2, T_W=1, T_comm=1, limit one M_B)") {
  Problem pr = test::make_problem(2, 2, 1, 2, 1, 1, 1, 0.5, "1");
  SpanBounds b = span_lower_bounds(pr);
  CHECK(b.busy == 8'000'000);
  // Stage 0: one F fits before the first B; the round trip 1 + (1 + 2 + 2) = 6 leaves 5 idle; after
  // the last F, the trip 5 minus the work one M_B holds besides it (none) is 5 idle: 8 + 10.
  CHECK(b.memory == 18'000'000);
  CHECK(test::brute_force_span(pr) == 18'000'000);
  CHECK(b.best == 18'000'000);
}

TEST_CASE("bounds: Table 5 at 1p: the memory bound is ZB-H1's span (ZB-H1 is optimal)") {
  for (const auto& v : table5_rows()) {
    Problem pr = table5_problem(v, "1p");
    SpanBounds b = span_lower_bounds(pr);
    auto h1 = generate_zb_h1(pr);
    INFO(v[0] << " p=" << v[1] << " m=" << v[2]);
    CHECK(b.which == BoundSource::kMemory);
    CHECK(b.best == simulate_span(h1, pr));
  }
}

TEST_CASE("bounds: 1.5B p8 m24 at 2p: the critical path meets the heuristic (0.0433)") {
  Problem pr = table5_problem(table5_rows()[0], "2p");
  SpanBounds b = span_lower_bounds(pr);
  std::vector<Diag> diags;
  auto found = search_heuristic(pr, &diags);
  REQUIRE(found);
  CHECK(b.which == BoundSource::kCriticalPath);
  CHECK(b.best == found->span);
  CHECK(bubble_rate_of(pr, b.best) == Approx(0.0433).margin(0.00005));
}

namespace {

// The span bounds of every schedule must not exceed its span, with the schedule's own peak memory
// as the limit (the tightest limit it keeps) and with none; the makespan bound likewise.
void check_below(const Schedule& s, Problem pr, int* checked) {
  INFO(s.method << " p=" << pr.p << " m=" << pr.m << " chunks=" << pr.chunks);
  const Timeline t = test::timeline_or_fail(s, pr);
  const Mem peak = *std::max_element(t.peak_memory.begin(), t.peak_memory.end());
  for (std::optional<Mem> limit : {std::optional<Mem>(), std::optional<Mem>(peak)}) {
    if (pr.mem_limit && (!limit || *limit > *pr.mem_limit)) continue;  // keep a tighter limit it was made for
    pr.mem_limit = limit ? limit : pr.mem_limit;
    SpanBounds b = span_lower_bounds(pr, s.placement);
    INFO("limit " << (pr.mem_limit ? std::to_string(*pr.mem_limit) : "none") << ": span " << t.span << ", busy "
                  << b.busy << ", memory " << b.memory << ", critical path " << b.critical_path);
    CHECK(b.memory <= t.span);
    CHECK(b.critical_path <= t.span);
    CHECK(cost_lower_bound(pr, Cost::kMakespan, s.placement) <= t.makespan);
    ++*checked;
  }
}

}  // namespace

TEST_CASE("bounds with chunks: never above the exhaustive optimum (V and interleaved placements)") {
  std::mt19937 rng(23);
  int checked = 0, tight = 0, beyond_busy = 0;
  // {p, m, chunks, trials, whether every order is searched (else each kind in microbatch order,
  // whose optimum is no lower than the true one)}.
  for (auto [p, m, chunks, trials, any_order] :
       {std::tuple{2, 1, 2, 40, true}, std::tuple{3, 1, 2, 40, true}, std::tuple{4, 1, 2, 15, true},
        std::tuple{2, 1, 3, 20, true}, std::tuple{2, 2, 2, 3, false}}) {
    for (int i = 0; i < trials; ++i) {
      Problem pr = random_problem(rng, p, m, chunks);
      std::vector<std::vector<std::vector<int>>> placements = {interleaved_placement(p, chunks)};
      if (chunks == 2) placements.push_back(v_shape_placement(p));
      for (const auto& placement : placements) {
        Ticks best = test::brute_force_span(pr, !any_order, placement);
        if (best < 0) continue;  // the limit admits no schedule
        SpanBounds b = span_lower_bounds(pr, placement);
        INFO("p=" << p << " m=" << m << " chunks=" << chunks << " trial " << i << " placement "
                  << (placement == interleaved_placement(p, chunks) ? "interleaved" : "V") << ": optimum " << best
                  << ", busy " << b.busy << ", memory " << b.memory << ", critical path " << b.critical_path);
        CHECK(b.memory <= best);
        CHECK(b.critical_path <= best);
        CHECK(b.best == std::max({b.busy, b.memory, b.critical_path}));
        ++checked;
        tight += b.best == best;
        beyond_busy += b.best > b.busy;
      }
    }
  }
  CHECK(checked > 150);
  // Not trivial: above the busy bound nearly always here, and the optimum itself in a good share.
  CHECK(beyond_busy * 10 > checked * 9);
  CHECK(tight * 5 > checked);
}

TEST_CASE("bounds with chunks whose figures differ (a partition into virtual stages): never above the exhaustive optimum") {
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> t(2, 20), c(0, 4), mb(2, 6), mw(0, 6), lim(0, 3);
  int checked = 0, differ = 0, beyond_busy = 0;
  for (auto [p, m, chunks, trials, any_order] :
       {std::tuple{2, 1, 2, 40, true}, std::tuple{3, 1, 2, 30, true}, std::tuple{2, 1, 3, 20, true},
        std::tuple{2, 2, 2, 4, false}}) {
    for (int i = 0; i < trials; ++i) {
      std::vector<std::vector<std::vector<int>>> placements = {interleaved_placement(p, chunks)};
      if (chunks == 2) placements.push_back(v_shape_placement(p));
      for (const auto& placement : placements) {
        ProblemInput in;
        in.p = p, in.m = m, in.chunks = chunks, in.placement = placement;
        in.t_f.clear(), in.t_b.clear(), in.t_w.clear(), in.mem_b.clear(), in.mem_w.clear();
        for (int vs = 0; vs < p * chunks; ++vs) {  // one value per virtual stage
          in.t_f.push_back(t(rng)), in.t_b.push_back(t(rng)), in.t_w.push_back(t(rng));
          in.mem_b.push_back(mb(rng)), in.mem_w.push_back(std::min<double>(mw(rng), in.mem_b.back()));
        }
        in.t_comm.clear();
        for (int l = 0; l < (p >= 3 ? p : 1); ++l) in.t_comm.push_back(c(rng));
        if (int l = lim(rng); l > 0) in.mem_limit = std::to_string(l * 6 + 6);
        std::vector<Diag> diags;
        auto pr = build_problem(in, "", &diags);
        REQUIRE(pr);
        differ += pr->chunks_differ();
        const Ticks best = test::brute_force_span(*pr, !any_order, placement);
        if (best < 0) continue;  // the limit admits no schedule
        const SpanBounds b = span_lower_bounds(*pr, placement);
        INFO("p=" << p << " m=" << m << " chunks=" << chunks << " trial " << i << ": optimum " << best << ", busy "
                  << b.busy << ", memory " << b.memory << ", critical path " << b.critical_path);
        CHECK(b.busy <= best);
        CHECK(b.memory <= best);
        CHECK(b.critical_path <= best);
        ++checked;
        beyond_busy += b.best > b.busy;
      }
    }
  }
  CHECK(checked > 150);
  CHECK(differ * 10 > checked * 9);
  // The least-chunk relaxation keeps the memory and critical-path bounds above busy in a share of cases.
  CHECK(beyond_busy * 4 > checked);
}

TEST_CASE("bounds with chunks: below every schedule the V generators, 1f1b-i and the V search make") {
  int checked = 0;
  for (int p : {2, 3, 4, 6, 8}) {
    for (int m : {p, 2 * p, 3 * p}) {
      for (double t_comm : {0.0, 0.5, 3.0}) {
        // Uniform times; and M_W above M_B, where a fused BW (1f1b-i, dualpipe-v) never holds M_W.
        for (const Problem& pr : {test::uneven_problem(p, m, 2, t_comm), test::make_problem(p, m, 1, 1, 1, t_comm, 1, 0.5, "", 2),
                                  test::make_problem(p, m, 1, 2, 3, t_comm, 1, 1.5, "", 2)}) {
          check_below(generate_v_block(pr, VBlock::kMin), pr, &checked);
          check_below(generate_v_block(pr, VBlock::kHalf), pr, &checked);
          check_below(generate_zb_v_handcrafted(pr), pr, &checked);
          std::string why;
          if (auto s = generate_v_zb_best(pr, &why)) check_below(*s, pr, &checked);
          if (auto s = generate_dualpipe_v(pr, &why)) check_below(*s, pr, &checked);
          if (auto s = generate_1f1b_interleaved(pr, &why)) check_below(*s, pr, &checked);
        }
        if (p > 4) continue;  // the V search at several limits: the smaller pipelines suffice
        for (const char* limit : {"0.5p", "1p", "2p"}) {
          Problem pr = test::uneven_problem(p, m, 2, t_comm, limit);
          std::vector<Diag> diags;
          if (auto found = search_v(pr, &diags)) check_below(found->schedule, pr, &checked);
        }
      }
    }
    // Three chunks interleaved (1f1b-i needs m a multiple of p).
    for (double t_comm : {0.0, 1.0}) {
      std::string why;
      Problem pr = test::uneven_problem(p, 2 * p, 3, t_comm);
      if (auto s = generate_1f1b_interleaved(pr, &why)) check_below(*s, pr, &checked);
    }
  }
  CHECK(checked > 300);
}

TEST_CASE("bounds with chunks: a chunked problem without a placement gets the busy bound only") {
  Problem pr = test::make_problem(4, 8, 1, 1, 1, 0.5, 1, 0.5, "0.5p", 2);
  SpanBounds b = span_lower_bounds(pr);
  CHECK(b.which == BoundSource::kBusy);
  CHECK(b.best == b.busy);
  CHECK(span_lower_bounds(pr, v_shape_placement(4)).best > b.busy);
}
