// V-shape generators and the V search (see gen_v.h).
#include "planner/gen_v.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <functional>
#include <limits>
#include <thread>

#include "core/deps.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "planner/gen_baseline.h"

namespace zbpp {

namespace {

Schedule empty_schedule_on(const Problem& pr, const std::vector<std::vector<int>>& placement, std::string method) {
  Schedule s;
  s.p = pr.p;
  s.m = pr.m;
  s.chunks = placement.empty() ? 1 : static_cast<int>(placement[0].size());
  s.placement = placement;
  s.method = std::move(method);
  s.stages.resize(pr.p);
  return s;
}

// The block's slots on stage i for F chunk 0, F chunk 1, B chunk 1, B chunk 0 of microbatch 0
// (microbatch j adds 6j). Every hop of a microbatch is at least one slot later than the one it
// waits for; the extra interval keeps the four ops of a stage on distinct slots modulo 6.
std::array<int, 4> block_slots(VBlock block, int p, int i) {
  if (block == VBlock::kMin) {
    // Every hop one slot: the lifespan on stage i is 4p-1-2i (chunk 0) + 2i+1 (chunk 1) = 4p slots.
    const int gap = p % 3 == 0 ? 2 : 0;
    return {i, 2 * p - 1 - i, 2 * p + gap + i, 4 * p + gap - 1 - i};
  }
  // Chunk 0's F's and chunk 1's B's two slots a hop: lifespan about 6p slots.
  const int gap = p % 2 == 0 ? 3 : 0;
  return {2 * i, 3 * p - 2 - i, 3 * p + gap + 2 * i - 1, 6 * p + gap - 2 - i};
}

constexpr int kSlotsPerMicrobatch = 6;  // F, F, B, B, W, W of the two chunks
constexpr Ticks kNever = std::numeric_limits<Ticks>::max() / 4;
constexpr int kSwapPasses = 4;  // sweeps of the swap polish; later sweeps rarely find more
constexpr long long kPolishWork = 200'000'000;  // ops simulated by one polish at most (a few seconds)

}  // namespace

Schedule generate_v_block(const Problem& pr, VBlock block) {
  Schedule s = empty_schedule_on(pr, v_shape_placement(pr.p), block == VBlock::kMin ? "v-min" : "v-half");
  const int p = pr.p, m = pr.m;
  for (int i = 0; i < p; ++i) {
    struct Slotted {
      long long slot;
      int order;  // ties (slots equal modulo the block) keep the block's op order
      Op op;
    };
    std::vector<Slotted> fb;
    fb.reserve(4 * static_cast<size_t>(m));
    const auto slots = block_slots(block, p, i);
    const std::array<Op, 4> kinds = {Op{OpType::F, 0, 0}, Op{OpType::F, 0, 1}, Op{OpType::B, 0, 1},
                                     Op{OpType::B, 0, 0}};
    for (int j = 0; j < m; ++j)
      for (int k = 0; k < 4; ++k) {
        Op op = kinds[k];
        op.mb = j;
        fb.push_back({slots[k] + static_cast<long long>(kSlotsPerMicrobatch) * j, k, op});
      }
    std::sort(fb.begin(), fb.end(),
              [](const Slotted& a, const Slotted& b) { return a.slot != b.slot ? a.slot < b.slot : a.order < b.order; });
    // W's take the free slots after their B's, first in first out; the rest follow the last B.
    auto& ops = s.stages[i];
    ops.reserve(6 * static_cast<size_t>(m));
    std::deque<Op> pending;
    long long slot = fb.empty() ? 0 : fb.front().slot;
    for (const auto& x : fb) {
      for (; slot < x.slot && !pending.empty(); ++slot) {
        ops.push_back(pending.front());
        pending.pop_front();
      }
      slot = std::max(slot, x.slot + 1);
      ops.push_back(x.op);
      if (x.op.type == OpType::B) pending.push_back({OpType::W, x.op.mb, x.op.chunk});
    }
    ops.insert(ops.end(), pending.begin(), pending.end());
  }
  return s;
}

std::string VGreedyOptions::name() const {
  std::string out = "in-flight " + std::to_string(in_flight);
  if (deep_first) out += ",deep-first";
  if (w_in_gaps_only) out += ",w-in-gaps";
  if (w_after_b) out += ",w-after-b";
  if (reserve_all) out += ",reserve-all";
  if (order == VOrder::kFFirst) out += ",f-first";
  if (order == VOrder::kAlternate) out += ",alternate";
  return out;
}

namespace {

// The greedy's state; one object per run. Any placement whose chunks a stage runs in rising virtual
// stage order (V and interleaved): a microbatch's F of chunk c follows its F of chunk c-1 there.
class ChunkGreedy {
 public:
  ChunkGreedy(const Problem& pr, const std::vector<std::vector<int>>& placement, const VGreedyOptions& opt)
      : pr_(pr), opt_(opt), p_(pr.p), m_(pr.m), chunks_(static_cast<int>(placement[0].size())),
        vstages_(chunks_ * pr.p), placement_(placement), map_(placement),
        done_(static_cast<size_t>(kProducts) * vstages_ * m_, kNever), st_(p_) {
    for (int s = 0; s < p_; ++s) {
      st_[s].next_f.assign(chunks_, 0);
      st_[s].next_b.assign(chunks_, 0);
      Mem budget = static_cast<Mem>(opt.in_flight) * pr.mem_b[s];
      if (pr.mem_limit) budget = std::min(budget, *pr.mem_limit);
      st_[s].budget = budget;
    }
  }

