// --method auto (see pipeline.h): every method, and the interleaved placement where none was
// given, each under every optimizer placement not fixed; ranked by the true objective.
#include <algorithm>
#include <cstdio>
#include <future>
#include <numeric>

#include "core/simulate.h"
#include "planner/methods.h"
#include "planner/pipeline_internal.h"

namespace zbpp {

namespace {

// "period 1189.271 (period bubble rate 0.0728)".
std::string with_bubble(Cost cost, Ticks value, double bubble) {
  return std::string(cost_name(cost)) + " " + format_quanta(value) + " (" + cost_name(cost) + " bubble rate " +
         format_fixed(bubble, 4) + ")";
}

// "V (2 chunks), peak memory 8 of 8 = 1p": a candidate's placement and its largest stage peak
// against the limit, in the problem's memory unit (a split problem keeps the limit as it was).
std::string shape_and_memory(const PlanResult& result, const Timeline& t) {
  const Problem& pr = result.problem;
  std::string shape = pr.chunks == 1 ? "1 chunk"
                      : result.schedule.placement == v_shape_placement(pr.p)
                          ? "V (2 chunks)"
                          : "interleaved (" + std::to_string(pr.chunks) + " chunks)";
  const Mem peak = t.peak_memory.empty() ? 0 : *std::max_element(t.peak_memory.begin(), t.peak_memory.end());
  return shape + ", peak memory " + format_quanta(peak) +
         (pr.limited() ? " of " + mem_limit_text(pr) : std::string(" (no limit)"));
}

// "; time limit: ... stopped early (...)" where the time limit cut the candidate's search, else "".
std::string cut_of(const PlanResult& result) {
  for (const std::string& note : result.notes)
    if (note.rfind(kTimeLimitNote, 0) == 0) return "; " + note;
  return "";
}

// One of auto's candidates: a method on the problem as given, or on it placed interleaved.
struct AutoCandidate {
  std::string name;    // as auto's notes name it
  std::string method;  // what runs
  Problem problem;
  bool split = false;        // auto split each stage into 2 chunks
  bool search_once = false;  // searched once (on a thread of its own), ranked for the first lowering,
                             // then lowered under each
  bool generate_once = false;  // a generator: its order does not depend on the lowering
};

// auto's candidates in the order it prints them: every method but the ILPs without a time budget,
// and the interleaved placement (1f1b-i and the interleaved search) where the user fixed no
// placement: a one-chunk problem split into 2 chunks, as the V methods split it. The V search
// (heuristic-v) and the interleaved search cost most of auto's time, so each runs once, not once per
// lowering (pipeline_test checks that searching again for another lowering finds nothing better).
std::vector<AutoCandidate> auto_candidates(const Problem& pr, const PlanOptions& options,
                                           std::vector<std::string>* skipped) {
  // Methods left out, by why: a line each in auto's notes.
  std::vector<std::pair<std::string, std::string>> left_out;  // why, methods
  auto leave_out = [&](const std::string& method, const std::string& why) {
    for (auto& [reason, names] : left_out)
      if (reason == why) {
        names += ", " + method;
        return;
      }
    left_out.push_back({why, method});
  };
  std::optional<Problem> interleaved;
  if (pr.chunks == 1) interleaved = split_into_chunks(pr, 2);
  else if (pr.chunks == 2 && pr.placement.empty()) interleaved = pr;  // else heuristic searches what was asked
  if (interleaved) interleaved->placement = interleaved_placement(pr.p, 2);
  if (interleaved && interleaved->placement == v_shape_placement(pr.p)) interleaved.reset();  // p = 1: the V's
  std::vector<AutoCandidate> candidates;
  for (const Method& m : methods()) {
    const std::string method = m.name;
    if (m.runs == Runs::kAuto) continue;
    if (m.runs == Runs::kSearchIlp && options.time_limit <= 0) {
      leave_out(method, "the ILP runs only with a time budget: give --time-limit SECONDS");
      continue;
    }
    // With chunks given, heuristic and ilp search the V or the placement asked for.
    if (m.placing == Placing::kV && m.runs != Runs::kGenerator && pr.chunks > 1) continue;
    const bool split = m.placing == Placing::kInterleaved && pr.chunks == 1;
    if (split && !interleaved) continue;
    if (options.single_chunk && !plans_one_chunk(m)) {
      leave_out(method, "this plan is of one chunk per stage (a partition's; the V and interleaved shapes are searched apart)");
      continue;
    }
    const bool v_search = m.placing == Placing::kV && m.runs == Runs::kSearch;
    candidates.push_back({method, method, split ? *interleaved : pr, split, v_search, m.runs == Runs::kGenerator});
  }
  for (const auto& [why, names] : left_out) skipped->push_back("auto: " + names + ": left out: " + why);
  if (options.single_chunk) interleaved.reset();
  // The searches that take any placement search the interleaved one too; the ILP refines the
  // interleaved search's best as it refines the others' (with a time budget). Like ilp on one
  // chunk it runs its search again for each lowering, outside the time limit.
  for (const Method& m : methods()) {
    if (!interleaved || m.placing != Placing::kAsGiven) continue;
    if (m.runs == Runs::kSearchIlp && options.time_limit <= 0) continue;
    candidates.push_back({std::string(m.name) + " --placement interleaved", m.name, *interleaved, pr.chunks == 1,
                          m.runs == Runs::kSearch});
  }
  return candidates;
}

// The kept result: the least cost; ties go to the earlier candidate (and lowering), numbered in
// the candidates' order, in whatever order they were lowered.
struct Pick {
  std::optional<PlanResult> result;
  Ticks cost = -1;
  size_t at = 0;
  std::string method;

