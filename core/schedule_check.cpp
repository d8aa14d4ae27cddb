// What every reader checks before trusting a schedule file (see schedule_json.h): the schedule
// valid, replayed, and every figure it records recomputed.
#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "core/bounds.h"
#include "core/schedule_json.h"
#include "core/validate.h"

namespace zbpp {

std::vector<Diag> check_recorded_figures(const ScheduleFile& f, const Timeline& t, const std::string& path) {
  std::vector<Diag> out;
  const RecordedFigures& r = f.recorded;
  // A recorded number as the file would show it: the shortest decimal that reads back ("1", not "1.0").
  auto shown = [](double v) {
    std::string text = nlohmann::json(v).dump();
    return text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0 ? text.substr(0, text.size() - 2) : text;
  };
  auto differs = [&](const std::string& pointer, const std::string& recorded, const std::string& recomputed) {
    out.push_back({path, pointer, -1, -1, "", "recorded " + recorded + ", recomputed " + recomputed +
                                                  " (the file was edited after it was written: plan it again)"});
  };
  // A time or memory figure: the writer prints the exact quantum, so it must read back to it.
  auto quanta = [&](const std::string& pointer, const std::optional<double>& recorded, std::int64_t actual) {
    if (recorded && to_quanta(*recorded) != actual)
      differs(pointer, shown(*recorded), format_quanta(actual));
  };
  // A rate, a ratio of exact figures: printed with all its digits, so 1e-9 leaves room for other writers.
  auto rate = [&](const std::string& pointer, const std::optional<double>& recorded, double actual) {
    if (recorded && !(std::fabs(*recorded - actual) <= 1e-9))
      differs(pointer, shown(*recorded), shown(actual));
  };
  const Schedule& s = f.schedule;
  quanta("/makespan", r.makespan, t.makespan);
  quanta("/span", r.span, t.span);
  rate("/span_bubble_rate", r.span_bubble_rate, t.span_bubble_rate);
  quanta("/wall_lower_bound", r.wall_lower_bound, wall_lower_bound(f.problem, s.placement));
  if (r.peak_memory) {
    if (r.peak_memory->size() != t.peak_memory.size())
      differs("/peak_memory", std::to_string(r.peak_memory->size()) + " stages", std::to_string(t.peak_memory.size()));
    else
      for (size_t st = 0; st < t.peak_memory.size(); ++st)
        quanta("/peak_memory/" + std::to_string(st), (*r.peak_memory)[st], t.peak_memory[st]);
  }
  // Iterations back to back, timed as the file records them (its latencies; the defaults otherwise),
  // for the iterations' figures and a solver cost of the period or the wall.
  const bool timed = r.iterations || (r.solver && !is_compute_cost(r.solver->measure));
  std::optional<IterationTimeline> it;
  if (timed && s.level != Level::kLowered) {
    out.push_back({path, r.iterations ? "/iterations" : "/solver/cost", -1, -1, "",
                   "a compute-level schedule has no optimizer step to repeat: it records no iterations, and its "
                   "solver cost is the span or the makespan (the period and the wall need a lowered file)"});
    return out;
  }
  if (timed) {
    IterationOptions o;
    o.op_times = false;  // the figures are checked
    if (r.iterations) {
      const auto& rec = *r.iterations;
      o.iterations = rec.k.value_or(o.iterations);
      if (rec.state_latency) o.state_latency = *to_quanta(*rec.state_latency);
      if (rec.allreduce_latency) o.allreduce_latency = *to_quanta(*rec.allreduce_latency);
    }
    std::vector<Diag> diags;
    it = simulate_iterations(s, f.problem, o, &diags);
    for (Diag& d : diags) d.file = path;
    out.insert(out.end(), diags.begin(), diags.end());
    if (!it) return out;
  }
  if (r.iterations) {
    const auto& rec = *r.iterations;
    quanta("/iterations/period", rec.period, it->period);
    rate("/iterations/period_bubble_rate", rec.period_bubble_rate, it->period_bubble_rate);
    quanta("/iterations/wall", rec.wall, it->wall);
    rate("/iterations/wall_bubble_rate", rec.wall_bubble_rate, it->wall_bubble_rate);
  }
  if (r.solver) {
    const auto& sv = *r.solver;
    const Cost cost = sv.measure;
    const Ticks actual = is_compute_cost(cost) ? cost_of(t, cost) : cost == Cost::kWall ? it->wall : it->period;
    // A synchronous step's all-reduce adds to every bound on the period and the wall (bounds.h).
    const Ticks allreduce = it && s.optimizer == Optimizer::kSync ? it->allreduce_latency : -1;
    quanta("/solver/objective", sv.value, actual);
    // Compared in quanta, as the planner forms them (best_bound may be CBC's, not a whole quantum).
    const double bound = sv.best_bound * kQuantaPerUnit;
    auto say = [&](const std::string& pointer, const std::string& msg) {
      out.push_back({path, pointer, -1, -1, "", msg});
    };
    if (bound > static_cast<double>(actual) + 0.5) {
      say("/solver/best_bound", "recorded " + shown(sv.best_bound) + " is above the schedule's " +
                                    cost_name(cost) + " " + format_quanta(actual) +
                                    ", which it claims to bound from below");
      return out;  // the gap and the bound's bubble rate follow from a bound that is wrong
    }
    if (sv.status == SolveStatus::kOptimal && static_cast<double>(actual) > bound + 0.5)
      say("/solver/status", "\"optimal\", but the schedule's " + std::string(cost_name(cost)) + " " +
                                format_quanta(actual) + " is above the bound " + shown(sv.best_bound));
    BoundSource which = BoundSource::kBusy;
    const Ticks combinatorial = cost_lower_bound(f.problem, cost, s.placement, &which, allreduce);
    if (sv.bound_source && *sv.bound_source != BoundSource::kCbc) {  // CBC's bound cannot be recomputed here
      quanta("/solver/best_bound", sv.best_bound, combinatorial);
      if (*sv.bound_source != which)
        differs("/solver/bound_source", std::string("\"") + bound_source_name(*sv.bound_source) + "\"",
                std::string("\"") + bound_source_name(which) + "\"");
    }
    rate("/solver/gap", sv.gap, relative_gap(actual, bound));
    rate("/solver/bubble_rate_bound", sv.bubble_rate_bound,
         bubble_rate_of(f.problem, static_cast<Ticks>(std::llround(bound))));
  }
  if (f.partition) {
    // The partition's gap is taken against the plan's cost as the solver measures it (the span without one).
    Ticks cost = t.span;
    if (r.solver) {
      const Cost c = r.solver->measure;
      cost = is_compute_cost(c) ? cost_of(t, c) : c == Cost::kWall ? it->wall : it->period;
    }
    auto found = check_partition_record(*f.partition, f.problem, cost, path);
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::optional<Timeline> check_schedule_file(const ScheduleFile& file, const std::string& path, std::vector<Diag>* diags) {
  *diags = validate(file.schedule, file.problem, path);
  if (!diags->empty()) return std::nullopt;
  std::optional<Timeline> timeline = simulate_timeline(file.schedule, file.problem, diags);
  if (!timeline) return std::nullopt;
  *diags = check_recorded_figures(file, *timeline, path);
  if (!diags->empty()) return std::nullopt;
  return timeline;
}


}  // namespace zbpp
