// Lower bounds on the span (see bounds.h). All in exact ticks.
//
// Notation for stage s with chunks on virtual stages placement[s]: lo_s and hi_s are its lowest and
// highest virtual stage, sigma_s is when its first op starts. A "pair" is (microbatch, chunk): a
// stage runs N = m * chunks pairs, each an F, a B and a W. Three facts about the placement hold
// for any schedule, since every op of microbatch j on stage s waits (through the dependency chain)
// for F(lo_s, j), and F(v, j) waits for F(u, j) for u < v, B(u, j) for B(v, j):
// - the stage's first op is an F(lo_s, .); its first B is a B(hi_s, .), its last F an F(hi_s, .)
//   and its last B a B(lo_s, .) (every other chunk of the stage lies between them in the chain);
// - sigma_t >= sigma_s + reach[lo_t] - reach[lo_s] when lo_t >= lo_s, where reach[v] is the
//   forward chain from virtual stage 0 to v (T_F of each and T_comm per hop between stages);
//   nothing else about sigma is known;
// - microbatches are alike, so a schedule's ops can be relabelled in the order each stage runs
//   them without changing any time: "the k-th F" means the k-th F the stage runs.
// With one chunk, lo_s = hi_s = s and these are the one-chunk bounds.
#include "core/bounds.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/simulate.h"

namespace zbpp {

namespace {

// Chains of one microbatch through the virtual stages, in ticks.
struct Chains {
  std::vector<int> stage_of;   // [vs]
  std::vector<Ticks> reach;    // [vs]: F(0, j) start -> F(vs, j) start
  std::vector<Ticks> climb;    // [vs]: climb[u] - climb[w] (u > w) = the B's of w+1..u, and the hops between
  Ticks last_f = 0;            // T_F of the last virtual stage

