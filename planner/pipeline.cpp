// The planner's pass list (see pipeline.h).
#include "planner/pipeline.h"

#include <cmath>
#include <cstdio>

#include "planner/gen_baseline.h"
#include "planner/lower.h"
#include "planner/search_heuristic.h"
#ifdef ZBPP_HAVE_CBC
#include "planner/refine_ilp.h"
#endif
#include "planner/simulate.h"
#include "planner/validate.h"

namespace zbpp {

const std::vector<std::string>& plan_methods() {
  static const std::vector<std::string> methods = {"1f1b", "1f1b-i", "zb-h1", "zb-h2", "heuristic", "ilp", "zb-v", "auto"};
  return methods;
}

namespace {

// A method that runs a fixed placement refuses a problem that asks for another.
bool check_shape(const Problem& pr, const std::string& method, int chunks_needed, std::vector<Diag>* diags) {
  if (chunks_needed > 0 && pr.chunks != chunks_needed) {
    diags->push_back({"", "", -1, -1, "", "method " + method + " runs " + std::to_string(chunks_needed) +
                                              " chunk(s) per stage, but the problem has chunks = " +
                                              std::to_string(pr.chunks)});
    return false;
  }
  return true;
}

// The optimizer placement a lowering stands for, as the notes name it.
std::string lowering_name(const LowerOptions& l) {
  if (l.optimizer == kOptimizerSync) return "sync";
  return l.validate_at == ValidateAt::kStart ? "post-validation, validated at the start" : "post-validation";
}

// Runs every method; keeps the smallest cost by the objective. With lowerings, a candidate's cost
// is its true one: each lowering of it timed over iterations back to back, optimizer included.
// Each candidate's outcome becomes a note.
std::optional<PlanResult> plan_auto(const Problem& pr, std::vector<Diag>* diags, const PlanOptions& options) {
  std::optional<PlanResult> best;
  Ticks best_cost = -1;
  std::vector<std::string> notes;
  std::string best_method;
  auto consider = [&](PlanResult&& result, Ticks cost, const std::string& method) {
    if (best_cost >= 0 && cost >= best_cost) return;
    best_cost = cost;
    best_method = method;
    best = std::move(result);
  };
  for (const auto& method : plan_methods()) {
    if (method == "auto") continue;
    if (method == "ilp" && options.time_limit <= 0) continue;  // the ILP runs only with a time budget
    std::vector<Diag> why;
    auto result = plan_schedule(pr, method, &why, options);
    if (!result) {
      // The first finding says enough (a header line, when there is one, comes before it).
      std::string reason = why.empty() ? "failed" : format_diag(why[why.size() > 1 ? 1 : 0]);
      notes.push_back("auto: " + method + " does not fit: " + reason);
      continue;
    }
    std::vector<Diag> unused;
    auto t = simulate_timeline(result->schedule, result->problem, &unused);
    char line[200];
    std::snprintf(line, sizeof line, "auto: %s span %s, bubble rate %.4f", method.c_str(),
                  format_quanta(t->span).c_str(), t->bubble_rate);
    std::string note = line;
    if (options.lowerings.empty()) {
      notes.push_back(note + ", wall " + format_quanta(t->makespan));
      consider(std::move(*result), cost_of(*t, options.objective), method);
      continue;
    }
    for (const LowerOptions& lowering : options.lowerings) {
      PlanResult lowered = *result;
      std::vector<Diag> failed;
      std::optional<IterationTimeline> it;
      IterationOptions figures = options.iterations;
      figures.op_times = false;  // candidates are ranked by their figures
      if (lower_planned(&lowered, &failed, lowering))
        it = simulate_iterations(lowered.schedule, lowered.problem, figures, &failed);
      if (!it) {
        notes.push_back(note + "; " + lowering_name(lowering) + ": " +
                        (failed.empty() ? "failed" : failed.back().message));
        continue;
      }
      std::snprintf(line, sizeof line, "; %s: period %s (bubble %.4f), wall %s", lowering_name(lowering).c_str(),
                    format_quanta(it->period).c_str(), it->period_bubble_rate, format_quanta(it->wall).c_str());
      note += line;
      consider(std::move(lowered), options.objective == Objective::kWall ? it->wall : it->period,
               method + " (" + lowering_name(lowering) + ")");
    }
    notes.push_back(note);
  }
  if (!best) {
    diags->push_back({"", "", -1, -1, "", "no method fits this problem:"});
    for (const auto& n : notes) diags->push_back({"", "", -1, -1, "", n});
    return std::nullopt;
  }
  notes.push_back("auto: best by " + std::string(options.objective == Objective::kWall ? "wall clock" : "period") +
                  (options.lowerings.empty() ? " (compute ops only)" : " (optimizer included)") + " is " +
                  best_method);
  best->notes.insert(best->notes.begin(), notes.begin(), notes.end());
  return best;
}

}  // namespace

Problem split_into_chunks(const Problem& pr, int chunks) {
  Problem out = pr;
  out.chunks = chunks;
  out.placement.clear();
  // Times to the nearest tick; memory rounded down, so the chunks never need more than the stage.
  auto divide = [chunks](std::vector<std::int64_t>& values, bool nearest) {
    for (auto& v : values) v = (v + (nearest ? chunks / 2 : 0)) / chunks;
  };
  divide(out.t_f, true);
  divide(out.t_b, true);
  divide(out.t_w, true);
  divide(out.mem_b, false);
  divide(out.mem_w, false);
  return out;
}

std::optional<PlanResult> plan_schedule(const Problem& original, const std::string& method, std::vector<Diag>* diags,
                                        const PlanOptions& options) {
  if (method == "auto") return plan_auto(original, diags, options);
  std::optional<Schedule> s;
  std::vector<std::string> notes;
  std::optional<SolverReport> ilp_report;
  Problem pr = original;
  if (method == "zb-v" && pr.chunks == 1) {
    pr = split_into_chunks(original, 2);
    notes.push_back("zb-v: each stage split into 2 chunks (per-chunk times and memory are half the stage's)");
  }
  if (method == "zb-v") {
    if (!check_shape(pr, method, 2, diags)) return std::nullopt;
    s = generate_zb_v(pr);
  } else if (method == "heuristic" || method == "ilp") {
    if (!check_shape(pr, method, 1, diags)) return std::nullopt;
    auto found = search_heuristic(pr, diags, 0, options.objective);
    if (!found) return std::nullopt;
    s = std::move(found->schedule);
    notes.push_back("search: " + std::to_string(found->feasible) + " of " + std::to_string(found->candidates) +
                    " candidates fit the memory limit (8 switch combinations, 3 handcrafted seeds); best by " +
                    objective_name(options.objective) + ": " + found->winner);
    if (method == "ilp") {
#ifdef ZBPP_HAVE_CBC
      IlpOptions ilp;
      ilp.objective = options.objective;
      ilp.seconds = options.time_limit > 0 ? options.time_limit : 10;
      ilp.threads = options.threads;
      if (options.progress)
        ilp.progress = [&](const IlpProgress& at) {
          char line[200];
          double cost = from_quanta(at.incumbent);
          std::snprintf(line, sizeof line, "ilp: %6.1f s  models %4d  incumbent %.6f (bubble %.4f)  bound %.6f  gap %.4f %%",
                        at.seconds, at.windows, cost, bubble_rate_of_span(pr, at.incumbent), at.bound,
                        100 * relative_gap(at.incumbent, at.bound * kQuantaPerUnit));
          options.progress(line);
        };
      auto refined = refine_ilp(pr, *s, ilp, diags);
      if (!refined) return std::nullopt;
      notes.push_back("ilp (CBC, " + format_quanta(*to_quanta(ilp.seconds)) +
                      " s limit, minimising the " + (options.objective == Objective::kWall ? "wall clock" : "span") +
                      "), warm-started from the heuristic: " + refined->summary());
      // The MILP minimises the plan's objective and never returns a schedule worse than its warm
      // start by it, so its schedule replaces the heuristic's; its report carries CBC's bound.
      ilp_report = bound_report(pr, refined->cost, options.objective, s->placement);
      if (refined->lower_bound > ilp_report->best_bound) {
        ilp_report->best_bound = refined->lower_bound;
        ilp_report->bound_source = "cbc";
      }
      ilp_report->gap = relative_gap(refined->cost, ilp_report->best_bound * kQuantaPerUnit);
      ilp_report->bubble_rate_bound =
          bubble_rate_of_span(pr, static_cast<Ticks>(std::llround(ilp_report->best_bound * kQuantaPerUnit)));
      ilp_report->status = refined->status;
      ilp_report->seconds = refined->seconds;
      ilp_report->nodes = refined->nodes;
      s = std::move(refined->schedule);
#else
      diags->push_back({"", "", -1, -1, "", "the ilp method needs CBC: install coinor-libcbc-dev and rebuild"});
      return std::nullopt;
#endif
    }
  } else if (method == "1f1b" || method == "zb-h1" || method == "zb-h2") {
    if (!check_shape(pr, method, 1, diags)) return std::nullopt;
    s = method == "1f1b" ? generate_1f1b(pr) : method == "zb-h1" ? generate_zb_h1(pr) : generate_zb_h2(pr);
  } else if (method == "1f1b-i") {
    if (pr.chunks < 2) {
      diags->push_back({"", "", -1, -1, "", "1f1b-i interleaves chunks: give --chunks V with V >= 2"});
      return std::nullopt;
    }
    std::string err;
    s = generate_1f1b_interleaved(pr, &err);
    if (!s) {
      diags->push_back({"", "", -1, -1, "", err});
      return std::nullopt;
    }
  } else {
    std::string known;
    for (const auto& m : plan_methods()) known += (known.empty() ? "" : ", ") + m;
    diags->push_back({"", "", -1, -1, "", "unknown method '" + method + "' (known: " + known + ")"});
    return std::nullopt;
  }
  if (!pr.placement.empty() && pr.placement != s->placement) {
    diags->push_back({"", "", -1, -1, "", "method " + method + " places chunks its own way; drop 'placement' from the problem"});
    return std::nullopt;
  }
  std::optional<Timeline> timeline;
  auto found = validate(*s, pr, "", &timeline);
  if (!found.empty()) {
    diags->push_back({"", "", -1, -1, "", "the " + method + " schedule does not fit this problem:"});
    diags->insert(diags->end(), found.begin(), found.end());
    return std::nullopt;
  }
  // Every plan says how far from optimal it can be: its cost by the objective (span or wall
  // clock) against the certified bounds.
  SolverReport report = ilp_report ? *ilp_report
                                   : bound_report(pr, cost_of(*timeline, options.objective), options.objective,
                                                  s->placement);
  char line[200];
  std::snprintf(line, sizeof line, "bound: %s >= %s (%s), bubble rate >= %.4f, gap %.4f %% (%s)",
                report.cost == Objective::kWall ? "wall clock" : "span",
                format_quanta(static_cast<Ticks>(std::llround(report.best_bound * kQuantaPerUnit))).c_str(),
                report.bound_source.c_str(), report.bubble_rate_bound, 100 * report.gap, report.status.c_str());
  notes.push_back(line);
  return PlanResult{std::move(*s), pr, std::move(notes), report};
}

bool lower_planned(PlanResult* planned, std::vector<Diag>* diags, const LowerOptions& given) {
  LowerOptions options = given;
  Schedule lowered = lower_comms(planned->schedule, options);
  auto found = validate(lowered, planned->problem);
  if (!found.empty() && options.optimizer == kOptimizerPostValidation && options.validate_at != ValidateAt::kStart) {
    options.validate_at = ValidateAt::kStart;
    Schedule held = lower_comms(planned->schedule, options);
    if (validate(held, planned->problem).empty()) {
      planned->notes.push_back("post-validation: VALIDATE before the first B would deadlock here (" + found[0].message +
                               "); each stage validates before its first F instead");
      lowered = std::move(held);
      found.clear();
    }
  }
  if (!found.empty()) {
    diags->push_back({"", "", -1, -1, "", "internal error: the lowered schedule does not validate:"});
    diags->insert(diags->end(), found.begin(), found.end());
    return false;
  }
  planned->schedule = std::move(lowered);
  return true;
}

}  // namespace zbpp
