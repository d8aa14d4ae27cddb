// Tests for planner/gen_v.cpp: V-Min, V-Half and V-ZB are valid for every p and m with the memory
// the paper gives them, and the V search beats each of them at its own memory.
#include "planner/gen_v.h"

#include <chrono>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "core/simulate.h"
#include "core/validate.h"
#include "io/export_csv.h"
#include "io/import_csv.h"
#include "planner/gen_baseline.h"
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
  auto s = generate_v_zb_best(pr, &why);
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
                                  v_zb(pr), generate_v_block_reordered(pr, VBlock::kMin),
                                  generate_v_block_reordered(pr, VBlock::kHalf)}) {
          INFO(s.method);
          CHECK(s.placement == v_shape_placement(p));
          check_invariants(s, pr);
          CHECK(validate_warnings(s).empty());
        }
        // The reordering keeps within the block's peak memory.
        for (VBlock b : {VBlock::kMin, VBlock::kHalf})
          CHECK(peak_of(generate_v_block_reordered(pr, b), pr) <= peak_of(generate_v_block(pr, b), pr));
      }
    }
  }
}

TEST_CASE("v-min, v-half reordered: the authors' own figures on their unit model") {
  // Their zbv_greedy (tests/golden/authors, README there) on T_F = T_B = T_W = 1 per chunk, no
  // T_comm, a chunk's F held until its W: V-Half spans 53 at p=4 m=8 (0.0943) and 161 at p=8 m=24
  // (0.1056), V-Min 59 and 171 (0.1864, 0.1579), each within its block's peak (6, 10, 4, 8 units).
  struct Case {
    int p, m;
    VBlock block;
    double span, peak;
  };
  for (const Case& c : {Case{4, 8, VBlock::kHalf, 53, 6}, Case{8, 24, VBlock::kHalf, 161, 10},
                        Case{4, 8, VBlock::kMin, 59, 4}, Case{8, 24, VBlock::kMin, 171, 8}}) {
    INFO("p=" << c.p << " m=" << c.m << (c.block == VBlock::kMin ? " v-min" : " v-half"));
    const Problem pr = make_problem(c.p, c.m, 1, 1, 1, 0, 1, 1, "", 2);
    const Schedule s = generate_v_block_reordered(pr, c.block);
    check_invariants(s, pr);
    CHECK(simulate_span(s, pr) == *to_quanta(c.span));
    CHECK(peak_of(s, pr) == *to_quanta(c.peak));
  }
  // Where the block alone is slower: V-Half spans 60 at p=4 m=8 and 170 at p=8 m=24.
  CHECK(simulate_span(generate_v_block(make_problem(4, 8, 1, 1, 1, 0, 1, 1, "", 2), VBlock::kHalf),
                      make_problem(4, 8, 1, 1, 1, 0, 1, 1, "", 2)) == *to_quanta(60));
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

TEST_CASE("v-zb: T_comm long against the ops (where the greedy once stalled) still plans, and so does the V search") {
  // fuzz_problem's find: 4 stages, per-stage times near 2, T_comm 5105. The greedy lost the arrival
  // of an input in flight when another op of its stage was ready but held by memory, and stalled.
  ProblemInput in;
  in.p = 4;
  in.m = 16;
  in.chunks = 2;
  in.t_f = {1.2, 1.0, 1.0, 1.3};
  in.t_b = {1.1, 1.0, 1.0, 1.35};
  in.t_w = {0.7, 0.6, 0.6, 0.75};
  in.t_comm = {5105};
  const Problem pr = zbpp::test::checked_problem(in);
  for (const auto& o : {VGreedyOptions{8}, VGreedyOptions{2}, VGreedyOptions{3, false, true, false, VOrder::kFFirst}}) {
    INFO(o.name());
    std::string why;
    auto greedy = generate_v_greedy(pr, o, &why);
    INFO(why);
    REQUIRE(greedy);
    check_invariants(*greedy, pr);
  }
  const Schedule zb = v_zb(pr);
  CHECK(validate(zb, pr).empty());
  CHECK(simulate_span(zb, pr) <= simulate_span(generate_zb_v_handcrafted(pr), pr));
  std::vector<Diag> diags;
  auto found = search_v(pr, &diags, Cost::kSpan, {});
  REQUIRE(found);
  CHECK(validate(found->schedule, pr).empty());
}

TEST_CASE("v-zb: at 1F1B's activation memory no worse than ZB-V, strictly better on the paper's settings") {
  // The paper's Table 5 times (each chunk half a stage's), uniform and per-stage times. V-ZB's
  // peak stays within 2p chunk activations; its span is checked by the exact simulator.
  struct Setting {
    std::string name;
    Problem pr;
    bool strictly;  // the paper's times: the polish finds a better order than ZB-V's
  };
  std::vector<Setting> settings = {
      {"1.5B p=8 m=24", make_problem(8, 24, 18.522 / 2, 18.086 / 2, 9.337 / 2, 0.601, 0.5, 0.25, "", 2), true},
      {"6.2B p=8 m=32", make_problem(8, 32, 29.802 / 2, 29.428 / 2, 19.530 / 2, 0.577, 0.5, 0.25, "", 2), true},
      {"14.6B p=16 m=48", make_problem(16, 48, 11.347 / 2, 11.248 / 2, 8.132 / 2, 0.377, 0.5, 0.25, "", 2), true},
      {"uniform p=4 m=12", make_problem(4, 12, 1, 1, 1, 0, 1, 0.5, "", 2), false},
      {"uneven p=6 m=18", uneven(6, 18), false},
      {"T_comm 3 p=4 m=8", make_problem(4, 8, 1, 1, 1, 3, 1, 0.5, "", 2), false},
  };
  for (auto& [name, pr, strictly] : settings) {
    INFO(name);
    const Schedule ours = v_zb(pr), theirs = generate_zb_v_handcrafted(pr);
    check_invariants(ours, pr);
    const auto peaks = zbpp::test::timeline_or_fail(ours, pr).peak_memory;
    for (int s = 0; s < pr.p; ++s) CHECK(peaks[s] <= 2 * pr.p * pr.mem_b[s]);
    const Ticks ours_span = simulate_span(ours, pr), theirs_span = simulate_span(theirs, pr);
    CHECK(ours_span <= theirs_span);
    if (strictly) CHECK(ours_span < theirs_span);
  }
}

TEST_CASE("v block family: every block valid for every p and m, within the limit given, each order once") {
  for (int p : {1, 2, 3, 4, 5, 8}) {
    for (int m : {1, 2, p, 2 * p + 1}) {
      INFO("p=" << p << " m=" << m);
      for (const Problem& pr : {make_problem(p, m, 1, 1, 1, 0, 1, 0.5, "", 2), uneven(p, m)}) {
        const Mem limit = (p + 1) * pr.mem_b[0];  // a little over half of 1F1B's 2p chunk activations
        auto family = generate_v_block_family(pr, limit);
        CHECK(!family.empty());
        std::set<std::string> orders;  // each stage's ops as text
        for (const auto& [name, form, s] : family) {
          INFO(name);
          CHECK(name.rfind("block 0", 0) == 0);
          check_invariants(s, pr);
          CHECK(peak_of(s, pr) <= limit);
          std::string text;
          for (const auto& ops : s.stages) {
            for (const Op& op : ops) text += op_type_name(op.type) + std::to_string(op.mb) + "." + std::to_string(op.chunk) + " ";
            text += "\n";
          }
          orders.insert(text);
        }
        CHECK(orders.size() == family.size());
      }
    }
  }
  // Limits per stage: every member keeps each stage within its own (the end stages' are tighter).
  for (int p : {4, 8}) {
    Problem pr = make_problem(p, 2 * p, 1, 1.1, 0.7, 0.05, 1, 0.5, "", 2);
    pr.stage_mem_limits.assign(p, (p + 3) * pr.mem_b[0]);
    pr.stage_mem_limits.front() = pr.stage_mem_limits.back() = (p + 1) * pr.mem_b[0];
    auto family = generate_v_block_family(pr, std::numeric_limits<Mem>::max());
    INFO("p=" << p << ": " << family.size() << " members");
    CHECK(!family.empty());
    for (const auto& [name, form, s] : family) {
      INFO(name);
      CHECK(validate_memory(s, pr).empty());
    }
  }
}

TEST_CASE("v block family: the authors' own figures at their search's memory on their unit model") {
  // Their v_auto_schedule (tests/golden/authors) at p=4 m=8 and 5 units spans 56 (0.1429) from
  // the block 0345 +1: the same block reordered, its cool-down laid out as theirs, spans 56; kept
  // as the squeezes leave it, 58.
  const Problem pr = make_problem(4, 8, 1, 1, 1, 0, 1, 1, "", 2);
  Ticks best = std::numeric_limits<Ticks>::max();
  for (const auto& [name, form, s] : generate_v_block_family(pr, 5 * pr.mem_b[0])) {
    CHECK(peak_of(s, pr) <= 5 * pr.mem_b[0]);
    if (name.find("cool-down laid out") != std::string::npos) best = std::min(best, simulate_span(s, pr));
  }
  CHECK(best == *to_quanta(56));
}

TEST_CASE("v-zb rounds: valid or refused with the reason for every p and m") {
  for (int p : {1, 2, 3, 4, 5, 6, 8}) {
    for (int m : {1, 2, p, 2 * p, 3 * p + 1}) {
      INFO("p=" << p << " m=" << m);
      for (const Problem& pr : {make_problem(p, m, 1, 1, 1, 0, 1, 0.5, "", 2), uneven(p, m),
                                make_problem(p, m, 1, 1, 1, 3, 1, 0.5, "", 2)}) {
        int made = 0;
        for (bool fill_f : {true, false})
          for (bool fill_b : {true, false}) {
            std::string why;
            auto s = generate_v_zb_rounds(pr, {fill_f, fill_b}, &why);
            if (!s) {
              CHECK(why.rfind("v-zb rounds: ", 0) == 0);
              continue;
            }
            ++made;
            check_invariants(*s, pr);
            const auto peaks = zbpp::test::timeline_or_fail(*s, pr).peak_memory;
            for (int st = 0; st < p; ++st) CHECK(peaks[st] <= 2 * p * pr.mem_b[st]);
          }
        // It needs enough microbatches to fill its warm-up: from 2p on it plans where every stage
        // takes the same times (with per-stage times a stage may find its input missing).
        if (m >= 2 * p && pr.uniform_times()) CHECK(made == 4);
      }
    }
  }
}

TEST_CASE("v-zb rounds: the authors' own V-ZB orders, and v-zb no worse than them") {
  // tests/golden/authors (README there): their V-ZB (zbv.py) at 2p units, on their unit model, on
  // T_B 1.5 and T_W 0.6 (where its rerun with each stage's allowed bubble counts) and on the
  // paper's 1.5B and 14.6B times (where W's that overrun a wait count). Their generator keeps the
  // first of its four fill options with the smallest largest stage bubble; one of ours must write
  // each order op for op, and each of the four must span no longer than it (on T_B 1.5 two of them
  // do only after the rerun).
  struct Case {
    std::string file;
    Problem pr;
  };
  for (const Case& c : {Case{"equal_p4_m8_v-zb_peak8.csv", make_problem(4, 8, 1, 1, 1, 0, 1, 1, "", 2)},
                        Case{"uneven_p4_m8_v-zb_peak8.csv", make_problem(4, 8, 1, 1.5, 0.6, 0, 1, 1, "", 2)},
                        Case{"equal_p8_m24_v-zb_peak16.csv", make_problem(8, 24, 1, 1, 1, 0, 1, 1, "", 2)},
                        Case{"1.5B_p8_m24_v-zb_peak16.csv",
                             make_problem(8, 24, 9.261, 9.043, 4.6685, 0.601, 1, 1, "", 2)},
                        Case{"14.6B_p16_m48_v-zb_peak32.csv",
                             make_problem(16, 48, 5.6735, 5.624, 4.066, 0.377, 1, 1, "", 2)}}) {
    INFO(c.file);
    std::ifstream in(std::string(ZBPP_GOLDEN_DIR) + "/authors/" + c.file, std::ios::binary);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    std::vector<Diag> diags;
    auto theirs = import_pytorch_csv(text.str(), c.file, &diags);
    INFO(format_diags(diags));
    REQUIRE(theirs);
    bool same = false;
    for (bool fill_b : {true, false})
      for (bool fill_f : {true, false}) {
        std::string why;
        auto s = generate_v_zb_rounds(c.pr, {fill_f, fill_b}, &why);
        INFO(why);
        REQUIRE(s);
        same = same || s->stages == theirs->schedule.stages;
        CHECK(simulate_span(*s, c.pr) <= simulate_span(theirs->schedule, c.pr));
      }
    CHECK(same);
    CHECK(simulate_span(v_zb(c.pr), c.pr) <= simulate_span(theirs->schedule, c.pr));
  }
}

TEST_CASE("interleaved search: at 1F1B-I's memory never worse than 1F1B-I, strictly better in a third of settings, by the greedy where times are even") {
  // 2, 3 and 4 chunks; the paper's 1.5B times, uniform and per-stage times. The limit is 1F1B-I's
  // own peak; the searched span is checked by the exact simulator.
  struct Setting {
    std::string name;
    Problem pr;
  };
  auto with_chunks = [](Problem pr, int chunks) {
    pr.chunks = chunks;
    return pr;
  };
  std::vector<Setting> settings;
  for (int chunks : {2, 3, 4}) {
    const std::string c = " chunks=" + std::to_string(chunks);
    settings.push_back({"1.5B p=8 m=24" + c, make_problem(8, 24, 18.522 / chunks, 18.086 / chunks, 9.337 / chunks,
                                                          0.601, 1, 0.5, "", chunks)});
    settings.push_back({"uniform p=4 m=12" + c, make_problem(4, 12, 1, 1, 1, 0, 1, 0.5, "", chunks)});
    settings.push_back({"uneven p=6 m=18" + c, with_chunks(uneven(6, 18), chunks)});
  }
  int better = 0;
  for (auto& [name, pr] : settings) {
    INFO(name);
    std::string err;
    auto seed = generate_1f1b_interleaved(pr, &err);
    INFO(err);
    REQUIRE(seed);
    Problem limited = pr;
    limited.mem_limit = peak_of(*seed, pr);
    std::vector<Diag> diags;
    auto found = search_interleaved(limited, &diags);
    INFO(format_diags(diags));
    REQUIRE(found);
    CHECK(found->schedule.placement == interleaved_placement(pr.p, pr.chunks));
    CHECK(validate(found->schedule, limited).empty());
    const Ticks ours = simulate_span(found->schedule, limited), theirs = simulate_span(*seed, pr);
    CHECK(ours == found->span);
    CHECK(ours <= theirs);
    if (ours < theirs) ++better;
    // The greedy, not only the polished seed, wins where the times are even.
    if (name.rfind("uniform", 0) == 0) CHECK(found->winner.rfind("in-flight", 0) == 0);
  }
  INFO(better << " of " << settings.size() << " strictly better");
  CHECK(3 * better >= static_cast<int>(settings.size()));
}

TEST_CASE("interleaved search: valid at every memory from one microbatch's chunks up, for 2 to 4 chunks") {
  for (int chunks : {2, 3, 4})
    for (int p : {2, 3, 4})
      for (int m : {1, p, 2 * p + 1}) {
        Problem pr = make_problem(p, m, 1, 1, 1, 0.5, 1, 0.5, "", chunks);
        for (int in_flight : {chunks, chunks + 1, 2 * chunks * p}) {
          INFO("chunks=" << chunks << " p=" << p << " m=" << m << " limit " << in_flight << " chunk activations");
          Problem limited = pr;
          limited.mem_limit = in_flight * pr.mem_b[0];
          std::vector<Diag> diags;
          auto found = search_interleaved(limited, &diags);
          INFO(format_diags(diags));
          REQUIRE(found);
          check_invariants(found->schedule, limited);
          CHECK(validate(found->schedule, limited).empty());
        }
      }
}

TEST_CASE("v search: at the peaks of the authors' own V schedules no worse than theirs") {
  // tests/golden/authors (README there): schedules the authors' generators wrote (their search at
  // a memory limit, V-Min, V-Half, V-ZB), the best of theirs at each peak. Their memory model: a
  // chunk's F holds one unit until its W. Each file must import to the span bubble rate and peak
  // recorded for it; the V search at that peak must not be worse than theirs (issue 21's floor),
  // nor than the figure recorded for it (figures.tsv: so that it cannot drift up unnoticed).
  std::ifstream table(std::string(ZBPP_GOLDEN_DIR) + "/authors/figures.tsv");
  REQUIRE(table);
  int files = 0, at_or_below = 0;
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    std::string file, theirs_name, field;
    int p = 0, m = 0, peak = 0;
    double tf = 0, tb = 0, tw = 0, tc = 0, theirs = 0, recorded = 0;
    std::getline(row, file, '\t');
    row >> p >> m >> tf >> tb >> tw >> tc >> peak;
    row.ignore();
    std::getline(row, theirs_name, '\t');
    row >> theirs >> recorded;
    REQUIRE(row);
    INFO(file << " (" << theirs_name << ")");
    std::ifstream in(std::string(ZBPP_GOLDEN_DIR) + "/authors/" + file, std::ios::binary);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    std::vector<Diag> diags;
    auto imported = import_pytorch_csv(text.str(), file, &diags);
    INFO(format_diags(diags));
    REQUIRE(imported);
    const Problem pr = make_problem(p, m, tf, tb, tw, tc, 1, 1, "", 2);
    const Schedule& s = imported->schedule;
    REQUIRE(validate(s, pr).empty());
    const double busy = 2.0 * m * static_cast<double>(pr.t_f[0] + pr.t_b[0] + pr.t_w[0]);
    auto bubble = [&](Ticks span) { return 1 - busy / static_cast<double>(span); };
    CHECK(peak_of(s, pr) == peak * pr.mem_b[0]);
    CHECK(bubble(simulate_span(s, pr)) == Approx(theirs).margin(5e-5));
    Problem limited = pr;
    limited.mem_limit = peak * pr.mem_b[0];
    auto found = search_v(limited, &diags);
    REQUIRE(found);
    CHECK(validate(found->schedule, limited).empty());
    const double ours = bubble(found->span);
    CHECK(ours <= recorded + 5e-5);
    ++files;
    if (ours <= theirs + 5e-5) ++at_or_below;
  }
  CHECK(files == 23);
  // All 23 since the V search took the authors' family of blocks with their cool-down: equal on
  // their unit model, lower on the 1.5B times at 8 and 9 units and 11 to 15.
  INFO(at_or_below << " of " << files << " at or below theirs");
  CHECK(at_or_below == files);
}