  std::optional<Schedule> run(std::string* why) {
    Schedule out = empty_schedule_on(pr_, placement_, "v-greedy");
    for (int s = 0; s < p_; ++s) {
      if (st_[s].budget < chunks_ * pr_.mem_b[s]) {
        *why = "stage " + std::to_string(s) + " cannot hold one microbatch's " + std::to_string(chunks_) +
               " chunk activations within " +
               std::to_string(opt_.in_flight) + " chunk activations and the memory limit";
        return std::nullopt;
      }
      out.stages[s].reserve(3 * static_cast<size_t>(chunks_) * m_);
    }
    size_t left = static_cast<size_t>(p_) * 3 * chunks_ * m_;  // F, B and W of every chunk;
    while (left > 0) {
      int s = -1;
      for (int k = 0; k < p_; ++k)
        if (!finished(k) && (s < 0 || st_[k].free_at < st_[s].free_at)) s = k;
      if (st_[s].free_at >= kNever) {
        *why = "the greedy found no runnable op (deadlock)";
        return std::nullopt;
      }
      auto op = pick(s);
      if (!op) {
        const Ticks next = next_event(s);
        // A W that waits for a gap runs now when nothing else can happen before it.
        if (next >= kNever && !st_[s].pending_w.empty()) {
          op = st_[s].pending_w.front();
        } else {
          st_[s].free_at = next;
          continue;
        }
      }
      place(s, *op, &out);
      --left;
    }
    return out;
  }

 private:
  struct StageState {
    Ticks free_at = 0;
    Mem mem = 0, budget = 0;
    std::vector<int> next_f, next_b;  // [chunk]: the next microbatch
    std::deque<Op> pending_w;
    bool last_was_b = false;  // the last F or B this stage ran was a B (for VOrder::kAlternate)
  };

  bool finished(int s) const {
    const auto& st = st_[s];
    return st.pending_w.empty() && std::all_of(st.next_b.begin(), st.next_b.end(), [&](int b) { return b >= m_; });
  }

  Ticks& done(Product what, int vs, int mb) { return done_[product_key(what, vs, mb, vstages_, m_)]; }

  // When `op` (the next of its kind on stage s) can start by its input; kNever when not yet known.
  Ticks ready(int s, const Op& op) {
    auto dep = dependency_of(op, s, map_);
    if (!dep) return 0;
    const Ticks at = done(dep->what, dep->vs, dep->mb);
    if (at >= kNever) return kNever;
    return at + (dep->remote ? pr_.t_comm : 0);
  }

  std::optional<Op> next_f(int s, int chunk) const {
    const auto& st = st_[s];
    if (st.next_f[chunk] >= m_) return std::nullopt;
    return Op{OpType::F, st.next_f[chunk], chunk};
  }
  std::optional<Op> next_b(int s, int chunk) const {
    const auto& st = st_[s];
    if (st.next_b[chunk] >= m_ || st.next_b[chunk] >= st.next_f[chunk]) return std::nullopt;
    return Op{OpType::B, st.next_b[chunk], chunk};
  }