  // F(lo, j) start -> B(hi, j) start: forward to the last virtual stage, its F, back to hi.
  Ticks round_trip(int lo, int hi) const {
    const int last = static_cast<int>(reach.size()) - 1;
    return reach[last] - reach[lo] + last_f + climb[last] - climb[hi];
  }
  // Hop latency between two adjacent virtual stages (v-1, v).
  Ticks hop(const Problem& pr, int v) const { return pr.hop(stage_of[v - 1], stage_of[v]); }
};

Chains chains_of(const Problem& pr, const VirtualStageMap& map) {
  Chains c;
  const int vs_count = map.virtual_stages();
  c.stage_of = map.stage_of;
  c.reach.assign(vs_count, 0);
  c.climb.assign(vs_count, 0);
  for (int v = 1; v < vs_count; ++v) {
    c.reach[v] = c.reach[v - 1] + pr.t_f[c.stage_of[v - 1]] + c.hop(pr, v);
    c.climb[v] = c.climb[v - 1] + pr.t_b[c.stage_of[v]] + c.hop(pr, v);
  }
  c.last_f = pr.t_f[c.stage_of[vs_count - 1]];
  return c;
}

struct StageFacts {
  Ticks busy = 0;
  Ticks idle = 0;  // idle forced between sigma_s and the start of the stage's last B
  Ticks tail = 0;  // of it, the idle forced after the last F
  int lo = 0, hi = 0;
};

int pairs_of(const Problem& pr) { return pr.m * pr.chunks; }

// Most F's that fit in memory before the first B (nothing is freed before it).
int fs_before_first_b(const Problem& pr, int s) {
  const int n = pairs_of(pr);
  if (!pr.limit(s) || pr.mem_b[s] <= 0) return n;
  return static_cast<int>(std::min<Mem>(n, std::max<Mem>(0, *pr.limit(s) / pr.mem_b[s])));
}

// Most B/W work stage s can have left, besides the last B(lo_s) and its W, right after its last F:
// k pairs without B (at least the last microbatch's `chunks`, the B(lo_s) among them) and w with B
// but without W, with k*M_B + w*M_W within the limit.
Ticks tail_work(const Problem& pr, int s) {
  const int n = pairs_of(pr);
  const Ticks bw = pr.t_b[s] + pr.t_w[s];
  if (!pr.limit(s) || pr.mem_b[s] <= 0) return (n - 1) * bw;
  const Mem limit = *pr.limit(s), mb = pr.mem_b[s], mw = pr.mem_w[s];
  Ticks best = 0;
  for (int k = pr.chunks; k <= n; ++k) {
    Mem left = limit - k * mb;
    if (left < 0) break;
    Ticks w = n - k;
    if (mw > 0) w = std::min<Ticks>(w, left / mw);
    best = std::max(best, (k - 1) * bw + w * pr.t_w[s]);
  }
  return best;
}

// W's stage s must run before its last B starts: then one pair lacks its B and the N-1 others
// hold M_W until their W; after that B all N hold M_W until their W.
int forced_ws_before_last_b(const Problem& pr, int s) {
  const int n = pairs_of(pr);
  if (!pr.limit(s) || pr.mem_w[s] <= 0) return 0;
  const Mem limit = *pr.limit(s), mw = pr.mem_w[s];
  Mem before = n - 1 - std::max<Mem>(0, limit - pr.mem_b[s]) / mw;
  Mem after = n - limit / mw;
  return static_cast<int>(std::clamp<Mem>(std::max(before, after), 0, n - 1));
}

StageFacts stage_facts(const Problem& pr, const VirtualStageMap& map, const Chains& chains, int s) {
  const int n = pairs_of(pr);
  StageFacts f;
  f.busy = pr.busy_time(s);
  const auto& mine = map.placement[s];
  f.lo = *std::min_element(mine.begin(), mine.end());
  f.hi = *std::max_element(mine.begin(), mine.end());
  // Head: the first B, a B(hi, j), waits for F(lo, j) (at sigma or later) to go down and back;
  // only F's run before it, as many as memory holds.
  const Ticks round_trip = chains.round_trip(f.lo, f.hi);
  const int fits = fs_before_first_b(pr, s);
  auto head = [&](int fs) { return std::max<Ticks>(0, round_trip - fs * pr.t_f[s]); };
  // Tail: after the last F, an F(hi, j), B(lo, j) waits for it to go down and back to lo (with the
  // stage's own B's of j on the way, which are work); meanwhile the stage does at most the B/W
  // work its memory holds.
  const Ticks after_last_f = chains.round_trip(f.hi, f.lo) - pr.t_f[s];
  const Ticks tail = f.tail = std::max<Ticks>(0, after_last_f - tail_work(pr, s));
  // Case A: the first B runs before the last F (needs N >= 2): the head gap ends before the tail
  // gap starts. Case B: every F runs before the first B (needs all N to fit): they may overlap.
  Ticks idle = -1;
  if (n >= 2 && fits >= 1) idle = head(std::min(fits, n - 1)) + tail;
  if (fits >= n) {
    Ticks b = std::max(head(n), tail);
    idle = idle < 0 ? b : std::min(idle, b);
  }
  f.idle = std::max<Ticks>(0, idle);  // no case possible: the problem has no schedule at all
  return f;
}

// The warm-up chain (one chunk). With D_s the time from sigma_s to stage s's first B and k_s the
// F's before it (all it can run then: a W waits for a B), D_{p-1} >= k_{p-1} T_F and, for s < p-1,
// D_s >= max(D_{s+1} + T_F[s] + hop + T_B[s+1] + hop, k_s T_F[s]): stage s+1 starts after an F of
// stage s, and its first B feeds stage s's. So the idle before stage s's first B is at least
// D_s - k_s T_F[s] with 1 <= k_s <= the F's its memory holds; the tail's forced idle comes on top
// when k_s < N (the first B precedes the last F), else the larger of the two counts. A span C is
// possible only if some k keeps busy_s + that idle <= C on every stage. Checked from the last stage
// up, the least admissible k_s is the best choice: it gives the least D_s, and every later stage's
// idle only grows with D_s. A schedule of span C is such a witness, so the least possible C is a
// bound; `fs` gets the k_s at it.
bool warm_up_admits(const Problem& pr, const std::vector<StageFacts>& facts, Ticks span, std::vector<int>* fs) {
  const int n = pairs_of(pr);
  Ticks d = 0;  // D_{s+1}
  for (int s = pr.p - 1; s >= 0; --s) {
    const Ticks tf = pr.t_f[s], room = span - facts[s].busy;
    const Ticks need = s == pr.p - 1 ? tf : d + tf + pr.hop(s, s + 1) + pr.t_b[s + 1] + pr.hop(s + 1, s);
    const int most = fs_before_first_b(pr, s);
    int k = -1;
    if (room >= facts[s].tail && n >= 2) {  // the first B before the last F: head + tail
      const Ticks least = (need - (room - facts[s].tail) + tf - 1) / tf;  // ceil, need > 0
      const Ticks pick = std::max<Ticks>(1, least);
      if (pick <= std::min(most, n - 1)) k = static_cast<int>(pick);
    }
    if (k < 0 && most >= n && std::max(std::max<Ticks>(0, need - n * tf), facts[s].tail) <= room) k = n;
    if (k < 0) return false;
    if (fs) (*fs)[static_cast<size_t>(s)] = k;
    d = std::max(need, k * tf);
  }
  return true;
}

// The least span from `from` up that warm_up_admits allows (see there); `fs` gets the F's before
// each stage's first B at it. `from` where none does (the problem has no schedule at all).
Ticks warm_up_span(const Problem& pr, const std::vector<StageFacts>& facts, Ticks from, std::vector<int>* fs) {
  fs->assign(static_cast<size_t>(pr.p), 1);
  Ticks hi = from;
  if (!warm_up_admits(pr, facts, from, nullptr)) {
    Ticks lo = from, step = 1;  // lo is refused; find an admitted hi by doubling steps
    for (hi = from + step; !warm_up_admits(pr, facts, hi, nullptr); hi = from + step) {
      if (step > kMaxExactQuanta) return from;
      lo = hi, step *= 2;
    }
    while (hi - lo > 1) {
      const Ticks mid = lo + (hi - lo) / 2;
      (warm_up_admits(pr, facts, mid, nullptr) ? hi : lo) = mid;
    }
  }
  warm_up_admits(pr, facts, hi, fs);
  return hi;
}

// Memory over time: at any instant the pairs a stage holds fit its limit L (taking, during an op,
// the memory before it when it frees and after it when it allocates). A pair (j, c) holds M_B from
// its F's start to its B's end, at least T_F + the round trip down and back + T_B, and M_W from
// then to its W's end, at least T_W (a fused BW holds M_B through its W part: min(M_B, M_W) covers
// both); all of it between the stage's first start and last end. So L * span_s >= m * sum over
// chunks of (M_B * lifespan + min(M_B, M_W) * T_W): a bound where memory, not
// compute, limits the stage (a few microbatches in flight against a long round trip).
Ticks area_bound(const Problem& pr, const Chains& chains, const std::vector<int>& chunk_vs, int s) {
  if (!pr.limit(s) || *pr.limit(s) <= 0) return 0;
  // In doubles (the products overflow 64 bits on large problems), rounded down with a tick to
  // spare against their rounding: a bound may be a little low, never high.
  double area = 0;
  for (int v : chunk_vs) {
    const Ticks lifespan = chains.round_trip(v, v) + pr.t_b[s];
    area += static_cast<double>(pr.mem_b[s]) * static_cast<double>(lifespan) +
            static_cast<double>(std::min(pr.mem_w[s], pr.mem_b[s])) * static_cast<double>(pr.t_w[s]);
  }
  const double span = area * pr.m / static_cast<double>(*pr.limit(s)) * (1 - 1e-12);
  return std::max<Ticks>(0, static_cast<Ticks>(std::floor(span)) - 1);
}

// Whether a placement gives every stage `chunks` distinct virtual stages 0..p*chunks-1.
bool placement_fits(const Problem& pr, const std::vector<std::vector<int>>& placement) {
  if (static_cast<int>(placement.size()) != pr.p) return false;
  std::vector<char> seen(static_cast<size_t>(pr.virtual_stages()), 0);
  for (const auto& row : placement) {
    if (static_cast<int>(row.size()) != pr.chunks) return false;
    for (int v : row) {
      if (v < 0 || v >= pr.virtual_stages() || seen[v]) return false;
      seen[v] = 1;
    }
  }
  return true;
}

}  // namespace

Ticks wall_lower_bound(const Problem& pr, const std::vector<std::vector<int>>& placement) {
  VirtualStageMap map(placement);
  // When the first forward can reach each virtual stage: the chain of T_F (and T_comm per hop) before it.
  std::vector<Ticks> reach(map.virtual_stages(), 0);
  for (int vs = 1; vs < map.virtual_stages(); ++vs) {
    int prev = map.stage_of[vs - 1];
    reach[vs] = reach[vs - 1] + pr.f_time(prev, map.chunk_of[vs - 1]) + pr.hop(prev, map.stage_of[vs]);
  }
  Ticks bound = 0;
  for (int st = 0; st < static_cast<int>(placement.size()); ++st) {
    Ticks start = -1;
    for (int vs : placement[st]) start = start < 0 ? reach[vs] : std::min(start, reach[vs]);
    bound = std::max(bound, start + pr.busy_time(st));
  }
  return bound;
}

SpanBounds span_lower_bounds(const Problem& pr) {
  if (!pr.placement.empty()) return span_lower_bounds(pr, pr.placement);
  // A chunked problem without a placement may be planned with any: only the busy bound holds.
  if (pr.chunks > 1) return span_lower_bounds(pr, {});
  return span_lower_bounds(pr, interleaved_placement(pr.p, 1));
}

SpanBounds span_lower_bounds(const Problem& pr, const std::vector<std::vector<int>>& placement) {
  if (pr.chunks_differ()) {
    // The bounds below take one figure per stage. With every chunk at its stage's least figures no
    // schedule costs more or needs more memory, so that problem's bounds hold here; the busy bound
    // takes the exact sums.
    SpanBounds b = span_lower_bounds(pr.least_chunks(), placement);
    for (int s = 0; s < pr.p; ++s) b.busy = std::max(b.busy, pr.busy_time(s));
    b.memory = std::max(b.memory, b.busy);
    b.best = b.busy, b.which = BoundSource::kBusy;
    if (b.memory > b.best) b.best = b.memory, b.which = BoundSource::kMemory;
    if (b.critical_path > b.best) b.best = b.critical_path, b.which = BoundSource::kCriticalPath;
    return b;
  }
  SpanBounds b;
  const int p = pr.p, n = pairs_of(pr);
  for (int s = 0; s < p; ++s) b.busy = std::max(b.busy, pr.busy_time(s));
  b.memory = b.busy;
  b.critical_path = 0;
  if (pr.m >= 1 && placement_fits(pr, placement)) {
    const VirtualStageMap map(placement);
    const Chains chains = chains_of(pr, map);
    std::vector<StageFacts> facts(p);
    for (int s = 0; s < p; ++s) {
      facts[s] = stage_facts(pr, map, chains, s);
      b.memory = std::max({b.memory, facts[s].busy + facts[s].idle, area_bound(pr, chains, placement[s], s)});
    }
    bool in_order = pr.chunks == 1;  // stage s runs virtual stage s
    for (int s = 0; s < p && in_order; ++s) in_order = placement[s][0] == s;
    if (in_order) b.warm_up = warm_up_span(pr, facts, b.busy, &b.warm_up_fs);
    // Critical path. Times are taken as if sigma_s = reach[lo_s] for the stage s being bounded.
    // last_b_end[v] bounds the end of the last B(v, .) from below, in that frame, using only
    // virtual stages u >= v: B(v, j) waits for B(v+1, j) (plus the hop), so the last B(v, .)
    // ends after the last B(v+1, .) has climbed down. At u = lo_t the last B of stage t (all its
    // F's, its other B's, the W's its memory forces and its forced idle before it) starts at
    // sigma_t + that much, and sigma_t - sigma_s >= reach[lo_t] - reach[lo_s] holds because
    // lo_t = u >= v >= lo_s; at the last virtual stage, B waits for its own F, which waits for
    // the forward chain from lo_s. So one pass from the last virtual stage down serves every
    // stage: stage s's span covers its last B(lo_s) and then that B's W.
    const int vs_count = map.virtual_stages();
    Ticks last_b_end = 0;
    for (int v = vs_count - 1; v >= 0; --v) {
      const int t = map.stage_of[v];
      Ticks own = v == vs_count - 1 ? chains.reach[v] + pr.t_f[t] : 0;
      if (v == facts[t].lo)
        own = std::max(own, chains.reach[v] + facts[t].idle + n * pr.t_f[t] + (n - 1) * pr.t_b[t] +
                                forced_ws_before_last_b(pr, t) * pr.t_w[t]);
      const Ticks from_above = v + 1 < vs_count ? last_b_end + chains.hop(pr, v + 1) : 0;
      last_b_end = std::max(own, from_above) + pr.t_b[t];
      if (v == facts[t].lo)
        b.critical_path = std::max(b.critical_path, last_b_end + pr.t_w[t] - chains.reach[v]);
    }
  }
  b.best = b.busy;
  b.which = BoundSource::kBusy;
  if (b.memory > b.best) b.best = b.memory, b.which = BoundSource::kMemory;
  if (b.critical_path > b.best) b.best = b.critical_path, b.which = BoundSource::kCriticalPath;
  if (b.warm_up > b.best) b.best = b.warm_up, b.which = BoundSource::kWarmUp;
  return b;
}

namespace {

constexpr std::pair<BoundSource, const char*> kBoundSources[] = {{BoundSource::kBusy, "busy"},
                                                                 {BoundSource::kMemory, "memory"},
                                                                 {BoundSource::kCriticalPath, "critical-path"},
                                                                 {BoundSource::kWarmUp, "warm-up"},
                                                                 {BoundSource::kRamp, "ramp"},
                                                                 {BoundSource::kCbc, "cbc"}};
constexpr std::pair<SolveStatus, const char*> kSolveStatuses[] = {{SolveStatus::kOptimal, "optimal"},
                                                                  {SolveStatus::kTimeLimit, "time_limit"},
                                                                  {SolveStatus::kLocalOptimum, "local_optimum"},
                                                                  {SolveStatus::kNotRun, "not_run"}};

template <class Enum, size_t N>
const char* name_in(const std::pair<Enum, const char*> (&table)[N], Enum value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "";
}
template <class Enum, size_t N>
std::vector<std::string> names_in(const std::pair<Enum, const char*> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& entry : table) out.emplace_back(entry.second);
  return out;
}
template <class Enum, size_t N>
std::optional<Enum> value_in(const std::pair<Enum, const char*> (&table)[N], std::string_view name) {
  for (const auto& [v, n] : table)
    if (name == n) return v;
  return std::nullopt;
}

}  // namespace