  void consider(PlanResult&& r, Ticks c, const std::string& name, size_t where) {
    if (cost >= 0 && (c > cost || (c == cost && where > at))) return;
    cost = c;
    at = where;
    method = name;
    result = std::move(r);
  }
};

// What one candidate under one lowering gave: its line in auto's notes, and its result with the
// cost it is ranked by, or why it failed.
struct Lowered {
  std::string note;
  std::optional<PlanResult> result;
  Ticks cost = -1;
  std::string ranked_name;  // as the pick names it
  std::string failure;      // where it failed: "does not fit: ..." or "left out: ..."
};

// A searched or generated candidate (`searched`, else planned here) under `lowering` (none: a
// compute-only plan ranked by `compute`), with its share of the ILPs' time.
Lowered plan_candidate(const AutoCandidate& candidate, const std::optional<LowerOptions>& lowering,
                       const std::optional<Generated>& searched, const std::vector<Diag>& search_failed,
                       const PlanOptions& options, const Deadline& deadline, double ilp_seconds, Cost compute) {
  const std::string& method = candidate.method;
  PlanOptions one = options;
  one.deadline = deadline;
  one.lowerings.clear();
  if (lowering) one.lowerings.push_back(*lowering);
  one.time_limit = ilp_seconds;
  std::vector<Diag> why = search_failed;
  const bool once = candidate.search_once || candidate.generate_once;
  auto result = !once    ? plan_schedule(candidate.problem, method, &why, one)
                : searched ? validate_and_lower(*searched, &why, one)
                           : std::nullopt;
  const std::string name = lowering ? lowering_name(*lowering) : "";
  const std::string head = "auto: " + candidate.name + (lowering ? " under " + name : "") + ": ";
  Lowered out;
  if (!result) {
    // The first finding says enough (a header line, when there is one, comes before it). A
    // schedule over the memory limit does not fit; a method the problem's shape rules out is
    // left out.
    const bool over = why.size() > 1 && why[0].message == "the " + method + " schedule does not fit this problem:";
    out.failure = (over ? "does not fit: " : "left out: ") +
                  (why.empty() ? std::string("failed") : format_diag(why[why.size() > 1 ? 1 : 0]));
    out.note = head + out.failure;
    return out;
  }
  if (candidate.split) result->notes.insert(result->notes.begin(), split_note(candidate.name) + ", placed interleaved");
  std::vector<Diag> unused;
  auto t = simulate_timeline(result->schedule, result->problem, &unused);
  const std::string shape = shape_and_memory(*result, *t) + ", ";
  if (!lowering) {
    out.note = head + shape + with_bubble(Cost::kSpan, t->span, t->span_bubble_rate) + ", " +
               with_bubble(Cost::kMakespan, t->makespan, bubble_rate_of(result->problem, t->makespan)) +
               cut_of(*result);
    out.cost = cost_of(*t, compute);
    out.ranked_name = candidate.name;
  } else {
    const IterationTimeline& it = *result->iterations;  // plan_schedule timed the lowered plan
    out.note = head + shape + "span " + format_quanta(t->span) + ", " +
               with_bubble(Cost::kPeriod, it.period, it.period_bubble_rate) + ", " +
               with_bubble(Cost::kWall, it.wall, it.wall_bubble_rate) + cut_of(*result);
    out.cost = true_cost_in(it, options.objective);
    out.ranked_name = candidate.name + " (" + name + ")";
  }
  out.result = std::move(result);
  return out;
}

// Under a time limit the searches and generators stop early enough for every candidate to be
// lowered and timed once within it: a tenth of the time (0.1 to 2 s) and 150 ns per op and
// candidate, at most half the time. (At p = 128, m = 1024 a lowering takes about twice that: the
// candidates left when the limit passes are left out, in plan_auto.)
Deadline searches_deadline(const Problem& pr, const Deadline& limit, size_t candidates) {
  if (!limit.at) return limit;
  const double left = limit.left();
  const double ops = 3.0 * pr.p * pr.m * std::max(pr.chunks, 2);
  const double lowering = std::clamp(0.1 * left, 0.1, 2.0) + 150e-9 * ops * static_cast<double>(candidates);
  return limit.within(std::max(0.0, left - std::min(lowering, left / 2)));
}

}  // namespace

// Runs every candidate (each under every lowering given); keeps the smallest true cost, or with no
// lowering the smallest compute cost that stands for the objective. Each candidate's figures
// become a note, so the pick can be checked against every one printed.
std::optional<PlanResult> plan_auto(const Problem& pr, std::vector<Diag>* diags, const PlanOptions& options) {
  Pick best;
  std::vector<std::string> notes;
  const Cost compute = ranking_cost(options);  // for compute-only plans
  std::vector<std::optional<LowerOptions>> lowerings(options.lowerings.begin(), options.lowerings.end());
  if (lowerings.empty()) lowerings.push_back(std::nullopt);
  const std::vector<AutoCandidate> candidates = auto_candidates(pr, options, &notes);
  const size_t ilps = std::count_if(candidates.begin(), candidates.end(),
                                    [](const AutoCandidate& c) { return is_ilp(c.method); });
  // The ILP's time limit is auto's in all, shared among the placements it plans for and the ILPs
  // it runs (ilp, ilp-v on a one-chunk problem, ilp on the interleaved placement).
  const double ilp_seconds = options.time_limit / static_cast<double>(lowerings.size() * std::max<size_t>(ilps, 1));
  // A search run once starts now on a thread of its own, beside the candidates before it, so it
  // adds little to auto's time where a core is free. Its result does not depend on when it runs.
  struct Search {
    std::optional<Generated> generated;
    std::vector<Diag> failed;
  };
  PlanOptions first = options;
  first.lowerings.resize(std::min<size_t>(first.lowerings.size(), 1));
  first.deadline = searches_deadline(pr, options.deadline, candidates.size());
  std::vector<std::future<Search>> searches(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].search_once)
      searches[i] = std::async(std::launch::async, [&candidate = candidates[i], &first] {
        Search search;
        search.generated = generate(candidate.problem, candidate.method, &search.failed, first);
        return search;
      });
  // Under a time limit the searched candidates are lowered first, as their searches end (they are
  // usually the best), then the others, each left out once the limit itself has passed and a
  // result is kept: the call ends within about one lowering of its limit (at p = 128, m = 1024 a
  // lowering takes 0.1-0.3 s). Notes and ties keep the candidates' order.
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (options.deadline.at)
    std::stable_partition(order.begin(), order.end(), [&](size_t i) { return candidates[i].search_once; });
  std::vector<std::vector<std::string>> notes_of(candidates.size());
  ProgressTicker ticker(options.progress);
  const std::string ranked_by = options.lowerings.empty() ? cost_name(compute) : objective_name(options.objective);
  size_t done = 0;
  for (const size_t i : order) {
    ticker.tick([&](double seconds) {
      return "auto: " + std::to_string(done) + " of " + std::to_string(candidates.size()) + " candidates planned" +
             (best.result ? ", best so far " + best.method + ", " + ranked_by + " " + format_quanta(best.cost) : "") +
             " (" + std::to_string(static_cast<int>(seconds)) + " s)";
    });
    ++done;
    const AutoCandidate& candidate = candidates[i];
    std::vector<std::string>& parts = notes_of[i];
    std::vector<std::string> failures;  // why each lowering failed, where it did
    if (!candidate.search_once && best.result && options.deadline.passed()) {
      parts.push_back("auto: " + candidate.name + ": left out: the time limit passed before its turn");
      continue;
    }
    std::optional<Generated> searched;  // a search run once
    std::vector<Diag> search_failed;
    if (candidate.generate_once) searched = generate(candidate.problem, candidate.method, &search_failed, first);
    if (candidate.search_once) {
      Search search = searches[i].get();
      searched = std::move(search.generated);
      search_failed = std::move(search.failed);
      if (searched && lowerings.size() > 1)
        parts.push_back("auto: " + candidate.name + ": searched once, ranked for " + lowering_name(*lowerings[0]) +
                        ", and lowered under each optimizer placement");
    }
    for (size_t l = 0; l < lowerings.size(); ++l) {
      const auto& lowering = lowerings[l];
      // Once the searches' share of the time limit is spent, each candidate is still lowered once
      // (its figures are then known), not under every optimizer placement; nor does an ILP start
      // (building its model alone takes seconds at p = 64).
      if ((l > 0 || is_ilp(candidate.method)) && first.deadline.passed()) {
        parts.push_back("auto: " + candidate.name + (lowering ? " under " + lowering_name(*lowering) : "") +
                        ": left out: the time limit passed");
        continue;
      }
      Lowered one =
          plan_candidate(candidate, lowering, searched, search_failed, options, first.deadline, ilp_seconds, compute);
      parts.push_back(one.note);
      if (!one.result) failures.push_back(one.failure);
      else best.consider(std::move(*one.result), one.cost, one.ranked_name, i * lowerings.size() + l);
    }
    // A method that fits under no lowering, for the same reason each time, says so once.
    if (failures.size() == lowerings.size() &&
        std::all_of(failures.begin(), failures.end(), [&](const std::string& f) { return f == failures[0]; }))
      parts = {"auto: " + candidate.name + " " + failures[0]};
  }
  for (const auto& parts : notes_of) notes.insert(notes.end(), parts.begin(), parts.end());
  if (!best.result) {
    diags->push_back({"", "", -1, -1, "", "no method fits this problem:"});
    for (const auto& n : notes) diags->push_back({"", "", -1, -1, "", n});
    return std::nullopt;
  }
  const bool compute_only = options.lowerings.empty();
  notes.push_back("auto: best by " + std::string(compute_only ? cost_name(compute) : objective_name(options.objective)) +
                  (compute_only ? " (compute ops only)" : " (optimizer included)") + " is " + best.method);
  best.result->notes.insert(best.result->notes.begin(), notes.begin(), notes.end());
  return std::move(best.result);
}

}  // namespace zbpp
