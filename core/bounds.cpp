// Lower bounds on the span (see bounds.h). All in exact ticks.
//
// Notation for stage s: sigma_s is when its first op (an F) starts. Every bound below is measured
// from sigma_s, because the simulator starts a stage when its first input arrives: sigma_u >=
// sigma_s + sum_{s<=t<u} (T_F[t] + T_comm) for u > s, and nothing else about sigma is known.
// "k-th F" means the k-th F the stage runs, whatever its microbatch (microbatches are alike, so a
// schedule's ops can be relabelled in the order each stage runs them without changing any time).
#include "core/bounds.h"

#include <algorithm>

#include "core/simulate.h"

namespace zbpp {

namespace {

struct StageFacts {
  Ticks busy = 0;
  Ticks idle = 0;  // idle forced between sigma_s and the start of the stage's last B
};

// Most F's that fit in memory before the first B (nothing is freed before it).
int fs_before_first_b(const Problem& pr, int s) {
  if (!pr.mem_limit || pr.mem_b[s] <= 0) return pr.m;
  return static_cast<int>(std::min<Mem>(pr.m, std::max<Mem>(0, *pr.mem_limit / pr.mem_b[s])));
}

// Most B/W work stage s can have left, besides the last microbatch's own B and W, right after its
// last F: k microbatches without B (the last one among them) and w with B but without W, with
// k*M_B + w*M_W within the limit.
Ticks tail_work(const Problem& pr, int s) {
  const int m = pr.m;
  const Ticks bw = pr.t_b[s] + pr.t_w[s];
  if (!pr.mem_limit) return (m - 1) * bw;
  const Mem limit = *pr.mem_limit, mb = pr.mem_b[s], mw = pr.mem_w[s];
  Ticks best = 0;
  for (int k = 1; k <= m; ++k) {
    Mem left = limit - k * mb;
    if (left < 0) break;
    Ticks w = m - k;
    if (mw > 0) w = std::min<Ticks>(w, left / mw);
    best = std::max(best, (k - 1) * bw + w * pr.t_w[s]);
  }
  return best;
}

// W's stage s must run before its last B starts: then one microbatch lacks its B and the m-1 others
// hold M_W until their W; after that B all m hold M_W until their W.
int forced_ws_before_last_b(const Problem& pr, int s) {
  if (!pr.mem_limit || pr.mem_w[s] <= 0) return 0;
  const Mem limit = *pr.mem_limit, mw = pr.mem_w[s];
  Mem before = pr.m - 1 - std::max<Mem>(0, limit - pr.mem_b[s]) / mw;
  Mem after = pr.m - limit / mw;
  return static_cast<int>(std::clamp<Mem>(std::max(before, after), 0, pr.m - 1));
}

StageFacts stage_facts(const Problem& pr, int s) {
  const int p = pr.p, m = pr.m;
  const Ticks c = pr.t_comm;
  StageFacts f;
  f.busy = pr.busy_time(s);
  // Round trip: the first B's own F ends T_F after sigma at the earliest, then its forward goes
  // down to the last stage and its gradient comes back.
  Ticks down_up = 0;
  for (int t = s + 1; t < p; ++t) down_up += pr.t_f[t] + pr.t_b[t] + 2 * c;
  const Ticks round_trip = pr.t_f[s] + down_up;
  const int n = fs_before_first_b(pr, s);
  auto head = [&](int fs) { return std::max<Ticks>(0, round_trip - fs * pr.t_f[s]); };
  // After the last F the stage waits for that microbatch's trip down and back, doing at most the
  // B/W work its memory holds.
  const Ticks tail = std::max<Ticks>(0, down_up - tail_work(pr, s));
  // Case A: the first B runs before the last F (needs m >= 2): the head and tail gaps are
  // disjoint. Case B: every F runs before the first B (needs n >= m): they may overlap.
  Ticks idle = -1;
  if (m >= 2 && n >= 1) idle = head(std::min(n, m - 1)) + tail;
  if (n >= m) {
    Ticks b = std::max(head(m), tail);
    idle = idle < 0 ? b : std::min(idle, b);
  }
  f.idle = std::max<Ticks>(0, idle);  // no case possible: the problem has no schedule at all
  return f;
}

}  // namespace

Ticks wall_lower_bound(const Problem& pr, const std::vector<std::vector<int>>& placement) {
  VirtualStageMap map(placement);
  // When the first forward can reach each virtual stage: the chain of T_F (and T_comm per hop) before it.
  std::vector<Ticks> reach(map.virtual_stages(), 0);
  for (int vs = 1; vs < map.virtual_stages(); ++vs) {
    int prev = map.stage_of[vs - 1];
    reach[vs] = reach[vs - 1] + pr.t_f[prev] + (prev != map.stage_of[vs] ? pr.t_comm : 0);
  }
  Ticks bound = 0;
  for (int st = 0; st < static_cast<int>(placement.size()); ++st) {
    Ticks start = -1;
    for (int vs : placement[st]) start = start < 0 ? reach[vs] : std::min(start, reach[vs]);
    Ticks busy = static_cast<Ticks>(pr.m) * static_cast<Ticks>(placement[st].size()) * (pr.t_f[st] + pr.t_b[st] + pr.t_w[st]);
    bound = std::max(bound, start + busy);
  }
  return bound;
}

SpanBounds span_lower_bounds(const Problem& pr) {
  SpanBounds b;
  const int p = pr.p, m = pr.m;
  for (int s = 0; s < p; ++s) b.busy = std::max(b.busy, pr.busy_time(s));
  b.memory = b.busy;
  b.critical_path = 0;
  if (pr.chunks == 1 && m >= 1) {
    std::vector<StageFacts> facts(p);
    for (int s = 0; s < p; ++s) {
      facts[s] = stage_facts(pr, s);
      b.memory = std::max(b.memory, facts[s].busy + facts[s].idle);
    }
    // offset[s]: how much later than stage 0 stage s starts, at least.
    std::vector<Ticks> offset(p, 0);
    for (int s = 1; s < p; ++s) offset[s] = offset[s - 1] + pr.t_f[s - 1] + pr.t_comm;
    // last_b_end[t] - offset[t]... kept absolute (relative to stage 0's start); only differences
    // offset[t] - offset[s] with t >= s enter the bound for stage s, so it holds for any sigma.
    Ticks last_b_end = 0;
    for (int t = p - 1; t >= 0; --t) {
      Ticks own = offset[t] + facts[t].idle + m * pr.t_f[t] + (m - 1) * pr.t_b[t] +
                  forced_ws_before_last_b(pr, t) * pr.t_w[t];
      Ticks from_below = t + 1 < p ? last_b_end + pr.t_comm : 0;
      last_b_end = std::max(own, from_below) + pr.t_b[t];
      b.critical_path = std::max(b.critical_path, last_b_end + pr.t_w[t] - offset[t]);
    }
  }
  b.best = b.busy;
  b.which = "busy";
  if (b.memory > b.best) b.best = b.memory, b.which = "memory";
  if (b.critical_path > b.best) b.best = b.critical_path, b.which = "critical-path";
  return b;
}

double bubble_rate_of_span(const Problem& pr, Ticks span) {
  if (span <= 0) return 0.0;
  Ticks busy = 0;
  for (int s = 0; s < pr.p; ++s) busy = std::max(busy, pr.busy_time(s));
  return static_cast<double>(span - busy) / static_cast<double>(span);
}

SolverReport bound_report(const Problem& pr, Ticks span) {
  return bound_report(pr, span, Cost::kSpan, interleaved_placement(pr.p, pr.chunks));
}

Ticks cost_lower_bound(const Problem& pr, Cost cost, const std::vector<std::vector<int>>& placement,
                       std::string* which, Ticks allreduce) {
  SpanBounds b = span_lower_bounds(pr);
  Ticks best = b.best;
  std::string source = b.which;
  // Every span bound holds for the makespan and the wall clock too, which cover every stage's
  // span, and for the period: a stage's ops of one iteration lie between two of its steps. A
  // synchronous step makes the period a wall clock.
  const bool sync = allreduce >= 0 && !is_compute_cost(cost);
  if (cost == Cost::kMakespan || cost == Cost::kWall || sync) {
    Ticks ramp = wall_lower_bound(pr, placement);
    if (ramp > best) best = ramp, source = "ramp";
  }
  if (sync) best += allreduce;  // after every stage's last op, the all-reduce
  if (which) *which = source;
  return best;
}

SolverReport bound_report(const Problem& pr, Ticks cost_value, Cost cost,
                          const std::vector<std::vector<int>>& placement, Ticks allreduce) {
  SolverReport r;
  r.measure = cost;
  const Ticks best = cost_lower_bound(pr, cost, placement, &r.bound_source, allreduce);
  r.value = cost_value;
  r.best_bound = from_quanta(best);
  r.gap = relative_gap(cost_value, static_cast<double>(best));
  r.status = cost_value <= best ? "optimal" : "not_run";
  r.bubble_rate_bound = bubble_rate_of_span(pr, best);
  return r;
}

double relative_gap(Ticks span, double bound) {
  if (span <= 0) return 0.0;
  return std::max(0.0, (static_cast<double>(span) - bound) / static_cast<double>(span));
}

}  // namespace zbpp