const char* bound_source_name(BoundSource source) { return name_in(kBoundSources, source); }
std::optional<BoundSource> parse_bound_source(std::string_view name) { return value_in(kBoundSources, name); }
std::vector<std::string> bound_source_names() { return names_in(kBoundSources); }
const char* solve_status_name(SolveStatus status) { return name_in(kSolveStatuses, status); }
std::optional<SolveStatus> parse_solve_status(std::string_view name) { return value_in(kSolveStatuses, name); }
std::vector<std::string> solve_status_names() { return names_in(kSolveStatuses); }

double bubble_rate_of(const Problem& pr, Ticks figure) {
  if (figure <= 0) return 0.0;
  Ticks busy = 0;
  for (int s = 0; s < pr.p; ++s) busy = std::max(busy, pr.busy_time(s));
  return static_cast<double>(figure - busy) / static_cast<double>(figure);
}

Ticks cost_lower_bound(const Problem& pr, Cost cost, const std::vector<std::vector<int>>& placement,
                       BoundSource* which, Ticks allreduce) {
  SpanBounds b = span_lower_bounds(pr, placement);
  Ticks best = b.best;
  BoundSource source = b.which;
  // Every span bound holds for the makespan and the wall clock too, which cover every stage's
  // span, and for the period: a stage's ops of one iteration lie between two of its steps. A
  // synchronous step makes the period a wall clock.
  const bool sync = allreduce >= 0 && !is_compute_cost(cost);
  if (cost == Cost::kMakespan || cost == Cost::kWall || sync) {
    Ticks ramp = wall_lower_bound(pr, placement);
    if (ramp > best) best = ramp, source = BoundSource::kRamp;
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
  r.status = cost_value <= best ? SolveStatus::kOptimal : SolveStatus::kNotRun;
  r.bubble_rate_bound = bubble_rate_of(pr, best);
  return r;
}

double relative_gap(Ticks cost, double bound) {
  if (cost <= 0) return 0.0;
  return std::max(0.0, (static_cast<double>(cost) - bound) / static_cast<double>(cost));
}

}  // namespace zbpp
