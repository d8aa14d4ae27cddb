// Event simulation of a schedule (see simulate.h). Each stage advances through its list until
// an op's input has not been produced yet; it then parks on that product and is woken when the
// product appears. Linear in the number of ops.
#include "core/simulate.h"

#include <algorithm>
#include <stdexcept>

#include "core/deps.h"
#include "core/lowered.h"
#include "core/replay.h"

namespace zbpp {

namespace {

struct Sim {
  const Schedule& schedule;
  const Problem& problem;
  VirtualStageMap map;
  int m;
  std::vector<Ticks> produced_at;  // [key] end time of the producing op, -1 if not yet
  // Stages parked on a product, as a list through the stages (a stage waits for one at a time):
  // no allocation per wait.
  std::vector<int> first_waiting;  // [key] a stage parked on it, -1 if none
  std::vector<int> next_waiting;   // [stage] the next stage parked on the same product, -1 if none
  std::vector<int> cursor;
  std::vector<Ticks> free_at;
  std::vector<Ticks> first_start;  // [stage] start of its first op
  bool keep_times;                 // simulate_cost needs the spans only
  std::vector<std::vector<OpTiming>> times;
  // simulate_cost's early stop: once a cost (span: from the stage's first start; makespan: from
  // the first start anywhere) of at least `bound` is sure, with `left` the work a stage has still
  // to run; `bound` stays -1 while the cost may still come in at or under `above`.
  Ticks above = -1;
  bool makespan = false;
  std::vector<Ticks> left;
  Ticks earliest = -1;
  Ticks bound = -1;

  Sim(const Schedule& s, const Problem& pr, bool with_times, Ticks stop_above = -1, bool by_makespan = false)
      : schedule(s), problem(pr), map(s.placement), m(s.m), keep_times(with_times), above(stop_above),
        makespan(by_makespan) {
    if (above >= 0) {
      left.assign(s.p, 0);
      for (int st = 0; st < s.p; ++st)
        for (const Op& op : s.stages[st]) left[st] += op_duration(op, st, pr);
    }
    size_t keys = static_cast<size_t>(kProducts) * map.virtual_stages() * m;
    produced_at.assign(keys, -1);
    first_waiting.assign(keys, -1);
    next_waiting.assign(s.p, -1);
    cursor.assign(s.p, 0);
    free_at.assign(s.p, 0);
    first_start.assign(s.p, 0);
    if (keep_times) {
      times.resize(s.p);
      for (int st = 0; st < s.p; ++st) times[st].resize(s.stages[st].size());
    }
  }

  size_t key(Product what, int vs, int mb) const { return product_key(what, vs, mb, map.virtual_stages(), m); }

  // Runs stage st as far as it can; returns stages woken by what it produced.
  void advance(int st, std::vector<int>* woken) {
    const auto& ops = schedule.stages[st];
    const int n = static_cast<int>(ops.size());
    int i = cursor[st];
    Ticks clock = free_at[st];
    for (; i < n; ++i) {
      const Op& op = ops[i];
      Ticks start = clock;
      if (auto dep = dependency_of(op, st, map)) {
        size_t k = key(dep->what, dep->vs, dep->mb);
        if (produced_at[k] < 0) {
          next_waiting[st] = first_waiting[k];
          first_waiting[k] = st;
          break;
        }
        start = std::max(start, produced_at[k] + arrival_latency(*dep, st, map, problem));
      }
      const Ticks duration = op_duration(op, st, problem);
      clock = start + duration;
      if (keep_times) times[st][i] = {start, clock};
      if (i == 0) first_start[st] = start;
      if (above >= 0) {
        left[st] -= duration;
        if (earliest < 0 || start < earliest) earliest = start;
        const Ticks sure = clock + left[st] - (makespan ? earliest : first_start[st]);
        if (sure > above) {
          bound = sure;
          ++i;
          break;
        }
      }
      if (auto what = product_of(op.type)) {
        size_t k = key(*what, map.vs(st, op.chunk), op.mb);
        produced_at[k] = clock;
        for (int w = first_waiting[k]; w >= 0; w = next_waiting[w]) woken->push_back(w);
        first_waiting[k] = -1;
      }
    }
    cursor[st] = i;
    free_at[st] = clock;
  }