TEST_CASE("a deadline cuts the V and interleaved searches short: a valid schedule, and what was left out named") {
  Problem pr = make_problem(8, 32, 1, 1, 1, 0, 1, 0, "", 2);
  std::vector<Diag> diags;
  auto full = search_v(pr, &diags, Cost::kSpan, {});
  REQUIRE(full);
  CHECK(full->cut.empty());
  const Deadline passed = Deadline::in(0);  // already past: only the first two seeds are made
  auto cut = search_v(pr, &diags, Cost::kSpan, {}, passed);
  REQUIRE(cut);
  CHECK(validate(cut->schedule, pr).empty());
  CHECK(cut->cut.find("seeds v-zb not made") != std::string::npos);  // the handcrafted seeds are always made
  CHECK(cut->cut.find("the greedy ran 0 of its") != std::string::npos);
  CHECK(cut->cut.find("the polish by swaps skipped") != std::string::npos);
  CHECK(cut->candidates < full->candidates);
  CHECK(cut->cost >= full->cost);  // never better than the whole search
  Problem interleaved = pr;
  interleaved.placement = interleaved_placement(pr.p, 2);
  auto il = search_interleaved(interleaved, &diags, Cost::kSpan, {}, passed);
  REQUIRE(il);
  CHECK(validate(il->schedule, interleaved).empty());
  CHECK(il->cut.find("the greedy ran 0 of its") != std::string::npos);
  // Past the deadline the groups polished apart still compete, unpolished: under a limit that the
  // handcrafted seeds miss, the reordered V-Half (always made) is the least the cut search returns.
  Problem tight = make_problem(16, 48, 5.6735, 5.624, 4.066, 0.377, 0.5, 0.25, "0.75p", 2);
  auto tight_cut = search_v(tight, &diags, Cost::kSpan, {}, passed);
  REQUIRE(tight_cut);
  const Ticks reordered = simulate_cost(generate_v_block_reordered(tight, VBlock::kHalf), tight, Cost::kSpan);
  CHECK(tight_cut->cost <= reordered);
  CHECK(tight_cut->winner.find("reordered") != std::string::npos);
  // A deadline far away changes nothing.
  auto later = search_v(pr, &diags, Cost::kSpan, {}, Deadline::in(3600));
  REQUIRE(later);
  CHECK(later->cut.empty());
  CHECK(later->cost == full->cost);
}

