// Tests for planner/gen_v.cpp: V-Min, V-Half and V-ZB are valid for every p and m with the memory
// the paper gives them, and the V search beats each of them at its own memory.
#include "planner/gen_v.h"

#include <catch2/catch.hpp>

#include "planner/simulate.h"
#include "planner/validate.h"
#include "test_util.h"

using namespace zbpp;
using zbpp::test::check_invariants;
using zbpp::test::make_problem;

namespace {

Mem peak_of(const Schedule& s, const Problem& pr) {
  const auto peaks = zbpp::test::timeline_or_fail(s, pr).peak_memory;
  return *std::max_element(peaks.begin(), peaks.end());
}

// A 2-chunk problem with per-stage times that differ, T_comm 0.5.
Problem uneven(int p, int m, const std::string& limit = "") { return zbpp::test::uneven_problem(p, m, 2, 0.5, limit); }

// V-ZB where its greedy must succeed (these problems' T_comm is short against the ops).
Schedule v_zb(const Problem& pr) {
  std::string why;
  auto s = generate_v_zb(pr, &why);
  INFO(why);
  REQUIRE(s);
  return std::move(*s);
}

}  // namespace

TEST_CASE("v-min, v-half, v-zb: valid for every p and m, W's in microbatch order, per-stage times") {
  for (int p : {1, 2, 3, 4, 5, 6, 8, 9}) {
    for (int m : {1, 2, p, 2 * p, 3 * p + 1}) {
      INFO("p=" << p << " m=" << m);
      for (const Problem& pr : {make_problem(p, m, 1, 1, 1, 0, 1, 0.5, "", 2), uneven(p, m)}) {
        for (const Schedule& s : {generate_v_block(pr, VBlock::kMin), generate_v_block(pr, VBlock::kHalf),
                                  v_zb(pr)}) {
          INFO(s.method);
          CHECK(s.placement == v_shape_placement(p));
          check_invariants(s, pr);
          CHECK(validate_warnings(s).empty());
        }
      }
    }
  }
}

TEST_CASE("v-min, v-half, v-zb: about 1/3, 1/2 and 1 times 1F1B's activation memory") {
  // M_W = 0: the peak counts activations only; 1F1B holds p microbatches of a stage = 2p chunks'.
  for (int p : {3, 4, 6, 8, 12, 16}) {
    const int m = 3 * p;
    INFO("p=" << p);
    Problem pr = make_problem(p, m, 1, 1, 1, 0, 1, 0, "", 2);
    const Mem chunk = pr.mem_b[0], one_f1b = 2 * p * chunk;
    const Mem vmin = peak_of(generate_v_block(pr, VBlock::kMin), pr);
    const Mem vhalf = peak_of(generate_v_block(pr, VBlock::kHalf), pr);
    const Mem vzb = peak_of(v_zb(pr), pr);
    // The block's lifespan over 6 slots, rounded up, plus the interval that separates its ops.
    CHECK(vmin <= one_f1b / 3 + 2 * chunk);
    CHECK(vhalf <= one_f1b / 2 + 2 * chunk);
    CHECK(vmin <= vhalf);  // equal at p = 3, where V-Min needs its interval and V-Half none
    CHECK(vhalf < vzb);
    CHECK(vzb <= one_f1b);
  }
}

TEST_CASE("v search: at the memory of V-Min, V-Half and V-ZB never worse, strictly better in a third of settings") {
  // The paper's 1.5B times (p=8, m=24), uniform times, and per-stage times; every block's own peak
  // as the limit. The searched schedule's span is checked by the exact simulator.
  struct Setting {
    std::string name;
    Problem pr;
  };
  std::vector<Setting> settings = {
      {"1.5B p=8 m=24", make_problem(8, 24, 18.522 / 2, 18.086 / 2, 9.337 / 2, 0.601, 1, 0.5, "", 2)},
      {"uniform p=4 m=12", make_problem(4, 12, 1, 1, 1, 0, 1, 0.5, "", 2)},
      {"uneven p=6 m=18", uneven(6, 18)},
      {"uniform p=16 m=48", make_problem(16, 48, 1, 1, 1, 0, 1, 0.5, "", 2)},
  };
  int compared = 0, better = 0;
  for (auto& [name, pr] : settings) {
    for (const Schedule& block : {generate_v_block(pr, VBlock::kMin), generate_v_block(pr, VBlock::kHalf),
                                  v_zb(pr)}) {
      INFO(name << " " << block.method);
      Problem limited = pr;
      limited.mem_limit = peak_of(block, pr);
      std::vector<Diag> diags;
      auto found = search_v(limited, &diags);
      INFO(format_diags(diags));
      REQUIRE(found);
      CHECK(validate(found->schedule, limited).empty());
      const Ticks ours = simulate_span(found->schedule, limited), theirs = simulate_span(block, pr);
      CHECK(ours == found->span);
      CHECK(ours <= theirs);
      ++compared;
      if (ours < theirs) ++better;
    }
  }
  INFO(better << " of " << compared << " strictly better");
  CHECK(3 * better >= compared);
}

TEST_CASE("v search: a limit below one microbatch's two chunks is refused with the reason") {
  Problem pr = make_problem(4, 8, 1, 1, 1, 0, 1, 0.5, "", 2);
  pr.mem_limit = pr.mem_b[0] * 3 / 2;
  std::vector<Diag> diags;
  CHECK_FALSE(search_v(pr, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].message.find("no V-shape schedule fits the memory limit") == 0);
}

TEST_CASE("v-zb: where its greedy stalls (T_comm long against the ops) it says so, and the V search goes on") {
  // fuzz_problem's find: 4 stages, per-stage times near 2, T_comm 5105. v-zb dereferenced an empty
  // result and crashed zbplan.
  ProblemInput in;
  in.p = 4;
  in.m = 16;
  in.chunks = 2;
  in.t_f = {1.2, 1.0, 1.0, 1.3};
  in.t_b = {1.1, 1.0, 1.0, 1.35};
  in.t_w = {0.7, 0.6, 0.6, 0.75};
  in.t_comm = 5105;
  const Problem pr = zbpp::test::checked_problem(in);
  std::string why;
  CHECK_FALSE(generate_v_zb(pr, &why));
  CHECK(why.find("v-zb: the greedy list scheduler stalled with every knob") == 0);
  std::vector<Diag> diags;
  auto found = search_v(pr, &diags, Cost::kSpan, {});
  REQUIRE(found);
  CHECK(validate(found->schedule, pr).empty());
}