  // Whether F `op` keeps within the budget: a chunk-0 F admits a microbatch, so room must remain
  // for its later chunks' F's (or, with reserve_all, for those of every microbatch admitted here).
  // With two chunks that is enough against deadlock: chunk-1 F's run in microbatch order, so the
  // smallest unfinished microbatch's finds the room the last admission left (all before it have
  // freed theirs). With more, a later microbatch's middle chunk can take that room first: there
  // the greedy may stall (it says so) and the search goes on with its other candidates.
  bool fits(int s, const Op& op) const {
    const auto& st = st_[s];
    const Mem b = pr_.mem_b[s];
    int reserved = chunks_ - 1;
    if (opt_.reserve_all)
      for (int c = 1; c < chunks_; ++c) reserved += st.next_f[0] - st.next_f[c];
    const Mem need = op.chunk == 0 ? b * (1 + reserved) : b;
    return st.mem + need <= st.budget;
  }

  std::optional<Op> pick(int s) {
    auto& st = st_[s];
    const Ticks t = st.free_at;
    if (opt_.w_after_b && !st.pending_w.empty()) return st.pending_w.front();
    // The earliest ready B.
    std::optional<Op> b_op;
    Ticks b_at = kNever;
    for (int c = chunks_ - 1; c >= 0; --c)
      if (auto b = next_b(s, c)) {
        Ticks at = ready(s, *b);
        if (at <= t && at < b_at) b_op = b, b_at = at;
      }
    // A ready F that fits: chunk 1's first (deep_first) or the earliest ready.
    std::optional<Op> f_op;
    Ticks f_at = kNever;
    bool memory_full = false;
    for (int k = 0; k < chunks_; ++k) {
      const int c = opt_.deep_first ? chunks_ - 1 - k : k;
      if (auto f = next_f(s, c)) {
        if (c > 0 && st.next_f[c] >= st.next_f[c - 1]) continue;  // its chunk c-1 has not run here
        Ticks at = ready(s, *f);
        if (at > t) continue;
        if (!fits(s, *f)) {
          memory_full = true;
          continue;
        }
        if (!f_op || (!opt_.deep_first && at < f_at)) f_op = f, f_at = at;
        if (opt_.deep_first) break;
      }
    }
    const bool f_first = opt_.order == VOrder::kFFirst || (opt_.order == VOrder::kAlternate && st.last_was_b);
    if (f_first && f_op) return f_op;
    if (b_op) return b_op;
    if (f_op) return f_op;
    if (st.pending_w.empty()) return std::nullopt;
    if (!opt_.w_in_gaps_only || memory_full) return st.pending_w.front();
    const Ticks next = next_arrival(s);
    if (next >= kNever || next - t >= pr_.t_w[s]) return st.pending_w.front();
    return std::nullopt;
  }

  // The earliest time an input of stage s's next F's and B's can arrive: known, or, where its
  // producer has not run yet, that producer starting when its stage is next free.
  Ticks next_arrival(int s) {
    const Ticks t = st_[s].free_at;
    Ticks next = kNever;
    auto consider = [&](const std::optional<Op>& op) {
      if (!op) return;
      Ticks at = ready(s, *op);
      if (at >= kNever) {
        auto dep = dependency_of(*op, s, map_);
        const int k = map_.stage_of[dep->vs];
        const Ticks made = dep->what == Product::Forward ? pr_.t_f[k] : pr_.t_b[k];
        at = std::max(t, st_[k].free_at) + made + (dep->remote ? pr_.t_comm : 0);
      }
      next = std::min(next, at);
    };
    for (int c = 0; c < chunks_; ++c) {
      consider(next_b(s, c));
      consider(next_f(s, c));
    }
    return next;
  }

  // The earliest known time after `t` when an input of stage s's next F's and B's arrives. An op
  // ready by t but held by memory is no event: the stage waits for another stage's op instead.
  Ticks next_ready_after(int s, Ticks t) {
    Ticks next = kNever;
    auto consider = [&](const std::optional<Op>& op) {
      if (!op) return;
      const Ticks at = ready(s, *op);
      if (at > t) next = std::min(next, at);
    };
    for (int c = 0; c < chunks_; ++c) {
      consider(next_b(s, c));
      consider(next_f(s, c));
    }
    return next;
  }

  // Where an idle stage looks again: when its input arrives or another stage finishes an op.
  Ticks next_event(int s) {
    const Ticks t = st_[s].free_at;
    Ticks next = next_ready_after(s, t);
    for (int k = 0; k < p_; ++k)
      if (k != s && st_[k].free_at > t) next = std::min(next, st_[k].free_at);
    return next;
  }

