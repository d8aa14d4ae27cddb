// The greedy list scheduler under a per-stage memory budget, on the V or interleaved placement (see gen_v.h).
#include <algorithm>
#include <deque>
#include <limits>
#include <optional>

#include "core/deps.h"
#include "core/simulate.h"
#include "planner/gen_v.h"
#include "planner/gen_v_internal.h"

namespace zbpp {

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
        done_(static_cast<size_t>(kProducts) * vstages_ * m_, kNever), st_(p_), free_at_(p_, 0), key_(p_, 0),
        left_(p_, static_cast<size_t>(3) * chunks_ * m_) {
    for (int s = 0; s < p_; ++s) {
      st_[s].next_f.assign(chunks_, 0);
      st_[s].next_b.assign(chunks_, 0);
      Mem budget = static_cast<Mem>(opt.in_flight) * pr.mem_b[s];
      if (const auto limit = pr.limit(s)) budget = std::min(budget, *limit);
      st_[s].budget = budget;
    }
  }

  std::optional<Schedule> run(std::string* why, const Deadline& deadline) {
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
    for (size_t step = 0; left > 0; ++step) {
      // A run at p = 128 takes seconds: the deadline is looked at every few thousand steps.
      if (deadline.at && step % 4096 == 0 && deadline.passed()) {
        *why = kGreedyStopped;
        return std::nullopt;
      }
      // The unfinished stage free first (the lowest index of equals): a scan of a compact array,
      // which at p <= 128 beats a heap's bookkeeping.
      int s = 0;
      for (int k = 1; k < p_; ++k)
        if (key_[k] < key_[s]) s = k;
      if (free_at_[s] >= kNever) {
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
          set_free_at(s, next);
          continue;
        }
      }
      place(s, *op, &out);
      --left;
    }
    return out;
  }

 private:
  // free_at_[s], key_[s] and left_[s] live apart from the rest of a stage's state: the loops over
  // every stage (which is free first, the next event, who waits for nothing) read only them.
  struct StageState {
    Mem mem = 0, budget = 0;
    std::vector<int> next_f, next_b;  // [chunk]: the next microbatch
    std::deque<Op> pending_w;
    bool last_was_b = false;  // the last F or B this stage ran was a B (for VOrder::kAlternate)
  };

  // A finished stage (every op placed) keeps its free_at, an event for the others, but is never picked.
  void set_free_at(int s, Ticks t) {
    if (free_at_[s] >= kNever) --waiting_for_nothing_;
    if (t >= kNever) ++waiting_for_nothing_;
    free_at_[s] = t;
    key_[s] = left_[s] == 0 ? kFinished : t;
  }

  Ticks& done(Product what, int vs, int mb) { return done_[product_key(what, vs, mb, vstages_, m_)]; }

  // When `op` (the next of its kind on stage s) can start by its input; kNever when not yet known.
  Ticks ready(int s, const Op& op) {
    auto dep = dependency_of(op, s, map_);
    if (!dep) return 0;
    const Ticks at = done(dep->what, dep->vs, dep->mb);
    if (at >= kNever) return kNever;
    return at + arrival_latency(*dep, s, map_, pr_);
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
    const Ticks t = free_at_[s];
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
    const Ticks t = free_at_[s];
    Ticks next = kNever;
    auto consider = [&](const std::optional<Op>& op) {
      if (!op) return;
      Ticks at = ready(s, *op);
      if (at >= kNever) {
        auto dep = dependency_of(*op, s, map_);
        const int k = map_.stage_of[dep->vs];
        const Ticks made = dep->what == Product::Forward ? pr_.t_f[k] : pr_.t_b[k];
        at = std::max(t, free_at_[k]) + made + arrival_latency(*dep, s, map_, pr_);
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
    const Ticks t = free_at_[s];
    Ticks next = next_ready_after(s, t);
    for (int k = 0; k < p_; ++k)
      if (k != s && free_at_[k] > t) next = std::min(next, free_at_[k]);
    return next;
  }

  void place(int s, const Op& op, Schedule* out) {
    auto& st = st_[s];
    const Ticks start = std::max(free_at_[s], op.type == OpType::W ? Ticks{0} : ready(s, op));
    const Ticks end = start + op_duration(op, s, pr_);
    --left_[s];
    set_free_at(s, end);
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
    if (waiting_for_nothing_ > 0)
      for (int k = 0; k < p_; ++k)
        if (free_at_[k] >= kNever) set_free_at(k, end);
  }

  const Problem& pr_;
  VGreedyOptions opt_;
  int p_, m_, chunks_, vstages_;
  std::vector<std::vector<int>> placement_;
  VirtualStageMap map_;
  std::vector<Ticks> done_;
  std::vector<StageState> st_;
  static constexpr Ticks kFinished = std::numeric_limits<Ticks>::max();
  std::vector<Ticks> free_at_, key_;  // [stage]: when it is next free; that, or kFinished once finished
  std::vector<size_t> left_;          // [stage]: ops not yet placed
  int waiting_for_nothing_ = 0;       // stages whose free_at is kNever
};

}  // namespace

std::optional<Schedule> generate_greedy_on(const Problem& pr, const std::vector<std::vector<int>>& placement,
                                           const VGreedyOptions& options, std::string* why, const Deadline& deadline) {
  ChunkGreedy greedy(pr, placement, options);
  auto s = greedy.run(why, deadline);
  if (s) s->method = "v-greedy";
  return s;
}

std::optional<Schedule> generate_v_greedy(const Problem& pr, const VGreedyOptions& options, std::string* why,
                                          const Deadline& deadline) {
  return generate_greedy_on(pr, v_shape_placement(pr.p), options, why, deadline);
}

}  // namespace zbpp
