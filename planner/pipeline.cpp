// The planner's pass list (see pipeline.h).
#include "planner/pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <thread>

#include "planner/gen_v.h"
#include "planner/lower.h"
#include "planner/methods.h"
#include "planner/pipeline_internal.h"
#include "planner/search_heuristic.h"
#ifdef ZBPP_HAVE_CBC
#include "planner/refine_ilp.h"
#endif
#include "core/simulate.h"
#include "core/spelling.h"
#include "core/validate.h"

namespace zbpp {

// The optimizer placement a lowering stands for, as the notes name it.
std::string lowering_name(const LowerOptions& l) {
  if (l.optimizer == Optimizer::kSync) return "sync";
  return l.post_validation_at == PostValidationAt::kStart ? "post-validation, validated at the start" : "post-validation";
}

// A lowered plan's true cost: its objective's figure of the iterations back to back.
Ticks true_cost_in(const IterationTimeline& it, Objective objective) {
  return objective == Objective::kWall ? it.wall : it.period;
}

// The compute cost the searches rank by (simulate.h's compute_cost); a compute-only plan is ranked
// as for overlapping iterations: by the span for the period, the makespan for the wall.
Cost ranking_cost(const PlanOptions& o) {
  return compute_cost(o.objective, o.lowerings.empty() ? Optimizer::kPostValidation : o.lowerings.front().optimizer);
}

// The note a plan on a problem split into 2 chunks carries.
std::string split_note(const std::string& method) {
  return method + ": each stage split into 2 chunks (per-chunk times and memory are half the stage's)";
}

namespace {

// Runs `second` on another thread while `first` runs on this one; an exception from either is
// rethrown here once both ended.
template <class First, class Second>
void run_beside(First&& first, Second&& second) {
  std::exception_ptr failed;
  std::thread other([&] {
    try {
      second();
    } catch (...) {
      failed = std::current_exception();
    }
  });
  try {
    first();
  } catch (...) {
    other.join();
    throw;
  }
  other.join();
  if (failed) std::rethrow_exception(failed);
}


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

// Whether the compute cost ranks one-chunk schedules as the true cost does (simulate.h's
// compute_cost), so the searches need not lower and time every candidate (which would make the
// grid several times slower): under a synchronous step the period and the wall are the makespan
// plus the all-reduce; under post-validation at the first B, with every stage taking
// the same times and state messages no slower than activations, the period is the span. Both are
// checked on every candidate of the grid in search_heuristic_test, which also shows uneven stages
// where the period falls below the span. Elsewhere the searches rank by the true cost.
bool compute_cost_ranks_alike(Objective objective, const LowerOptions& l, const Problem& pr,
                              const IterationOptions& it) {
  if (l.optimizer == Optimizer::kSync) return true;
  return objective == Objective::kPeriod && l.post_validation_at == PostValidationAt::kFirstBackward && pr.uniform_times() &&
         pr.uniform_hops() && (it.state_latency < 0 || it.state_latency <= pr.t_comm[0]);
}

// A one-chunk schedule lowered and timed over iterations back to back: its true cost.
CostFn true_cost_of(const Problem& pr, Objective objective, const LowerOptions& lowering,
                    const IterationOptions& options) {
  IterationOptions figures = options;
  figures.op_times = false;  // candidates are ranked by their figures
  return [&pr, objective, lowering, figures](const Schedule& s) -> Ticks {
    std::vector<Diag> unused;
    auto it = simulate_iterations(lower_comms(s, lowering), pr, figures, &unused);
    return it ? true_cost_in(*it, objective) : -1;
  };
}

// "bound: period >= 1102.68 (busy), period bubble rate >= 0.0000, gap 7.2810 % (not_run)".
std::string bound_line(const SolverReport& report) {
  char line[240];
  std::snprintf(line, sizeof line, "bound: %s >= %s (%s), %s bubble rate >= %.4f, gap %.4f %% (%s)",
                cost_name(report.measure),
                format_quanta(static_cast<Ticks>(std::llround(report.best_bound * kQuantaPerUnit))).c_str(),
                bound_source_name(report.bound_source), cost_name(report.measure), report.bubble_rate_bound,
                100 * report.gap, solve_status_name(report.status.value_or(SolveStatus::kNotRun)));
  return line;
}

// How a method's searches rank their candidates: the compute cost that stands for the objective,
// or, where it would rank them otherwise than the true cost, the true cost itself.
struct Ranking {
  Cost compute;
  CostFn true_cost;       // empty: by the compute cost
  std::string ranked_by;  // as the notes say it
};

Ranking ranking_for(const Problem& pr, const PlanOptions& options) {
  const LowerOptions* lowering = options.lowerings.empty() ? nullptr : &options.lowerings.front();
  Ranking r{ranking_cost(options), {}, {}};
  if (lowering && !compute_cost_ranks_alike(options.objective, *lowering, pr, options.iterations))
    r.true_cost = true_cost_of(pr, options.objective, *lowering, options.iterations);
  r.ranked_by = r.true_cost ? std::string(objective_name(options.objective)) + " (lowered: " + lowering_name(*lowering) + ")"
                            : cost_name(r.compute);
  return r;
}

// The problem `m` plans, from `pr` (a copy of `original`): a V method's in 2 chunks (a
// one-chunk problem split in halves); a placement it cannot plan is refused.
bool shape_for(const Method& m, const Problem& original, Problem* pr, std::vector<std::string>* notes,
               std::vector<Diag>* diags) {
  if (m.placing != Placing::kV) return true;
  // A V method runs the V: a placement given must be it (with 2 chunks; one chunk is split below).
  if (!pr->placement.empty() && (pr->chunks != 2 || pr->placement != v_shape_placement(pr->p))) {
    diags->push_back({"", "", -1, -1, "", "method " + std::string(m.name) + " runs the V placement (2 chunks, stage r "
                                          "holding virtual stages r and 2p-1-r), not the one the problem gives: drop "
                                          "--placement (or 'placement' from the problem file), or give --placement v"});
    return false;
  }
  if (pr->chunks == 1) {
    *pr = split_into_chunks(original, 2);
    notes->push_back(split_note(m.name));
  }
  return true;
}

// "time limit: ", or where it was zbplan's default, what it was and how to give more.
std::string time_limit_note(const PlanOptions& options) {
  if (!options.default_deadline) return std::string(kTimeLimitNote) + ": ";
  return std::string(kTimeLimitNote) + " (the default " + format_quanta(*to_quanta(kDefaultSearchSeconds)) +
         " s; --time-limit SECONDS gives more): ";
}

// A fixed order: the table's generator, on the chunks its placing takes. A generator that
// searches (V-ZB) says in *cut what the deadline left out.
std::optional<Schedule> run_generator(const Method& m, const Problem& pr, const Deadline& deadline,
                                      std::vector<Diag>* diags, std::string* cut) {
  if (m.placing == Placing::kInterleaved && pr.chunks < 2) {
    diags->push_back({"", "", -1, -1, "", interleaves_chunks_text(m.name)});
    return std::nullopt;
  }
  if (m.placing != Placing::kInterleaved && !check_shape(pr, m.name, m.placing == Placing::kV ? 2 : 1, diags))
    return std::nullopt;
  std::string err;
  auto s = m.generator(pr, &err, deadline);
  if (!s) diags->push_back({"", "", -1, -1, "", err});
  else *cut = err;
  return s;
}

// A search's pick under the memory limit: the one-chunk grid, or the V or interleaved search by the
// problem's placement; its note says how it was found, *warm_start what the ILP would refine.
std::optional<Schedule> run_search(const Method& m, const Problem& pr, const Ranking& ranking,
                                   const PlanOptions& options, std::vector<std::string>* notes,
                                   std::string* warm_start, std::vector<Diag>* diags) {
  const std::string method = m.name;
  if (m.placing != Placing::kV && pr.chunks == 1) {
    auto found = search_heuristic(pr, diags, 0, ranking.compute, ranking.true_cost);
    if (!found) return std::nullopt;
    *warm_start = "the heuristic";
    const int over = found->candidates - found->feasible - found->pruned;
    notes->push_back("search: " + std::to_string(found->candidates) +
                     " candidates (8 switch combinations, the warm-up bound's, 3 handcrafted seeds): " + std::to_string(found->feasible) +
                     " finished within the memory limit" +
                     (found->pruned ? ", " + std::to_string(found->pruned) + " stopped once sure to lose" : "") +
                     (over ? ", " + std::to_string(over) + " could not keep it" : "") + "; best by " +
                     ranking.ranked_by + ": " + found->winner);
    return std::move(found->schedule);
  }
  // Two chunks without a placement search the V; the interleaved placement is asked for by name.
  const bool v = m.placing == Placing::kV ||
                 (pr.chunks == 2 && (pr.placement.empty() || pr.placement == v_shape_placement(pr.p)));
  const bool interleaved = !v && (pr.placement.empty() || pr.placement == interleaved_placement(pr.p, pr.chunks));
  if (!v && !interleaved) {
    diags->push_back({"", "", -1, -1, "", "method " + method + " searches the V placement (2 chunks, stage r holding "
                                          "virtual stages r and 2p-1-r) or the interleaved one (stage s holding s, "
                                          "s+p, ...); the problem's placement is neither: give --placement v or interleaved"});
    return std::nullopt;
  }
  if (v && !check_shape(pr, method, 2, diags)) return std::nullopt;
  // Under a time limit the ILP's warm start takes at most half of what is left.
  const Deadline searching = m.runs == Runs::kSearchIlp && options.deadline.at
                                 ? options.deadline.within(options.deadline.left() / 2)
                                 : options.deadline;
  auto found = v ? search_v(pr, diags, ranking.compute, ranking.true_cost, searching, options.progress)
                 : search_interleaved(pr, diags, ranking.compute, ranking.true_cost, searching, options.progress);
  if (!found) return std::nullopt;
  if (!found->cut.empty()) notes->push_back(time_limit_note(options) + "the search stopped early (" + found->cut + ")");
  *warm_start = v ? "the V search" : "the interleaved search";
  notes->push_back(std::string(v ? "V search: " : "interleaved search: ") + std::to_string(found->feasible) + " of " +
                   std::to_string(found->candidates) + " candidates fit the memory limit (greedy budgets and knobs; " +
                   (v ? "v-min, v-half (blocks and reordered), the authors' family of blocks (the 4 best of each form), v-zb, zb-v, dualpipe-v"
                      : "1f1b-i and 1f1b-i split") +
                   " seeds)" +
                   (found->pruned > 0 ? "; " + std::to_string(found->pruned) +
                                            " grid points left out, their budgets' bound above the best found"
                                      : std::string()) +
                   "; best by " + ranking.ranked_by + ": " + found->winner);
  return std::move(found->schedule);
}

#ifdef ZBPP_HAVE_CBC
// The ILP's refinement of the search's pick *s (kept where the ILP's crosses a link's order); its
// note says how it went, *report carries CBC's bound.
bool refine(const std::string& method, const Problem& pr, const Ranking& ranking, const PlanOptions& options,
            const std::string& warm_start, Schedule* s, std::vector<std::string>* notes,
            std::optional<SolverReport>* report, std::vector<Diag>* diags) {
  IlpOptions ilp;
  ilp.measure = ranking.compute;
  ilp.true_cost = ranking.true_cost;
  ilp.seconds = options.time_limit > 0 ? options.time_limit : 10;
  if (options.deadline.at) {
    // What the search left, less the lowering's share (a tenth, 0.1 to 2 s), at least a moment.
    const double lowering = std::clamp(0.1 * options.time_limit, 0.1, 2.0);
    ilp.seconds = std::clamp(options.deadline.left() - lowering, 0.05, ilp.seconds);
  }
  ilp.threads = options.threads;
  const Cost compute = ranking.compute;
  if (options.progress)
    ilp.progress = [&](const IlpProgress& at) {
      char line[200];
      double cost = from_quanta(at.incumbent);
      std::snprintf(line, sizeof line,
                    "ilp: %6.1f s  models %4d  incumbent %s %.6f (%s bubble rate %.4f)  bound %.6f  gap %.4f %%",
                    at.seconds, at.windows, cost_name(compute), cost, cost_name(compute),
                    bubble_rate_of(pr, at.incumbent), at.bound,
                    100 * relative_gap(at.incumbent, at.bound * kQuantaPerUnit));
      options.progress(line);
    };
  auto refined = refine_ilp(pr, *s, ilp, diags);
  if (!refined) return false;
  // The model does not know that one link's messages arrive in order (interleaved placement):
  // where its order crosses them, the warm start stays, and the solve's summary says whose it is.
  // CBC's bound holds still (the order only narrows the schedules); the report's cost, and
  // whether it is optimal, are the kept schedule's (validate_and_lower).
  const auto crossing = validate_message_order(refined->schedule);
  const bool crossed = !crossing.empty();
  if (crossed) {
    notes->push_back("ilp: its schedule takes a link's inputs out of the order sent (" + format_diag(crossing[0]) +
                     "): discarded, the warm start is kept");
    refined->schedule = *s;
  }
  const std::string limit = options.deadline.at ? "what the search left of the " +
                                                      format_quanta(*to_quanta(options.time_limit)) + " s time limit"
                                                : format_quanta(*to_quanta(ilp.seconds)) + " s limit";
  notes->push_back("ilp (CBC, " + limit + ", minimising the " + cost_name(compute) +
                   (ranking.true_cost ? ", keeping a schedule by its " + ranking.ranked_by : std::string()) +
                   "), warm-started from " + warm_start + (crossed ? ", its schedule discarded: " : ": ") +
                   refined->summary());
  // The MILP never returns a schedule worse than its warm start (by the true cost where given),
  // so its schedule replaces the warm start; its report carries CBC's bound on the model's cost.
  *report = SolverReport{};  // its best_bound: the model's cost's
  (*report)->best_bound = refined->lower_bound;
  (*report)->status = refined->status;
  (*report)->seconds = refined->seconds;
  (*report)->nodes = refined->nodes;
  *s = std::move(refined->schedule);
  s->method = method;
  return true;
}
#endif

}  // namespace

std::optional<Generated> generate(const Problem& original, const std::string& method, std::vector<Diag>* diags,
                                  const PlanOptions& options) {
  const Method* m = find_method(method);
  if (!m || m->runs == Runs::kAuto) {  // auto runs the others (plan_schedule)
    diags->push_back({"", "", -1, -1, "", "unknown method '" + method + "' (known: " + join_names(plan_methods()) + ")"});
    return std::nullopt;
  }
  std::vector<std::string> notes;
  Problem pr = original;
  if (!shape_for(*m, original, &pr, &notes, diags)) return std::nullopt;
  const Ranking ranking = ranking_for(pr, options);
  std::optional<Schedule> s;
  std::string warm_start;  // what the ILP refines
  std::string cut;
  s = m->runs == Runs::kGenerator ? run_generator(*m, pr, options.deadline, diags, &cut)
                                  : run_search(*m, pr, ranking, options, &notes, &warm_start, diags);
  if (!s) return std::nullopt;
  if (!cut.empty()) notes.push_back(time_limit_note(options) + method + " stopped early (" + cut + ")");
  std::optional<SolverReport> ilp_report;
  if (m->runs == Runs::kSearchIlp) {
#ifdef ZBPP_HAVE_CBC
    if (!refine(method, pr, ranking, options, warm_start, &*s, &notes, &ilp_report, diags)) return std::nullopt;
#else
    diags->push_back({"", "", -1, -1, "", "the " + method + " method needs CBC: install coinor-libcbc-dev and rebuild"});
    return std::nullopt;
#endif
  }
  if (!pr.placement.empty() && pr.placement != s->placement) {
    diags->push_back({"", "", -1, -1, "", "method " + method + " places chunks its own way, not as the problem's placement asks; drop --placement (or 'placement' from the problem file)"});
    return std::nullopt;
  }
  return Generated{method, std::move(*s), std::move(pr), std::move(notes), std::move(ilp_report)};
}

std::optional<PlanResult> validate_and_lower(Generated generated, std::vector<Diag>* diags,
                                             const PlanOptions& options) {
  const Problem& pr = generated.problem;
  const LowerOptions* lowering = options.lowerings.empty() ? nullptr : &options.lowerings.front();
  const Cost compute = ranking_cost(options);
  const std::optional<SolverReport>& ilp_report = generated.ilp_report;
  std::optional<Timeline> timeline;  // a compute-only plan's cost; a lowered one is timed lowered
  std::vector<Diag> found;            // what the validator finds in the planned schedule
  auto does_not_fit = [&] {
    diags->push_back({"", "", -1, -1, "", "the " + generated.method + " schedule does not fit this problem:"});
    diags->insert(diags->end(), found.begin(), found.end());
    return std::nullopt;
  };
  if (!lowering) {
    found = validate(generated.schedule, pr, "", &timeline);
    if (!found.empty()) return does_not_fit();
  }
  PlanResult planned{std::move(generated.schedule), pr, std::move(generated.notes), {}, std::nullopt};
  // Every plan says how far from optimal it can be: its cost (the true one when lowered, else the
  // compute cost that stands for it) against the certified bounds.
  Cost cost = compute;
  Ticks value = 0, allreduce = -1;
  if (lowering) {
    IterationOptions figures = options.iterations;
    figures.op_times = false;  // the plan's figures; show and simulate time the ops themselves
    // The planned schedule is validated as it is lowered (beside it, when big).
    const bool lowered = lower_planned(&planned, diags, *lowering, &figures, &found);
    if (!found.empty()) return does_not_fit();
    if (!lowered) return std::nullopt;
    cost = cost_of(options.objective);
    value = true_cost_in(*planned.iterations, options.objective);
    if (planned.schedule.optimizer == Optimizer::kSync) allreduce = planned.iterations->allreduce_latency;
  } else {
    value = cost_of(*timeline, compute);
  }
  SolverReport report = bound_report(pr, value, cost, planned.schedule.placement, allreduce);
  if (ilp_report) {
    // CBC's bound on the model's cost bounds the true cost too (the period covers a span, the wall
    // clock the makespan; a synchronous step adds its all-reduce to both).
    const double cbc = ilp_report->best_bound + (allreduce >= 0 ? from_quanta(allreduce) : 0);
    if (cbc > report.best_bound) {
      report.best_bound = cbc;
      report.bound_source = BoundSource::kCbc;
      report.gap = relative_gap(value, cbc * kQuantaPerUnit);
      report.bubble_rate_bound = bubble_rate_of(pr, static_cast<Ticks>(std::llround(cbc * kQuantaPerUnit)));
    }
    // Optimal when the cost meets the bound (to CBC's tolerance); else the ILP's own status, which
    // speaks of the model's cost: where that was optimal but the true cost is not, no window of
    // the model improves it.
    if (static_cast<double>(value) <= report.best_bound * kQuantaPerUnit + 0.5) report.status = SolveStatus::kOptimal;
    else report.status = ilp_report->status == SolveStatus::kOptimal ? SolveStatus::kLocalOptimum : ilp_report->status;
    report.seconds = ilp_report->seconds;
    report.nodes = ilp_report->nodes;
  }
  planned.notes.push_back(bound_line(report));
  planned.solver = report;
  return planned;
}

std::optional<PlanResult> plan_schedule(const Problem& problem, const std::string& method, std::vector<Diag>* diags,
                                        const PlanOptions& options) {
  if (method == "auto") return plan_auto(problem, diags, options);
  auto generated = generate(problem, method, diags, options);
  if (!generated) return std::nullopt;
  return validate_and_lower(std::move(*generated), diags, options);
}

namespace {

// Whether `lowered` holds `planned`'s ops, stage by stage, in the same order, between the ops
// lowering adds (messages, the optimizer's).
bool keeps_compute_ops(const Schedule& lowered, const Schedule& planned) {
  if (lowered.stages.size() != planned.stages.size()) return false;
  for (size_t st = 0; st < planned.stages.size(); ++st) {
    size_t next = 0;
    for (const Op& op : lowered.stages[st]) {
      if (!is_compute(op.type)) continue;
      if (next == planned.stages[st].size()) return false;
      const Op& want = planned.stages[st][next++];
      if (op.type != want.type || op.mb != want.mb || op.chunk != want.chunk) return false;
    }
    if (next != planned.stages[st].size()) return false;
  }
  return true;
}

}  // namespace

bool lower_planned(PlanResult* planned, std::vector<Diag>* diags, const LowerOptions& given,
                   const IterationOptions* timing, std::vector<Diag>* planned_found) {
  LowerOptions options = given;
  const Problem& pr = planned->problem;
  std::optional<IterationTimeline> timed;
  std::vector<Diag> timing_failed;  // the iterations' deadlock, where the validation's replay finishes
  // Lowered and validated. Timed, the iterations' replay stands for the validation's, which runs
  // only to name a finding (validate_lowered_but_replay).
  const bool big = planned->schedule.p * planned->schedule.m >= 1024;  // pays for a second thread
  auto checked = [&](const Schedule* lowered) {
    if (!timing) return validate(*lowered, pr);
    timed.reset();
    timing_failed.clear();
    std::vector<Diag> found;
    // A big plan is timed on a second thread while it is checked (the two take about as long);
    // what the timing found counts only once the checks passed. The replay needs indices in range
    // (lowered_replayable); where they are not, the checks say so.
    if (big) {
      run_beside([&] { found = validate_lowered_but_replay(*lowered, pr); },
                 [&] {
                   if (lowered_replayable(*lowered, pr))
                     timed = simulate_iterations(*lowered, pr, *timing, &timing_failed);
                 });
      if (!found.empty()) timed.reset();
    } else {
      found = validate_lowered_but_replay(*lowered, pr);
      if (found.empty()) timed = simulate_iterations(*lowered, pr, *timing, &timing_failed);
    }
    return timed ? found : validate(*lowered, pr);
  };
  Schedule lowered = lower_comms(planned->schedule, options);
  auto found = checked(&lowered);
  if (!found.empty() && options.optimizer == Optimizer::kPostValidation && options.post_validation_at != PostValidationAt::kStart) {
    options.post_validation_at = PostValidationAt::kStart;
    Schedule held = lower_comms(planned->schedule, options);
    if (checked(&held).empty()) {
      planned->notes.push_back("post-validation: VALIDATE before the first B would deadlock here (" + found[0].message +
                               "); each stage validates before its first F instead");
      lowered = std::move(held);
      found.clear();
    }
  }
  // The lowered checks validate the projection of the lowered schedule onto its compute ops, which
  // is the planned schedule op for op (keeps_compute_ops), and a lowered replay that finishes
  // implies one of the compute ops alone does: so they validate the planned schedule too. Where
  // they fail, the planned schedule is validated alone, to tell its own faults from the lowering's.
  if (planned_found && (!found.empty() || (timing && !timed))) {
    *planned_found = validate(planned->schedule, pr);
    if (!planned_found->empty()) return false;
  }
  if (found.empty() && !keeps_compute_ops(lowered, planned->schedule))
    found.push_back({"", "", -1, -1, "", "lowering changed the planned compute ops or their order"});
  if (!found.empty()) {
    diags->push_back({"", "", -1, -1, "", "internal error: the lowered schedule does not validate:"});
    diags->insert(diags->end(), found.begin(), found.end());
    return false;
  }
  if (timing && !timed) {
    diags->insert(diags->end(), timing_failed.begin(), timing_failed.end());
    return false;
  }
  planned->schedule = std::move(lowered);
  if (timing) planned->iterations = std::move(timed);
  return true;
}

}  // namespace zbpp
