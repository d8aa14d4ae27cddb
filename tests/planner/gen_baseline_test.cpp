// Tests for planner/gen_baseline.cpp: every baseline is valid over a grid of shapes, has the
// paper's peak memory (Table 2 / §2.3), and meets the closed-form bubble sizes.
#include "planner/gen_baseline.h"

#include <catch2/catch.hpp>

#include "core/simulate.h"
#include "test_util.h"

using namespace zbpp;
using zbpp::test::check_invariants;
using zbpp::test::make_problem;

namespace {
constexpr Ticks U = kQuantaPerUnit;

Timeline timeline_of(const Schedule& s, const Problem& pr) {
  std::vector<Diag> diags;
  auto t = simulate_timeline(s, pr, &diags);
  INFO(format_diags(diags));
  REQUIRE(t);
  return *t;
}
}  // namespace

TEST_CASE("baselines: 1F1B, ZB-H1 and ZB-H2 are valid for every p and m, including m < p") {
  for (int p : {1, 2, 3, 4, 5, 8, 9, 16}) {
    for (int m : {1, 2, p - 1, p, p + 1, 2 * p, 3 * p + 1}) {
      if (m < 1) continue;
      INFO("p=" << p << " m=" << m);
      Problem pr = make_problem(p, m, 3, 3, 2, 0.25);
      check_invariants(generate_1f1b(pr), pr);
      check_invariants(generate_zb_h1(pr), pr);
      check_invariants(generate_zb_h2(pr), pr);
    }
  }
}

TEST_CASE("baselines: interleaved 1F1B is valid, honours wrap-around dependencies, and rejects m % p != 0") {
  for (int p : {2, 4, 8}) {
    for (int chunks : {2, 3}) {
      for (int m : {p, 2 * p, 3 * p}) {
        INFO("p=" << p << " m=" << m << " chunks=" << chunks);
        Problem pr = make_problem(p, m, 1, 1, 0.5, 0.1, 1, 0.5, "", chunks);
        std::string err;
        auto s = generate_1f1b_interleaved(pr, &err);
        REQUIRE(s);
        check_invariants(*s, pr);
        // The wrap-around: stage 0's chunk-1 F of every microbatch starts after the last stage's chunk-0 F.
        Timeline t = timeline_of(*s, pr);
        for (int j = 0; j < m; ++j) {
          auto find = [&](int st, OpType type, int chunk) {
            for (size_t i = 0; i < s->stages[st].size(); ++i)
              if (s->stages[st][i] == Op{type, j, chunk}) return t.ops[st][i];
            FAIL("op not found");
            return OpTiming{};
          };
          CHECK(find(0, OpType::F, 1).start >= find(p - 1, OpType::F, 0).end + pr.hop(p - 1, 0));
          CHECK(find(p - 1, OpType::BW, chunks - 2).start >= find(0, OpType::BW, chunks - 1).end + pr.hop(0, p - 1));
        }
      }
    }
  }
  std::string err;
  CHECK_FALSE(generate_1f1b_interleaved(make_problem(4, 6, 1, 1, 1, 0, 1, 0.5, "", 2), &err));
  CHECK(err == "1f1b-i (Megatron's interleaved order) needs m to be a multiple of p; got m = 6, p = 4");
}

TEST_CASE("baselines: peak memory per stage is the paper's (Table 2)") {
  const int p = 6, m = 20;
  const double mb = 2, mw = 0.75;
  Problem pr = make_problem(p, m, 3, 3, 2, 0, mb, mw);
  auto ones = peak_memory(generate_1f1b(pr), pr);
  auto h1 = peak_memory(generate_zb_h1(pr), pr);
  auto h2 = peak_memory(generate_zb_h2(pr), pr);
  for (int s = 0; s < p; ++s) {
    INFO("stage " << s);
    CHECK(from_quanta(ones[s]) == Approx((p - s) * mb));
    CHECK(from_quanta(h1[s]) == Approx((p - s) * mb + s * mw));             // (p - i + 1) M_B + (i - 1) M_W
    CHECK(from_quanta(h2[s]) == Approx((2 * p - 2 * s - 1) * mb + 2 * s * mw));  // (2p - 2i + 1) M_B + (2i - 2) M_W
  }
  CHECK(from_quanta(h1[0]) == Approx(p * mb));
  CHECK(from_quanta(h2[0]) == Approx((2 * p - 1) * mb));
}