TEST_CASE("progress lines: at most one a second, none in the first, nothing without a sink, and the V search's named") {
  std::vector<std::string> lines;
  ProgressTicker ticker([&](const std::string& line) { lines.push_back(line); });
  for (int i = 0; i < 1000; ++i) ticker.tick([](double) { return std::string("x"); });
  CHECK(lines.empty());  // within the first second
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  for (int i = 0; i < 1000; ++i) ticker.tick([](double s) { return "after " + std::to_string(s >= 1.0); });
  CHECK(lines == std::vector<std::string>{"after 1"});  // one line, made once
  ProgressTicker silent({});
  bool made = false;
  silent.tick([&](double) {
    made = true;
    return std::string();
  });
  CHECK_FALSE(made);
  // The V search's lines, however many its speed gives here, name it and fit one a second.
  Problem pr = make_problem(16, 64, 1, 1, 1, 0, 1, 0, "", 2);
  std::vector<Diag> diags;
  std::vector<std::string> said;
  auto start = std::chrono::steady_clock::now();
  auto found = search_v(pr, &diags, Cost::kSpan, {}, Deadline::in(2.5), [&](const std::string& l) { said.push_back(l); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(found);
  CHECK(said.size() <= static_cast<size_t>(seconds) + 1);
  for (const std::string& l : said) CHECK(l.rfind("V-shape search: ", 0) == 0);
}