  void place(int s, const Op& op, Schedule* out) {
    auto& st = st_[s];
    const Ticks start = std::max(st.free_at, op.type == OpType::W ? Ticks{0} : ready(s, op));
    const Ticks end = start + op_duration(op, s, pr_);
    st.free_at = end;
    st.mem += memory_delta(op, s, pr_);
    const int vs = map_.vs(s, op.chunk);
    switch (op.type) {
      case OpType::F:
        ++st.next_f[op.chunk];
        st.last_was_b = false;
        done(Product::Forward, vs, op.mb) = end;
        break;
      case OpType::B:
        ++st.next_b[op.chunk];
        st.last_was_b = true;
        done(Product::InputGrad, vs, op.mb) = end;
        st.pending_w.push_back({OpType::W, op.mb, op.chunk});
        break;
      default:
        st.pending_w.pop_front();
    }
    out->stages[s].push_back(op);
    // Stages that saw nothing to wait for look again when this op's output is there.
    for (auto& other : st_)
      if (other.free_at >= kNever) other.free_at = end;
  }

  const Problem& pr_;
  VGreedyOptions opt_;
  int p_, m_, chunks_, vstages_;
  std::vector<std::vector<int>> placement_;
  VirtualStageMap map_;
  std::vector<Ticks> done_;
  std::vector<StageState> st_;
};

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

// The largest peak activation memory of any stage.
Mem peak_memory_of(const Schedule& s, const Problem& pr) {
  std::vector<Diag> diags;
  auto timeline = simulate_timeline(s, pr, &diags);
  return timeline ? *std::max_element(timeline->peak_memory.begin(), timeline->peak_memory.end()) : 0;
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
                                    (dep->remote ? pr.t_comm : 0)
                              : 0);
    }
  return ready;
}

