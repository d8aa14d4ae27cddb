// The swap polish the V schedules share (V-ZB, the V and interleaved searches), and the greedy's
// grid of knobs (see gen_v_internal.h).
#include <algorithm>

#include "core/deps.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "planner/gen_v.h"
#include "planner/gen_v_internal.h"

namespace zbpp {

namespace {

constexpr long long kPolishWork = 200'000'000;  // ops simulated by one polish at most (a few seconds)

// Whether two neighbouring ops of stage `stage` may trade places: not when the later waits for the
// earlier on this stage (F before its B, B before its W, the V's turn on the last stage: F chunk 0
// before F chunk 1 and B chunk 1 before B chunk 0 of one microbatch), nor two ops of one type and
// chunk (their microbatch order keeps the W's, and so the weights, in order).
bool may_swap(const Op& a, const Op& b, int stage, const VirtualStageMap& map) {
  if (a.type == b.type && a.chunk == b.chunk) return false;
  if (a.mb != b.mb) return true;
  if (a.chunk == b.chunk) return false;  // F, B, W of one microbatch and chunk keep their order
  auto dep = dependency_of(b, stage, map);
  return !(dep && !dep->remote && dep->mb == a.mb && map.vs(stage, a.chunk) == dep->vs);
}

// When each op of a simulated schedule could start by its input alone (its stage aside).
std::vector<std::vector<Ticks>> input_ready_times(const Schedule& s, const Problem& pr, const Timeline& t) {
  const VirtualStageMap map(s.placement);
  const int vstages = map.virtual_stages();
  std::vector<Ticks> made(static_cast<size_t>(kProducts) * vstages * s.m, 0);
  for (int st = 0; st < s.p; ++st)
    for (size_t i = 0; i < s.stages[st].size(); ++i) {
      const Op& op = s.stages[st][i];
      if (op.type == OpType::W) continue;
      const Product what = op.type == OpType::F ? Product::Forward : Product::InputGrad;
      made[product_key(what, map.vs(st, op.chunk), op.mb, vstages, s.m)] = t.ops[st][i].end;
    }
  std::vector<std::vector<Ticks>> ready(s.p);
  for (int st = 0; st < s.p; ++st)
    for (const Op& op : s.stages[st]) {
      auto dep = dependency_of(op, st, map);
      ready[st].push_back(dep ? made[product_key(dep->what, dep->vs, dep->mb, vstages, s.m)] +
                                    arrival_latency(*dep, st, map, pr)
                              : 0);
    }
  return ready;
}

}  // namespace

// Every knob combination at one budget.
std::vector<VGreedyOptions> knobs_at(int in_flight) {
  std::vector<VGreedyOptions> out;
  for (bool reserve_all : {false, true})
    for (bool deep : {true, false})
      for (int w = 0; w < 3; ++w)
        for (VOrder order : {VOrder::kBFirst, VOrder::kFFirst, VOrder::kAlternate}) {
        VGreedyOptions o;
        o.order = order;
        o.in_flight = in_flight;
        o.deep_first = deep;
        o.w_in_gaps_only = w == 1;
        o.w_after_b = w == 2;
        o.reserve_all = reserve_all;
        out.push_back(o);
      }
  return out;
}

// The largest peak activation memory of any stage.
Mem peak_memory_of(const Schedule& s, const Problem& pr) {
  std::vector<Diag> diags;
  auto timeline = simulate_timeline(s, pr, &diags);
  return timeline ? *std::max_element(timeline->peak_memory.begin(), timeline->peak_memory.end()) : 0;
}

Problem within_own_peak(const Schedule& s, const Problem& pr) {
  const Mem peak = peak_memory_of(s, pr);
  Problem kept = pr;
  if (kept.stage_mem_limits.empty()) kept.mem_limit = peak;
  for (Mem& limit : kept.stage_mem_limits) limit = std::min(limit, peak);
  return kept;
}

// Hill climbing by swaps of neighbouring ops (the paper's reordering, done on exact times): keeps a
// swap that lowers `cost` and keeps the memory limit; at most `passes` sweeps over all stages. A
// swap is tried only where the later op's input was there before the earlier op ended (else
// nothing can start sooner), and the simulations stop after about kPolishWork ops in all, so big
// problems stay fast.
bool improve_by_swaps(Schedule* s, const Problem& pr, Cost cost_kind, int passes, const Deadline& deadline) {
  const VirtualStageMap map(s->placement);
  Ticks best = simulate_cost(*s, pr, cost_kind);
  size_t ops_total = 0;
  for (const auto& stage : s->stages) ops_total += stage.size();
  long long work_left = kPolishWork;
  for (int pass = 0; pass < passes && work_left > 0; ++pass) {
    bool improved = false;
    std::vector<Diag> unused;
    auto timeline = simulate_timeline(*s, pr, &unused);
    if (!timeline) return true;
    auto ready = input_ready_times(*s, pr, *timeline);
    for (int st = 0; st < pr.p && work_left > 0; ++st) {
      auto& ops = s->stages[st];
      for (size_t i = 0; i + 1 < ops.size() && work_left > 0; ++i) {
        if (deadline.at && i % 64 == 0 && deadline.passed()) return false;  // each swap kept so far is an improvement
        if (ready[st][i + 1] >= timeline->ops[st][i].end || !may_swap(ops[i], ops[i + 1], st, map)) continue;
        std::swap(ops[i], ops[i + 1]);
        work_left -= static_cast<long long>(ops_total);
        const Ticks cost = simulate_cost(*s, pr, cost_kind);
        if (cost >= 0 && cost < best && validate_memory(*s, pr).empty() && validate_message_order(*s).empty()) {
          best = cost;
          improved = true;
          // The times moved: the filter reads them again.
          timeline = simulate_timeline(*s, pr, &unused);
          ready = input_ready_times(*s, pr, *timeline);
        } else {
          std::swap(ops[i], ops[i + 1]);
        }
      }
    }
    if (!improved) return true;
  }
  return true;
}


}  // namespace zbpp