  // Returns true when every stage finished.
  bool run() {
    std::vector<int> work;
    for (int st = schedule.p - 1; st >= 0; --st) work.push_back(st);
    while (!work.empty() && bound < 0) {
      int st = work.back();
      work.pop_back();
      advance(st, &work);
    }
    if (bound >= 0) return true;  // stopped early: the cost is known to be over `above`
    for (int st = 0; st < schedule.p; ++st)
      if (cursor[st] < static_cast<int>(schedule.stages[st].size())) return false;
    return true;
  }

  // The cycle of waiting ops (replay.h's deadlock_chain), from the first stuck stage.
  Diag deadlock() const {
    std::vector<int> producer_index(produced_at.size(), -1);  // [key] op index on the producer's stage
    for (int st = 0; st < schedule.p; ++st)
      for (int i = 0; i < static_cast<int>(schedule.stages[st].size()); ++i) {
        const Op& op = schedule.stages[st][i];
        if (auto what = product_of(op.type)) producer_index[key(*what, map.vs(st, op.chunk), op.mb)] = i;
      }
    int first = 0;
    while (cursor[first] >= static_cast<int>(schedule.stages[first].size())) ++first;
    return deadlock_chain(schedule, cursor, first, "deadlock:", [&](int st) -> std::pair<int, int> {
      auto dep = dependency_of(schedule.stages[st][cursor[st]], st, map);
      int k = dep ? producer_index[key(dep->what, dep->vs, dep->mb)] : -1;
      if (k < 0) return {-1, -1};
      return {map.stage_of[dep->vs], k};
    });
  }
};

}  // namespace

TimelineBuilder::TimelineBuilder(const Problem& problem, const std::vector<std::vector<int>>& placement, int m)
    : problem_(problem), map_(placement), m_(m) {
  produced_.assign(static_cast<size_t>(kProducts) * map_.virtual_stages() * m, -1);
  end_.assign(placement.size(), 0);
  start_.assign(placement.size(), -1);
}

void TimelineBuilder::reset() {
  std::fill(produced_.begin(), produced_.end(), -1);
  std::fill(end_.begin(), end_.end(), 0);
  std::fill(start_.begin(), start_.end(), -1);
}

Ticks TimelineBuilder::makespan() const {
  Ticks first = -1, last = 0;
  for (size_t st = 0; st < end_.size(); ++st)
    if (start_[st] >= 0) {
      first = first < 0 ? start_[st] : std::min(first, start_[st]);
      last = std::max(last, end_[st]);
    }
  return first < 0 ? 0 : last - first;
}

Ticks TimelineBuilder::span() const {
  Ticks span = 0;
  for (size_t st = 0; st < end_.size(); ++st)
    if (start_[st] >= 0) span = std::max(span, end_[st] - start_[st]);
  return span;
}

std::vector<Mem> peak_memory(const Schedule& schedule, const Problem& problem) {
  std::vector<Mem> peaks(schedule.p, 0);
  for (int st = 0; st < schedule.p; ++st) {
    Mem now = 0;
    for (const Op& op : schedule.stages[st]) {
      now += memory_delta(op, st, problem);
      peaks[st] = std::max(peaks[st], now);
    }
  }
  return peaks;
}

Timeline compute_figures(const Schedule& schedule, const Problem& problem, const std::vector<Ticks>& compute_start,
                         const std::vector<Ticks>& compute_end) {
  Timeline t;
  t.busy.assign(schedule.p, 0);
  Ticks first_start = -1, last_end = 0, max_busy = 0;
  for (int st = 0; st < schedule.p; ++st) {
    for (const Op& op : schedule.stages[st])
      if (is_compute(op.type)) t.busy[st] += op_duration(op, st, problem);
    max_busy = std::max(max_busy, t.busy[st]);
    if (compute_start[st] < 0) continue;
    t.span = std::max(t.span, compute_end[st] - compute_start[st]);
    first_start = first_start < 0 ? compute_start[st] : std::min(first_start, compute_start[st]);
    last_end = std::max(last_end, compute_end[st]);
  }
  t.makespan = first_start < 0 ? 0 : last_end - first_start;
  t.span_bubble_rate = t.span > 0 ? static_cast<double>(t.span - max_busy) / static_cast<double>(t.span) : 0.0;
  t.peak_memory = peak_memory(schedule, problem);
  return t;
}

namespace {

// The figures of one iteration from the times of its compute ops, [stage][op index].
Timeline timeline_of(std::vector<std::vector<OpTiming>> times, const Schedule& schedule, const Problem& problem) {
  std::vector<Ticks> first(schedule.p, -1), last(schedule.p, -1);
  for (int st = 0; st < schedule.p; ++st)
    if (!times[st].empty()) first[st] = times[st].front().start, last[st] = times[st].back().end;
  Timeline t = compute_figures(schedule, problem, first, last);
  t.ops = std::move(times);
  return t;
}

}  // namespace

std::optional<Timeline> simulate_timeline(const Schedule& schedule, const Problem& problem, std::vector<Diag>* diags) {
  if (schedule.level != Level::kLowered) {
    Sim sim(schedule, problem, true);
    if (!sim.run()) {
      diags->push_back(sim.deadlock());
      return std::nullopt;
    }
    return timeline_of(std::move(sim.times), schedule, problem);
  }
  // A lowered file is timed as the runtime replays it, every wait its SEND/RECV order causes
  // included; its Timeline holds the compute ops (the projection's indices).
  // (Its peak memory is the projection's: the other ops hold none.)
  auto replay = replay_lowered(schedule, problem, {}, diags);
  if (!replay) return std::nullopt;
  std::vector<std::vector<OpTiming>>& times = replay->ops[0];
  for (int st = 0; st < schedule.p; ++st) {
    size_t kept = 0;
    for (size_t i = 0; i < schedule.stages[st].size(); ++i)
      if (is_compute(schedule.stages[st][i].type)) times[st][kept++] = times[st][i];
    times[st].resize(kept);
  }
  return timeline_of(std::move(times), schedule, problem);
}

Ticks simulate_span(const Schedule& schedule, const Problem& problem) {
  return simulate_cost(schedule, problem, Cost::kSpan);
}

const char* objective_name(Objective objective) { return objective == Objective::kWall ? "wall" : "period"; }

const char* cost_name(Cost cost) {
  switch (cost) {
    case Cost::kSpan: return "span";
    case Cost::kMakespan: return "makespan";
    case Cost::kPeriod: return "period";
    case Cost::kWall: return "wall";
  }
  return "?";
}

Cost cost_of(Objective objective) { return objective == Objective::kWall ? Cost::kWall : Cost::kPeriod; }

Cost compute_cost(Objective objective, Optimizer optimizer) {
  return optimizer == Optimizer::kSync || objective == Objective::kWall ? Cost::kMakespan : Cost::kSpan;
}

Ticks cost_of(const Timeline& t, Cost cost) {
  if (!is_compute_cost(cost)) throw std::logic_error("cost_of: the period and the wall need iterations back to back");
  return cost == Cost::kMakespan ? t.makespan : t.span;
}

Ticks simulate_cost(const Schedule& schedule, const Problem& problem, Cost cost, std::vector<Diag>* deadlock,
                    Ticks above) {
  if (!is_compute_cost(cost))
    throw std::logic_error("simulate_cost: the period and the wall need iterations back to back");
  Sim sim(schedule, problem, false, above, cost == Cost::kMakespan);
  if (!sim.run()) {
    if (deadlock) deadlock->push_back(sim.deadlock());
    return -1;
  }
  if (sim.bound >= 0) return sim.bound;
  Ticks span = 0, first = -1, last = 0;
  for (int st = 0; st < schedule.p; ++st) {
    if (schedule.stages[st].empty()) continue;
    span = std::max(span, sim.free_at[st] - sim.first_start[st]);
    first = first < 0 ? sim.first_start[st] : std::min(first, sim.first_start[st]);
    last = std::max(last, sim.free_at[st]);
  }
  return cost == Cost::kMakespan ? (first < 0 ? 0 : last - first) : span;
}

}  // namespace zbpp