// Hill climbing by swaps of neighbouring ops (the paper's reordering, done on exact times): keeps a
// swap that lowers `cost` and keeps the memory limit; at most `passes` sweeps over all stages. A
// swap is tried only where the later op's input was there before the earlier op ended (else
// nothing can start sooner), and the simulations stop after about kPolishWork ops in all, so big
// problems stay fast.
void improve_by_swaps(Schedule* s, const Problem& pr, Cost cost_kind, int passes) {
  const VirtualStageMap map(s->placement);
  Ticks best = simulate_cost(*s, pr, cost_kind);
  size_t ops_total = 0;
  for (const auto& stage : s->stages) ops_total += stage.size();
  long long work_left = kPolishWork;
  for (int pass = 0; pass < passes && work_left > 0; ++pass) {
    bool improved = false;
    std::vector<Diag> unused;
    auto timeline = simulate_timeline(*s, pr, &unused);
    if (!timeline) return;
    auto ready = input_ready_times(*s, pr, *timeline);
    for (int st = 0; st < pr.p && work_left > 0; ++st) {
      auto& ops = s->stages[st];
      for (size_t i = 0; i + 1 < ops.size() && work_left > 0; ++i) {
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
    if (!improved) return;
  }
}

}  // namespace

std::optional<Schedule> generate_greedy_on(const Problem& pr, const std::vector<std::vector<int>>& placement,
                                           const VGreedyOptions& options, std::string* why) {
  ChunkGreedy greedy(pr, placement, options);
  auto s = greedy.run(why);
  if (s) s->method = "v-greedy";
  return s;
}

std::optional<Schedule> generate_v_greedy(const Problem& pr, const VGreedyOptions& options, std::string* why) {
  return generate_greedy_on(pr, v_shape_placement(pr.p), options, why);
}

std::optional<Schedule> generate_v_zb(const Problem& pr, std::string* why) {
  // 1F1B's activation memory, without the problem's limit (validation checks that, as for zb-v).
  Problem unlimited = pr;
  unlimited.mem_limit.reset();
  std::optional<Schedule> best;
  Ticks best_span = kNever;
  std::vector<std::string> failures;
  // A candidate counts when every stage keeps within 2p chunk activations (1F1B's p microbatches).
  auto consider = [&](std::optional<Schedule> s, const std::string& name, const std::string& failed) {
    if (!s) {
      failures.push_back(name + ": " + failed);
      return;
    }
    std::vector<Diag> unused;
    auto t = simulate_timeline(*s, unlimited, &unused);
    if (!t) {
      failures.push_back(name + ": " + format_diags(unused));
      return;
    }
    for (int st = 0; st < pr.p; ++st)
      if (t->peak_memory[st] > 2 * pr.p * pr.mem_b[st]) {
        failures.push_back(name + ": stage " + std::to_string(st) + " holds more than 2p chunk activations");
        return;
      }
    if (t->span < best_span) best = std::move(s), best_span = t->span;
  };
  for (const auto& o : knobs_at(2 * pr.p)) {
    std::string failed;
    auto s = generate_v_greedy(unlimited, o, &failed);
    consider(std::move(s), "greedy " + o.name(), failed);
  }
  // The handcrafted orders at the same memory join: the greedy alone trails them where the ops'
  // times differ (its choices are local), and the polish below starts from the best of all.
  consider(generate_zb_v(unlimited), "zb-v", "");
  std::string err;
  auto dual = generate_dualpipe_v(unlimited, &err);
  consider(std::move(dual), "dualpipe-v", err);
  if (!best) {
    *why = "v-zb: no candidate keeps within 1F1B's activation memory (" + failures.front() + ")";
    return std::nullopt;
  }
  // Polished within the memory it kept (the paper's V-ZB is the greedy's order, reordered).
  Problem kept = unlimited;
  kept.mem_limit = peak_memory_of(*best, unlimited);
  improve_by_swaps(&*best, kept, Cost::kSpan, kSwapPasses);
  best->method = "v-zb";
  return best;
}

namespace {

// The greedy on `placement` over every budget from one microbatch's chunk activations up to what
// the memory limit allows (at most 2p per chunk) and every knob, the seeds beside it; the winner
// polished by swaps. `shape` names the placement in the message when nothing fits.
std::optional<SearchResult> search_placement(const Problem& pr, const std::vector<std::vector<int>>& placement,
                                             std::vector<std::pair<std::string, std::optional<Schedule>>> seeds,
                                             const std::string& shape, std::vector<Diag>* diags, Cost cost_kind,
                                             const CostFn& true_cost) {
  const int chunks = static_cast<int>(placement[0].size());
  Mem smallest_b = pr.mem_b.empty() ? 1 : *std::min_element(pr.mem_b.begin(), pr.mem_b.end());
  int most = 2 * chunks * pr.p;
  if (pr.mem_limit && smallest_b > 0)
    most = static_cast<int>(std::min<Mem>(most, *pr.mem_limit / smallest_b));
  std::optional<SearchResult> best;
  int candidates = 0, feasible = 0;
  // A candidate within the memory limit: its cost, or -1.
  // (Interleaved: also one whose stages take their inputs in the order sent, or it cannot be lowered.)
  auto cost_of_candidate = [&](const Schedule& s) -> Ticks {
    if (!validate_memory(s, pr).empty() || !validate_message_order(s).empty()) return -1;
    return true_cost ? true_cost(s) : simulate_cost(s, pr, cost_kind);
  };
  auto consider = [&](Schedule s, const std::string& name) {
    ++candidates;
    const Ticks cost = cost_of_candidate(s);
    if (cost < 0) return;
    ++feasible;
    if (best && cost >= best->cost) return;
    const Ticks span = simulate_span(s, pr);
    best = SearchResult{std::move(s), span, cost, name, 0, 0};
  };
  // The greedy's grid, in two threads on big problems: each keeps its best (ties to the lower grid
  // index), so the result never depends on which thread ran which point.
  std::vector<VGreedyOptions> grid;
  for (int in_flight = chunks; in_flight <= most; ++in_flight)
    for (const auto& o : knobs_at(in_flight)) grid.push_back(o);
  struct Worker {
    std::optional<Schedule> best;
    Ticks best_cost = -1;
    size_t best_index = 0;
    int feasible = 0;
  };
  const int threads = std::clamp(pr.p * pr.m >= 1024 ? 2 : 1, 1, std::max<int>(1, static_cast<int>(grid.size())));
  std::vector<Worker> workers(threads);
  std::atomic<size_t> next_point{0};
  auto work = [&](Worker& wk) {
    for (size_t k; (k = next_point.fetch_add(1)) < grid.size();) {
      std::string why;
      auto s = generate_greedy_on(pr, placement, grid[k], &why);
      if (!s) continue;
      const Ticks cost = cost_of_candidate(*s);
      if (cost < 0) continue;
      ++wk.feasible;
      if (wk.best_cost < 0 || cost < wk.best_cost || (cost == wk.best_cost && k < wk.best_index))
        wk.best = std::move(s), wk.best_cost = cost, wk.best_index = k;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, std::ref(workers[t]));
  work(workers[0]);
  for (auto& th : pool) th.join();
  const Worker* winner = nullptr;
  for (const Worker& wk : workers) {
    feasible += wk.feasible;
    if (wk.best_cost >= 0 && (!winner || wk.best_cost < winner->best_cost ||
                              (wk.best_cost == winner->best_cost && wk.best_index < winner->best_index)))
      winner = &wk;
  }
  candidates += static_cast<int>(grid.size());
  if (winner)
    best = SearchResult{*winner->best, simulate_span(*winner->best, pr), winner->best_cost,
                        grid[winner->best_index].name(), 0, 0};
  for (auto& [name, seed] : seeds)
    if (seed) consider(std::move(*seed), name);
  if (best) {
    // Polish the winner by swaps, ranked by the compute cost; kept only if its true cost agrees.
    Schedule polished = best->schedule;
    improve_by_swaps(&polished, pr, is_compute_cost(cost_kind) ? cost_kind : Cost::kSpan, kSwapPasses);
    const Ticks cost = true_cost ? true_cost(polished) : simulate_cost(polished, pr, cost_kind);
    if (cost >= 0 && cost < best->cost) {
      best->span = simulate_span(polished, pr);
      best->cost = cost;
      best->winner += ", polished by swaps";
      best->schedule = std::move(polished);
    }
  }
  if (!best) {
    const std::string n = std::to_string(chunks);
    diags->push_back({"", "", -1, -1, "",
                      "no " + shape + " schedule fits the memory limit (it must hold at least one microbatch's " + n +
                          " chunk activations, " + n + " M_B of a chunk, on every stage): raise --mem-limit"});
    return std::nullopt;
  }
  best->candidates = candidates;
  best->feasible = feasible;
  best->schedule.method = "heuristic";
  return best;
}

// 1F1B-I with each fused BW split into its B and W, W right after: the same order and memory, but
// the swap polish may then move the W's into gaps.
std::optional<Schedule> split_backwards(std::optional<Schedule> s) {
  if (!s) return s;
  for (auto& ops : s->stages) {
    std::vector<Op> split;
    split.reserve(ops.size() * 3 / 2);
    for (const Op& op : ops) {
      if (op.type != OpType::BW) {
        split.push_back(op);
        continue;
      }
      split.push_back({OpType::B, op.mb, op.chunk});
      split.push_back({OpType::W, op.mb, op.chunk});
    }
    ops = std::move(split);
  }
  s->method += " split";
  return s;
}

}  // namespace

std::optional<SearchResult> search_v(const Problem& pr, std::vector<Diag>* diags, Cost cost_kind,
                                     const CostFn& true_cost) {
  std::vector<std::pair<std::string, std::optional<Schedule>>> seeds;
  seeds.emplace_back("v-min", generate_v_block(pr, VBlock::kMin));
  seeds.emplace_back("v-half", generate_v_block(pr, VBlock::kHalf));
  std::string stalled, err;
  seeds.emplace_back("v-zb", generate_v_zb(pr, &stalled));
  seeds.emplace_back("zb-v", generate_zb_v(pr));
  seeds.emplace_back("dualpipe-v", generate_dualpipe_v(pr, &err));
  return search_placement(pr, v_shape_placement(pr.p), std::move(seeds), "V-shape", diags, cost_kind, true_cost);
}

std::optional<SearchResult> search_interleaved(const Problem& pr, std::vector<Diag>* diags, Cost cost_kind,
                                               const CostFn& true_cost) {
  std::vector<std::pair<std::string, std::optional<Schedule>>> seeds;
  std::string err;
  auto interleaved = generate_1f1b_interleaved(pr, &err);  // where m is a multiple of p
  seeds.emplace_back("1f1b-i split", split_backwards(interleaved));
  seeds.emplace_back("1f1b-i", std::move(interleaved));
  return search_placement(pr, interleaved_placement(pr.p, pr.chunks), std::move(seeds), "interleaved", diags,
                          cost_kind, true_cost);
}

}  // namespace zbpp