TEST_CASE("baselines: bubble sizes match the closed forms of Table 2") {
  const int p = 5, m = 16;
  const Ticks F = 4 * U, B = 5 * U, W = 2 * U;
  Problem pr = make_problem(p, m, 4, 5, 2);
  Ticks ideal = m * (F + B + W);
  CHECK(timeline_of(generate_1f1b(pr), pr).span - ideal == (p - 1) * (F + B + W));
  CHECK(timeline_of(generate_zb_h1(pr), pr).span - ideal == (p - 1) * (F + B - W));
  // ZB-H2 with communication: the authors' calculator asserts (p-1)(T_F + T_B + 2 T_comm - 2 T_W).
  const Ticks C = U / 2;
  Problem with_comm = make_problem(p, m, 4, 5, 2, 0.5);
  CHECK(timeline_of(generate_zb_h2(with_comm), with_comm).span - ideal == (p - 1) * (F + B + 2 * C - 2 * W));
  // Interleaved 1F1B without communication: v chunks each of the full op times.
  const int v = 3;
  Problem inter = make_problem(p, 2 * p, 4, 5, 2, 0, 1, 0.5, "", v);
  std::string err;
  auto s = generate_1f1b_interleaved(inter, &err);
  REQUIRE(s);
  CHECK(timeline_of(*s, inter).span - 2 * p * v * (F + B + W) == (p - 1) * (F + B + W));
}

TEST_CASE("baselines: fbw_order keeps W's in microbatch order behind their B's") {
  auto ops = fbw_order(4, 2, 1);
  std::string text;
  for (const Op& op : ops) text += op_short(op) + " ";
  CHECK(text == "F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3 ");
}

TEST_CASE("baselines: ZB-V is valid for every p and m and keeps stage memory at p * M_B") {
  for (int p : {1, 2, 3, 4, 5, 8}) {
    for (int m : {1, 2, p, 2 * p - 1, 2 * p, 3 * p + 1}) {
      if (m < 1) continue;
      INFO("p=" << p << " m=" << m);
      // Per-chunk times and memory: half of a stage's.
      Problem pr = make_problem(p, m, 1.5, 1.5, 1, 0.1, 0.5, 0.2, "1p", 2);
      Schedule s = generate_zb_v_handcrafted(pr);
      CHECK(s.placement == v_shape_placement(p));
      check_invariants(s, pr);  // includes the 1p memory limit
      if (m >= 2 * p - 1) CHECK(from_quanta(peak_memory(s, pr)[0]) == Approx(p * 1.0));
    }
  }
}

TEST_CASE("baselines: ZB-V beats ZB-H1 at the same memory on the paper's 1.5B setting") {
  Problem one_chunk = make_problem(8, 24, 18.522, 18.086, 9.337, 0.601, 1, 0.3664, "1p");
  Problem two_chunks = make_problem(8, 24, 9.261, 9.043, 4.6685, 0.601, 0.5, 0.1832, "1p", 2);
  check_invariants(generate_zb_v_handcrafted(two_chunks), two_chunks);
  double v = timeline_of(generate_zb_v_handcrafted(two_chunks), two_chunks).span_bubble_rate;
  double h1 = timeline_of(generate_zb_h1(one_chunk), one_chunk).span_bubble_rate;
  CHECK(v == Approx(0.0728).margin(0.00005));
  CHECK(v < h1);
}

TEST_CASE("baselines: DualPipe-V runs PyTorch's ScheduleDualPipeV order, valid for every p and m >= 2p") {
  // p = 2, m = 4, as PyTorch's ScheduleDualPipeV lists it with each OVERLAP_F_B pair run as its two
  // ops in order (rank 0 holds virtual stages 0 and 3: chunk 1 is ":1"; PyTorch's I is our B, its B our BW).
  Problem pr = make_problem(2, 4, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  std::string err;
  auto s = generate_dualpipe_v(pr, &err);
  REQUIRE(s);
  auto text = [](const std::vector<Op>& ops) {
    std::string out;
    for (const Op& op : ops) out += (out.empty() ? "" : " ") + op_short(op);
    return out;
  };
  CHECK(text(s->stages[0]) == "F0 F1 F2 F0:1 B0:1 W0:1 F1:1 F3 BW1:1 F2:1 BW0 BW2:1 F3:1 BW1 BW3:1 B2 W2 B3 W3");
  CHECK(text(s->stages[1]) == "F0 F0:1 F1 F1:1 F2 BW0:1 F2:1 BW0 F3 BW1:1 F3:1 BW1 BW2:1 BW2 B3:1 B3 W3:1 W3");
  for (int p : {1, 2, 3, 4, 5, 8}) {
    for (int m : {2 * p, 2 * p + 1, 3 * p + 1, 5 * p}) {
      INFO("p=" << p << " m=" << m);
      Problem two = make_problem(p, m, 1.5, 1.5, 1, 0.1, 0.5, 0.2, "", 2);
      auto v = generate_dualpipe_v(two, &err);
      REQUIRE(v);
      CHECK(v->placement == v_shape_placement(p));
      check_invariants(*v, two);
    }
  }
  Problem few = make_problem(4, 7, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  CHECK_FALSE(generate_dualpipe_v(few, &err));
  CHECK(err == "dualpipe-v needs at least as many microbatches as virtual stages (m >= 2p = 8); got m = 7, p = 4");
}
