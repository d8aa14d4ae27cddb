// plan_schedule's auto: the schedule it returns is, by the true objective (iterations back to back
// with the optimizer, simulate_iterations), no worse than any candidate it tried under any
// optimizer placement it may choose.
#include "planner/pipeline.h"

#include <algorithm>

#include <catch2/catch.hpp>

#include "core/lowered.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "planner/pipeline_internal.h"
#include "planner/search_heuristic.h"
#include "test_util.h"

namespace zbpp {
namespace {

const std::vector<LowerOptions> kPlacements = {{Optimizer::kPostValidation, PostValidationAt::kFirstBackward},
                                               {Optimizer::kPostValidation, PostValidationAt::kStart},
                                               {Optimizer::kSync, PostValidationAt::kFirstBackward}};

Ticks true_cost(const Schedule& lowered, const Problem& pr, Objective objective) {
  std::vector<Diag> diags;
  auto it = simulate_iterations(lowered, pr, {}, &diags);
  INFO(format_diags(diags));
  REQUIRE(it);
  return objective == Objective::kWall ? it->wall : it->period;
}

// Four stages of uneven times (M_B = 1, M_W = 0.5).
Problem uneven_stages(int m, double t_comm, const std::string& limit) {
  ProblemInput in;
  in.p = 4;
  in.m = m;
  in.t_f = {1.0, 1.4, 0.8, 1.2};
  in.t_b = {1.1, 1.3, 0.9, 1.5};
  in.t_w = {0.6, 0.5, 0.7, 0.4};
  in.t_comm = {t_comm};
  in.mem_limit = limit;
  return test::checked_problem(in);
}

// How auto's notes name an optimizer placement.
std::string placement_name(const LowerOptions& l) {
  if (l.optimizer == Optimizer::kSync) return "sync";
  return l.post_validation_at == PostValidationAt::kStart ? "post-validation, validated at the start" : "post-validation";
}

// auto's line for one candidate under one placement, or "" when it printed none.
std::string auto_line(const PlanResult& best, const std::string& name, const LowerOptions& placement) {
  const std::string head = "auto: " + name + " under " + placement_name(placement) + ": ";
  for (const std::string& note : best.notes)
    if (note.rfind(head, 0) == 0) return note;
  return "";
}

// One of auto's candidates on a one-chunk problem, as its notes name it.
struct Candidate {
  std::string name, method;
  Problem problem;
  bool searched_once = false;  // auto searches it for the first placement and lowers that under each
};

std::vector<Candidate> one_chunk_candidates(const Problem& pr) {
  std::vector<Candidate> out;
  for (const std::string method : {"1f1b", "zb-h1", "zb-h2", "heuristic", "zb-v", "dualpipe-v", "v-min", "v-half", "v-zb"})
    out.push_back({method, method, pr});
  out.push_back({"heuristic-v", "heuristic-v", pr, true});
  // The interleaved placement: each stage split into 2 chunks, stage s holding s and s+p.
  Problem interleaved = split_into_chunks(pr, 2);
  interleaved.placement = interleaved_placement(pr.p, 2);
  out.push_back({"1f1b-i", "1f1b-i", interleaved});
  out.push_back({"heuristic --placement interleaved", "heuristic", interleaved, true});
  return out;
}

// A candidate planned alone for one placement, as auto plans it: a search auto runs once is
// planned for the first placement (`searched`, planned once by the caller), and its compute
// schedule lowered for the others.
std::optional<PlanResult> plan_alone(const Candidate& c, const PlanOptions& options, const LowerOptions& placement,
                                     const std::optional<PlanResult>& searched) {
  std::vector<Diag> why;
  if (!c.searched_once) {
    PlanOptions one = options;
    one.lowerings = {placement};
    return plan_schedule(c.problem, c.method, &why, one);
  }
  if (!searched) return std::nullopt;
  PlanResult planned = *searched;
  planned.schedule = compute_projection(planned.schedule);
  IterationOptions figures;
  figures.op_times = false;
  if (!lower_planned(&planned, &why, placement, &figures)) return std::nullopt;
  return planned;
}

// The floor as auto prints it: no candidate's figure (period or wall, by `objective`) in its notes
// is below `cost`, its pick's. Returns how many figures it read.
int check_no_printed_figure_below(const PlanResult& best, Ticks cost, Objective objective) {
  const std::string figure = objective == Objective::kWall ? ", wall " : ", period ";
  int printed = 0;
  for (const std::string& note : best.notes)
    if (auto at = note.find(figure); note.rfind("auto: ", 0) == 0 && at != std::string::npos) {
      INFO(note);
      CHECK(cost <= *to_quanta(std::stod(note.substr(at + figure.size()))));
      ++printed;
    }
  return printed;
}

// auto's pick against every other candidate under every placement; returns auto's plan, whose
// solver.value is its cost. Every candidate's line shows its placement, its peak memory against the
// limit and its true period and wall, as planned alone.
PlanResult check_auto_is_best(const Problem& pr, Objective objective) {
  PlanOptions options;
  options.objective = objective;
  options.lowerings = kPlacements;
  std::vector<Diag> diags;
  auto best = plan_schedule(pr, "auto", &diags, options);
  INFO(format_diags(diags));
  REQUIRE(best);
  REQUIRE(best->schedule.level == Level::kLowered);
  const Ticks cost = true_cost(best->schedule, best->problem, objective);
  CHECK(best->solver.value == cost);
  int compared = 0, v_shaped = 0, interleaved = 0;
  for (const Candidate& c : one_chunk_candidates(pr)) {
    std::optional<PlanResult> searched;
    if (c.searched_once) {
      PlanOptions first = options;
      first.lowerings = {kPlacements.front()};
      std::vector<Diag> why;
      searched = plan_schedule(c.problem, c.method, &why, first);
    }
    for (const LowerOptions& placement : kPlacements) {
      INFO(c.name << " under " << placement.optimizer << (placement.post_validation_at == PostValidationAt::kStart ? " (start)" : ""));
      if (c.searched_once && &placement != &kPlacements.front()) {
        // Searched again for this placement, it finds nothing better than auto's pick.
        PlanOptions one = options;
        one.lowerings = {placement};
        std::vector<Diag> why;
        if (auto alone = plan_schedule(c.problem, c.method, &why, one))
          CHECK(cost <= true_cost(alone->schedule, alone->problem, objective));
      }
      // Each candidate planned for one placement comes back lowered with it.
      auto planned = plan_alone(c, options, placement, searched);
      if (!planned) continue;  // over the memory limit
      REQUIRE(planned->schedule.level == Level::kLowered);
      REQUIRE(planned->schedule.optimizer == placement.optimizer);
      CHECK(cost <= true_cost(planned->schedule, planned->problem, objective));
      if (!c.searched_once) CHECK(planned->solver.value == true_cost(planned->schedule, planned->problem, objective));
      ++compared;
      const std::string line = auto_line(*best, c.name, placement);
      INFO(line);
      const bool v = planned->schedule.placement == v_shape_placement(pr.p) && planned->problem.chunks == 2;
      const bool il = planned->schedule.placement == interleaved_placement(pr.p, 2) && planned->problem.chunks == 2;
      v_shaped += v;
      interleaved += il;
      CHECK(line.find(v ? ": V (2 chunks), " : il ? ": interleaved (2 chunks), " : ": 1 chunk, ") != std::string::npos);
      std::vector<Diag> unused;
      const auto peaks = simulate_timeline(planned->schedule, planned->problem, &unused)->peak_memory;
      const std::string memory = "peak memory " + format_quanta(*std::max_element(peaks.begin(), peaks.end())) +
                                 (pr.mem_limit ? " of " + mem_limit_text(pr) : std::string(" (no limit)"));
      CHECK(line.find(memory) != std::string::npos);
      const Ticks period = true_cost(planned->schedule, planned->problem, Objective::kPeriod);
      const Ticks wall = true_cost(planned->schedule, planned->problem, Objective::kWall);
      CHECK(line.find(", period " + format_quanta(period) + " (") != std::string::npos);
      CHECK(line.find(", wall " + format_quanta(wall) + " (") != std::string::npos);
    }
  }
  CHECK(compared >= 6);
  CHECK(v_shaped >= 3);     // both placements compete with one chunk: V candidates are among those compared
  CHECK(interleaved >= 3);  // and interleaved ones
  // The floor, as printed: no candidate's figure in auto's notes is below the pick's.
  CHECK(check_no_printed_figure_below(*best, cost, objective) == compared);
  return *best;
}

// The paper's 1.5B model, p=8, m=24 (Table 5's times), at three memory limits and both objectives:
// one test case per limit, so that ctest -j spreads them (each is minutes under ASan).
void check_auto_on_1_5b(const char* limit) {
  for (Objective objective : {Objective::kPeriod, Objective::kWall}) {
    INFO("limit " << limit << ", objective " << objective_name(objective));
    check_auto_is_best(test::make_problem(8, 24, 18.522, 18.086, 9.337, 0.601, 1, 0.3664, limit), objective);
  }
}

TEST_CASE("auto: its pick is the best candidate by the true period or wall clock, optimizer included (1p)") {
  check_auto_on_1_5b("1p");
}

TEST_CASE("auto: its pick is the best candidate by the true period or wall clock, optimizer included (1.3p)") {
  check_auto_on_1_5b("1.3p");
}

TEST_CASE("auto: its pick is the best candidate by the true period or wall clock, optimizer included (2p, uneven)") {
  check_auto_on_1_5b("2p");
  check_auto_is_best(uneven_stages(12, 0.05, "1.5p"), Objective::kPeriod);
}

TEST_CASE("auto: says which methods it left out and why (the ILPs without a time budget)") {
  Problem pr = test::make_problem(3, 6, 1, 1, 1, 0, 1, 0.5, "");
  PlanOptions options;
  options.lowerings = {kPlacements[0]};
  std::vector<Diag> diags;
  auto best = plan_schedule(pr, "auto", &diags, options);
  REQUIRE(best);
  auto says = [](const PlanResult& r, const std::string& line) {
    return std::find(r.notes.begin(), r.notes.end(), line) != r.notes.end();
  };
  CHECK(says(*best, "auto: ilp, ilp-v: left out: the ILP runs only with a time budget: give --time-limit SECONDS"));
#ifdef ZBPP_HAVE_CBC
  options.time_limit = 0.5;
  best = plan_schedule(pr, "auto", &diags, options);
  REQUIRE(best);
  CHECK(std::none_of(best->notes.begin(), best->notes.end(),
                     [](const std::string& n) { return n.find("left out: the ILP") != std::string::npos; }));
#endif
}

TEST_CASE("limits per stage: the V and interleaved searches keep each stage within its own, and auto runs them") {
  // The middle stages have room for more activations than the end ones (as under --device-memory,
  // where the embedding and head stages hold more parameters). They once planned within the
  // tightest on every stage, and auto left them out.
  Problem tight = test::make_problem(8, 24, 1, 1.1, 0.7, 0.05, 1, 0.5, "4"), roomy = tight, mixed = tight;
  roomy.mem_limit = tight.mem_limit.value() * 3 / 2;
  mixed.mem_limit.reset();
  mixed.stage_mem_limits.assign(8, *roomy.mem_limit);
  mixed.stage_mem_limits.front() = mixed.stage_mem_limits.back() = *tight.mem_limit;
  PlanOptions options;  // compute-only, ranked by the span
  for (const char* method : {"heuristic-v", "heuristic --placement interleaved"}) {
    const bool v = std::string(method) == "heuristic-v";
    auto shaped = [&](Problem pr) {
      if (v) return pr;
      Problem two = split_into_chunks(pr, 2);
      two.placement = interleaved_placement(8, 2);
      return two;
    };
    std::vector<Diag> diags;
    auto plan = [&](const Problem& pr) {
      auto r = plan_schedule(shaped(pr), v ? "heuristic-v" : "heuristic", &diags, options);
      REQUIRE(r);
      return simulate_span(r->schedule, r->problem);
    };
    const Ticks at_tight = plan(tight), at_mixed = plan(mixed), at_roomy = plan(roomy);
    INFO(method << ": tight " << at_tight << ", mixed " << at_mixed << ", roomy " << at_roomy);
    CHECK(at_mixed <= at_tight);
    CHECK(at_mixed >= at_roomy);
    if (v) CHECK(at_mixed < at_tight);  // the span bubble 0.5791 against 0.6200
  }
  std::vector<Diag> diags;
  options.lowerings = {kPlacements[0]};
  auto best = plan_schedule(mixed, "auto", &diags, options);
  REQUIRE(best);
  CHECK(validate(best->schedule, best->problem).empty());
  CHECK(best->schedule.chunks == 2);  // a V or interleaved schedule wins here
  for (const std::string& note : best->notes) CHECK(note.find("limits differ") == std::string::npos);
}

// Issue 35: zbplan plan's default time limit. A deadline already passed stands for one that cuts
// a big search: what is cut is said, with the default's words, and auto still lowers each
// candidate once.
TEST_CASE("time limit: at zbplan's default the cut searches and V-ZB say so, and auto keeps its searches' results and skips the rest") {
  const Problem pr = test::make_problem(4, 8, 1, 1, 1, 0, 1, 0.5, "1p");
  PlanOptions options;
  options.lowerings = {kPlacements[0]};
  options.deadline = Deadline::in(0);
  options.default_deadline = true;
  const std::string said = "time limit (the default 4 s; --time-limit SECONDS gives more): ";
  std::vector<Diag> diags;
  auto has = [](const PlanResult& r, const std::string& text) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  auto v = plan_schedule(pr, "heuristic-v", &diags, options);
  REQUIRE(v);
  CHECK(has(*v, said + "the search stopped early (seeds v-zb not made; the family of blocks made 0 of its"));
  auto zb = plan_schedule(pr, "v-zb", &diags, options);
  REQUIRE(zb);
  CHECK(validate(zb->schedule, zb->problem).empty());
  CHECK(has(*zb, said + "v-zb stopped early (made 2 of its 42 candidates; the polish by swaps cut)"));
  options.default_deadline = false;
  zb = plan_schedule(pr, "v-zb", &diags, options);
  REQUIRE(zb);
  CHECK(has(*zb, "time limit: v-zb stopped early (made 2 of its 42 candidates"));
  // Without a deadline nothing is cut.
  PlanOptions unlimited;
  unlimited.lowerings = {kPlacements[0]};
  zb = plan_schedule(pr, "v-zb", &diags, unlimited);
  REQUIRE(zb);
  CHECK(!has(*zb, "time limit"));

  options.lowerings = {kPlacements[0], kPlacements[1], kPlacements[2]};
  // The limit passed: the searched candidates (lowered first) are lowered once, the others left out.
  auto best = plan_schedule(pr, "auto", &diags, options);
  REQUIRE(best);
  CHECK(has(*best, "auto: heuristic-v under " + lowering_name(kPlacements[0]) + ": V (2 chunks)"));
  CHECK(has(*best, "auto: heuristic-v under " + lowering_name(kPlacements[1]) + ": left out: the time limit passed"));
  CHECK(has(*best, "auto: zb-h1: left out: the time limit passed before its turn"));
  CHECK(has(*best, "auto: v-zb: left out: the time limit passed before its turn"));
  CHECK(has(*best, "auto: best by period (optimizer included) is heuristic-v (" + lowering_name(kPlacements[0]) + ")"));
  // The notes keep the candidates' order: zb-h1's before heuristic-v's.
  auto at = [&](const std::string& text) {
    return std::find_if(best->notes.begin(), best->notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  CHECK(at("auto: zb-h1:") < at("auto: heuristic-v under"));
}

TEST_CASE("auto: with V and one-chunk candidates at tight memory, never worse than one it printed") {
  // At 0.5p only the heuristic fits with one chunk; V-Min, V-Half and the V search fit too.
  for (const char* limit : {"0.5p", "0.75p"}) {
    INFO("limit " << limit);
    const Problem pr = test::make_problem(8, 24, 18.522, 18.086, 9.337, 0.601, 1, 0.3664, limit);
    check_auto_is_best(pr, Objective::kPeriod);
  }
  // Uneven stages and a longer T_comm.
  check_auto_is_best(uneven_stages(8, 0.3, "0.75p"), Objective::kWall);
}

TEST_CASE("auto: at 1.3p on the 1.5B model it runs a V schedule under post-validation, its period equal to its span") {
  // Ranked by span, auto once chose ZB-V under post-validation when its period there was 1254.098
  // (the verdict was relayed against its first B's), worse than the heuristic's 1225.17; with the
  // verdict following the first B's (lower.h's state_chain) the period is the span, 1189.271, below
  // the synchronous step's 1192.877. The V search (heuristic-v) polished ZB-V by swaps to 1186.761;
  // with the round-by-round V-ZB among its seeds it planned 1182.3865, with the authors' family of
  // blocks 1180.228.
  const Problem pr = test::make_problem(8, 24, 18.522, 18.086, 9.337, 0.601, 1, 0.3664, "1.3p");
  const PlanResult best = check_auto_is_best(pr, Objective::kPeriod);
  CHECK(best.solver.value == *to_quanta(1180.228));
  CHECK(best.schedule.method == "heuristic");
  CHECK(best.schedule.placement == v_shape_placement(pr.p));
  CHECK(best.schedule.optimizer == Optimizer::kPostValidation);
  std::vector<Diag> diags;
  CHECK(simulate_timeline(best.schedule, best.problem, &diags)->span == best.solver.value);
}

TEST_CASE("auto: where the interleaved search beats one chunk and the V, auto picks it") {
  // 4 stages, 4 microbatches, T_F 1, T_B 2, T_W 0.6, T_comm 0.3 at 1p: one chunk's best period is
  // 23.4, the V search's 21.9, the interleaved search's 21. (The V search took this test's earlier
  // settings over as it gained the round-by-round V-ZB and the authors' family of blocks.)
  const Problem pr = test::make_problem(4, 4, 1, 2, 0.6, 0.3, 1, 0.5, "1p");
  const PlanResult best = check_auto_is_best(pr, Objective::kPeriod);
  CHECK(best.solver.value == *to_quanta(21));
  CHECK(best.schedule.placement == interleaved_placement(pr.p, 2));
  std::vector<Diag> diags;
  auto planned_alone = [&](const std::string& method) {
    PlanOptions one;
    one.lowerings = {kPlacements.front()};
    auto planned = plan_schedule(pr, method, &diags, one);
    REQUIRE(planned);
    return planned->solver.value;
  };
  CHECK(planned_alone("heuristic") == *to_quanta(23.4));
  CHECK(planned_alone("heuristic-v") == *to_quanta(21.9));
  const std::vector<std::string> expected = {
      "auto: heuristic --placement interleaved under post-validation: interleaved (2 chunks), peak memory 4 of 4 = 1p, "
      "span 21, period 21 (period bubble rate 0.3143), wall 21.9 (wall bubble rate 0.3425)",
      "auto: best by period (optimizer included) is heuristic --placement interleaved (post-validation)",
      "heuristic --placement interleaved: each stage split into 2 chunks (per-chunk times and memory are half the "
      "stage's), placed interleaved"};
  for (const std::string& line : expected) {
    INFO(line);
    CHECK(std::find(best.notes.begin(), best.notes.end(), line) != best.notes.end());
  }
}

#ifdef ZBPP_HAVE_CBC
TEST_CASE("auto: with a time budget the ILP refines the interleaved search too, and auto takes the best printed") {
  // 3 stages, 6 microbatches at 0.75p, synchronous step, by the wall: the interleaved search's best
  // is 26; the ILP on the interleaved placement starts from it, so it is no worse (with 4 s of
  // --time-limit it reaches 23.65; how far it gets in its third of 1.5 s depends on the machine),
  // and no figure auto prints is below its pick's.
  Problem pr = test::make_problem(3, 6, 1, 1.3, 0.6, 0.1, 1, 0.4, "0.75p");
  PlanOptions options;
  options.objective = Objective::kWall;
  options.lowerings = {kPlacements[2]};
  options.time_limit = 1.5;
  std::vector<Diag> diags;
  auto best = plan_schedule(pr, "auto", &diags, options);
  INFO(format_diags(diags));
  REQUIRE(best);
  auto figure = [&](const std::string& name) {
    const std::string head = "auto: " + name + " under sync: interleaved (2 chunks), ";
    for (const std::string& note : best->notes)
      if (note.rfind(head, 0) == 0) return *to_quanta(std::stod(note.substr(note.find(", wall ") + 7)));
    FAIL("no line " << head);
    return Ticks{0};
  };
  const Ticks searched = figure("heuristic --placement interleaved"), refined = figure("ilp --placement interleaved");
  CHECK(searched == *to_quanta(26));
  CHECK(refined <= searched);
  const Ticks cost = true_cost(best->schedule, best->problem, Objective::kWall);
  CHECK(cost <= refined);
  CHECK(check_no_printed_figure_below(*best, cost, Objective::kWall) > 0);
}
#endif

TEST_CASE("auto: tries the placements the chunks and placement given leave open") {
  // Lines with figures under one optimizer placement, by the shape they print.
  auto lines = [](const Problem& pr) {
    PlanOptions options;
    options.lowerings = {kPlacements.front()};
    std::vector<Diag> diags;
    auto best = plan_schedule(pr, "auto", &diags, options);
    INFO(format_diags(diags));
    REQUIRE(best);
    std::string all;
    for (const std::string& note : best->notes)
      if (note.rfind("auto: ", 0) == 0) all += note + "\n";
    return all;
  };
  auto with = [](int chunks, const std::string& placement) {
    Problem pr = test::make_problem(4, 8, 0.5, 0.5, 0.5, 0, 0.5, 0.25, "2p", chunks);
    if (placement == "v") pr.placement = v_shape_placement(pr.p);
    if (placement == "interleaved") pr.placement = interleaved_placement(pr.p, chunks);
    return pr;
  };
  const std::string v = "under post-validation: V (2 chunks), ", il = "under post-validation: interleaved (2 chunks), ";
  {
    // Chunks given, no placement: heuristic searches the V (heuristic-v would repeat it) and the
    // interleaved search runs beside it, as does 1f1b-i.
    const std::string out = lines(with(2, ""));
    INFO(out);
    CHECK(out.find("auto: heuristic " + v) != std::string::npos);
    CHECK(out.find("auto: heuristic --placement interleaved " + il) != std::string::npos);
    CHECK(out.find("auto: 1f1b-i " + il) != std::string::npos);
    CHECK(out.find("auto: heuristic-v") == std::string::npos);
  }
  {
    const std::string out = lines(with(2, "v"));
    INFO(out);
    CHECK(out.find("auto: heuristic " + v) != std::string::npos);
    CHECK(out.find("interleaved (2 chunks)") == std::string::npos);
    CHECK(out.find("auto: 1f1b-i left out: method 1f1b-i places chunks its own way") != std::string::npos);
  }
  {
    const std::string out = lines(with(2, "interleaved"));
    INFO(out);
    CHECK(out.find("auto: heuristic " + il) != std::string::npos);
    CHECK(out.find("auto: 1f1b-i " + il) != std::string::npos);
    CHECK(out.find("V (2 chunks)") == std::string::npos);
    CHECK(out.find("--placement interleaved") == std::string::npos);  // heuristic searches it already
  }
  {
    const std::string out = lines(with(3, ""));
    INFO(out);
    CHECK(out.find("auto: heuristic under post-validation: interleaved (3 chunks), ") != std::string::npos);
    CHECK(out.find("(2 chunks)") == std::string::npos);
  }
}

TEST_CASE("heuristic and ilp: the grid ranks by the objective planned for, optimizer included (issue 20)") {
  // 1.5B, p=8, m=24 at 1.3p. Ranked by the span, the heuristic's best costs 1266.046 per iteration
  // with a synchronous step and 1267.248 post-validating at the start; ranked by what each placement
  // really costs (the makespan under sync, the true period when post-validating first), 1246.856 and
  // 1251.664. Post-validation at the first B keeps the span's pick, whose period it is.
  const Problem pr = test::make_problem(8, 24, 18.522, 18.086, 9.337, 0.601, 1, 0.3664, "1.3p");
  auto planned_for = [&](const std::string& method, const LowerOptions& placement, Objective objective) {
    PlanOptions options;
    options.objective = objective;
    options.lowerings = {placement};
    options.time_limit = 2;
    std::vector<Diag> diags;
    auto planned = plan_schedule(pr, method, &diags, options);
    INFO(format_diags(diags));
    REQUIRE(planned);
    return *planned;
  };
  auto by_span = [&](const LowerOptions& placement) {  // the span's pick, lowered for `placement`
    std::vector<Diag> diags;
    auto planned = plan_schedule(pr, "heuristic", &diags);
    REQUIRE(planned);
    REQUIRE(lower_planned(&*planned, &diags, placement));
    return *planned;
  };
  const LowerOptions sync = kPlacements[2], held = kPlacements[1], speculate = kPlacements[0];
  PlanResult s = planned_for("heuristic", sync, Objective::kPeriod);
  CHECK(true_cost(s.schedule, pr, Objective::kPeriod) == *to_quanta(1246.856));
  CHECK(true_cost(by_span(sync).schedule, pr, Objective::kPeriod) == *to_quanta(1266.046));
  CHECK(s.notes.at(0).find("best by makespan: ") != std::string::npos);
  PlanResult h = planned_for("heuristic", held, Objective::kPeriod);
  CHECK(true_cost(h.schedule, pr, Objective::kPeriod) == *to_quanta(1251.664));
  CHECK(true_cost(by_span(held).schedule, pr, Objective::kPeriod) == *to_quanta(1267.248));
  CHECK(h.notes.at(0).find("best by period (lowered: post-validation, validated at the start): ") != std::string::npos);
  PlanResult p = planned_for("heuristic", speculate, Objective::kPeriod);
  CHECK(true_cost(p.schedule, pr, Objective::kPeriod) == *to_quanta(1225.17));
  CHECK(p.notes.at(0).find("best by span: ") != std::string::npos);
#ifdef ZBPP_HAVE_CBC
  // The ILP keeps a schedule only if its true cost is no worse: never above the heuristic's.
  for (const LowerOptions& placement : kPlacements)
    for (Objective objective : {Objective::kPeriod, Objective::kWall}) {
      INFO(placement.optimizer << (placement.post_validation_at == PostValidationAt::kStart ? " (start)" : "") << ", "
                               << objective_name(objective));
      PlanResult ilp = planned_for("ilp", placement, objective);
      PlanResult heuristic = planned_for("heuristic", placement, objective);
      CHECK(true_cost(ilp.schedule, pr, objective) <= true_cost(heuristic.schedule, pr, objective));
      CHECK(ilp.solver.value == true_cost(ilp.schedule, pr, objective));
      CHECK(from_quanta(ilp.solver.value) >= ilp.solver.best_bound - 1e-6);
    }
#endif
}

TEST_CASE("heuristic: with uneven stages its pick is the best candidate by the true period") {
  // Uneven stages overlap iterations differently from their one-iteration span
  // (search_heuristic_test), so the grid is ranked by each candidate lowered and timed: here the
  // span's pick would run at a period of 42.41, the period's at 41.8.
  ProblemInput in;
  in.p = 5;
  in.m = 12;
  in.t_f = {1.04, 1.32, 0.88, 0.84, 0.70};
  in.t_b = {0.95, 0.70, 1.66, 1.57, 1.38};
  in.t_w = {0.95, 0.39, 0.87, 0.34, 0.50};
  in.t_comm = {0.13};
  in.mem_b = {1};
  in.mem_w = {0.5};
  in.mem_limit = "2p";
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  PlanOptions options;
  options.lowerings = {kPlacements[0]};
  auto planned = plan_schedule(*pr, "heuristic", &diags, options);
  REQUIRE(planned);
  CHECK(planned->notes.at(0).find("best by period (lowered: post-validation): ") != std::string::npos);
  const Ticks picked = true_cost(planned->schedule, *pr, Objective::kPeriod);
  CHECK(picked == *to_quanta(41.8));
  auto by_span = plan_schedule(*pr, "heuristic", &diags);
  REQUIRE(by_span);
  CHECK(true_cost(lower_comms(by_span->schedule, kPlacements[0]), *pr, Objective::kPeriod) == *to_quanta(42.41));
  int candidates = 0;
  for (const Schedule& s : test::heuristic_grid(*pr)) {
    CHECK(picked <= true_cost(lower_comms(s, kPlacements[0]), *pr, Objective::kPeriod));
    ++candidates;
  }
  CHECK(candidates > 0);
}

#ifdef ZBPP_HAVE_CBC
TEST_CASE("ilp with chunks, and ilp-v: refine the V search (or 1f1b-i, interleaved), never worse by the true cost") {
  const Problem v = test::make_problem(3, 6, 1.0, 1.1, 0.6, 0.05, 1, 0.4, "0.75p", 2);
  PlanOptions options;
  options.lowerings = {kPlacements[0]};
  options.time_limit = 1;
  auto plan = [&](const Problem& pr, const std::string& method, std::vector<Diag>* diags) {
    return plan_schedule(pr, method, diags, options);
  };
  std::vector<Diag> diags;
  auto ilp = plan(v, "ilp", &diags);
  auto heuristic = plan(v, "heuristic", &diags);
  INFO(format_diags(diags));
  REQUIRE(ilp);
  REQUIRE(heuristic);
  CHECK(ilp->schedule.placement == v_shape_placement(3));
  CHECK(true_cost(ilp->schedule, v, Objective::kPeriod) <= true_cost(heuristic->schedule, v, Objective::kPeriod));
  CHECK(ilp->solver.value == true_cost(ilp->schedule, v, Objective::kPeriod));
  CHECK(from_quanta(ilp->solver.value) >= ilp->solver.best_bound - 1e-6);
  CHECK(ilp->solver.status != SolveStatus::kNotRun);
  auto from = [](const PlanResult& r, const std::string& what) {
    return std::any_of(r.notes.begin(), r.notes.end(),
                       [&](const std::string& n) { return n.find("warm-started from " + what + ": ") != std::string::npos; });
  };
  CHECK(from(*ilp, "the V search"));
  // ilp-v splits a one-chunk problem's stages in halves, as heuristic-v, and refines its pick.
  const Problem whole = test::make_problem(3, 6, 2.0, 2.2, 1.2, 0.05, 2, 0.8, "0.75p");
  auto split = plan(whole, "ilp-v", &diags);
  auto searched = plan(whole, "heuristic-v", &diags);
  REQUIRE(split);
  REQUIRE(searched);
  CHECK(split->problem.chunks == 2);
  CHECK(split->schedule.method == "ilp-v");
  CHECK(from(*split, "the V search"));
  CHECK(true_cost(split->schedule, split->problem, Objective::kPeriod) <=
        true_cost(searched->schedule, searched->problem, Objective::kPeriod));
  // The interleaved placement starts from the interleaved search (1F1B-I among its seeds), so it
  // plans where 1F1B-I cannot (m not a multiple of p) too.
  Problem interleaved = v;
  interleaved.placement = interleaved_placement(3, 2);
  interleaved.mem_limit.reset();
  auto megatron = plan(interleaved, "ilp", &diags);
  REQUIRE(megatron);
  CHECK(megatron->schedule.placement == interleaved_placement(3, 2));
  CHECK(from(*megatron, "the interleaved search"));
  Problem odd_m = test::make_problem(3, 4, 1.0, 1.1, 0.6, 0.05, 1, 0.4, "", 2);
  odd_m.placement = interleaved_placement(3, 2);
  auto odd = plan(odd_m, "ilp", &diags);
  REQUIRE(odd);
  CHECK(from(*odd, "the interleaved search"));
  // What it cannot start from is refused, saying why and what to do.
  auto refusal = [&](const Problem& pr) {
    std::vector<Diag> why;
    CHECK_FALSE(plan(pr, "ilp", &why));
    REQUIRE(!why.empty());
    return format_diag(why[0]);
  };
  Problem odd_placement = interleaved;
  odd_placement.placement = {{0, 1}, {2, 3}, {4, 5}};
  CHECK(refusal(odd_placement) ==
        "method ilp searches the V placement (2 chunks, stage r holding virtual stages r and 2p-1-r) or the "
        "interleaved one (stage s holding s, s+p, ...); the problem's placement is neither: give --placement v or "
        "interleaved");
}
#endif

TEST_CASE("lower_planned: timed, the iterations' replay stands for the validation's: same plan, notes, figures") {
  // Small shapes, and one big enough (p * m >= 1024) to be timed beside its checks.
  std::vector<std::pair<int, int>> shapes = {{16, 64}};
  for (int p : {2, 3, 4})
    for (int m : {1, 2, 3, 5, 8}) shapes.push_back({p, m});
  int plans = 0;
  for (const auto& [p, m] : shapes)
      for (const std::string method : {"1f1b", "zb-h1", "zb-h2", "1f1b-i", "zb-v", "dualpipe-v", "v-min", "v-half"})
        for (const LowerOptions& placement : kPlacements) {
          const Problem pr = test::make_problem(p, m, 1, 1.5, 0.5, 0.25, 1, 0.5, "", method == "1f1b-i" ? 2 : 1);
          std::vector<Diag> diags;
          auto planned = plan_schedule(pr, method, &diags);  // compute only
          if (!planned) continue;
          INFO(method << " p=" << p << " m=" << m << " under " << placement.optimizer
                      << (placement.post_validation_at == PostValidationAt::kStart ? " (start)" : ""));
          PlanResult alone = *planned, timed = *planned;
          std::vector<Diag> why_alone, why_timed;
          IterationOptions figures;
          figures.op_times = false;
          const bool lowered = lower_planned(&alone, &why_alone, placement);
          REQUIRE(lowered == lower_planned(&timed, &why_timed, placement, &figures));
          CHECK(format_diags(why_alone) == format_diags(why_timed));
          if (!lowered) continue;
          CHECK(alone.schedule.stages == timed.schedule.stages);
          CHECK(alone.notes == timed.notes);
          CHECK_FALSE(alone.iterations);
          auto it = simulate_iterations(alone.schedule, alone.problem, figures, &diags);
          REQUIRE(it);
          REQUIRE(timed.iterations);
          CHECK(std::tie(timed.iterations->period, timed.iterations->wall, timed.iterations->first.span) ==
                std::tie(it->period, it->wall, it->first.span));
          ++plans;
        }
  CHECK(plans >= 200);
}

TEST_CASE("interleaved search: the searched schedule lowers (its stages take each link's inputs in order)") {
  // 1.5B p=8 m=24 at 1p, each chunk half a stage: the search once returned a schedule whose stage 1
  // ran F15:1 before F17, whose input stage 0 sends first, and lowering failed.
  Problem pr = test::make_problem(8, 24, 9.261, 9.043, 4.6685, 0.601, 0.5, 0.25, "1p", 2);
  pr.placement = interleaved_placement(8, 2);
  std::vector<Diag> diags;
  auto planned = plan_schedule(pr, "heuristic", &diags);
  INFO(format_diags(diags));
  REQUIRE(planned);
  CHECK(validate_message_order(planned->schedule).empty());
  REQUIRE(lower_planned(&*planned, &diags));
  CHECK(validate(planned->schedule, planned->problem).empty());
}

}  // namespace
}  // namespace zbpp
