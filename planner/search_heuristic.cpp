// The §3.1 heuristic and its grid search (see search_heuristic.h). Ops are placed round by round:
// round i places (at most) one F per stage, top to bottom, then B of microbatch i, bottom to top,
// so every op's input is already placed and its exact time is known (TimelineBuilder).
#include "planner/search_heuristic.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>

#include "core/bounds.h"
#include "core/deps.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "planner/gen_baseline.h"

namespace zbpp {

std::string HeuristicOptions::name() const {
  std::string out;
  auto add = [&out](bool on, const char* what) {
    if (on) out += (out.empty() ? "" : ",") + std::string(what);
  };
  add(allow_bubble_before_first_b, "bubble-before-b");
  add(prioritize_b, "prioritize-b");
  add(no_bubble_greedy, "greedy-w");
  add(!warm_up_fs.empty(), "warm-up-bound");
  return out.empty() ? "plain" : out;
}

namespace {

constexpr Mem kUnlimited = std::numeric_limits<Mem>::max() / 4;

std::vector<Mem> limits_of(const Problem& pr) {
  std::vector<Mem> out;
  for (int s = 0; s < pr.p; ++s) out.push_back(pr.limit(s).value_or(kUnlimited));
  return out;
}

class Heuristic {
 public:
  explicit Heuristic(const Problem& pr)
      : pr_(pr), p_(pr.p), m_(pr.m), limit_(limits_of(pr)),
        tl_(pr, interleaved_placement(pr.p, 1), pr.m), order_(pr.p), kept_(pr.p) {
    for (auto* lists : {&order_, &kept_})
      for (auto& types : *lists) types.reserve(3 * static_cast<size_t>(m_));
  }

  // Builds the schedule for `opt` (reusing this object's memory); false with the reason when the
  // memory limit cannot be kept.
  bool run(const HeuristicOptions& opt, std::string* why) {
    opt_ = opt;
    tl_.reset();
    for (auto& types : order_) types.clear();
    for (auto* v : {&f_, &b_, &w_}) v->assign(p_, 0);
    mem_.assign(p_, 0);
    bubble_.assign(p_, 0);
    max_bubble_ = 0;
    broken_.clear();
    pruned_ = false;
    first_start_ = std::numeric_limits<Ticks>::max();
    left_.resize(p_);
    for (int j = 0; j < p_; ++j) left_[j] = m_ * (pr_.t_f[j] + pr_.t_b[j] + pr_.t_w[j]);
    for (int i = 0; i < m_; ++i) {
      if (i == 0 ? !warm_up() : !steady_round(i)) {
        *why = why_;
        return false;
      }
      if (pruned_) {
        *why = "its cost already exceeds the best candidate's";
        return false;
      }
    }
    for (int j = 0; j < p_; ++j)
      while (w_[j] < b_[j]) put(j, OpType::W);
    if (!broken_.empty()) *why = broken_;
    return broken_.empty();
  }

  /// The exact span of what was placed: TimelineBuilder applies the simulator's rule as it goes.
  Ticks span() const { return tl_.span(); }
  Ticks cost(Cost cost) const { return tl_.cost(cost); }

  /// From the next run() on, stops a run as soon as its `cost` (a compute cost) is sure to exceed
  /// `limit` (none when negative): see put().
  void prune_above(Ticks limit, Cost cost) {
    prune_above_ = limit;
    prune_cost_ = cost;
  }
  /// Whether the last run() stopped that way.
  bool pruned() const { return pruned_; }

  /// Keeps what the last run() placed, with its figures (the next run records in other buffers).
  void keep() {
    order_.swap(kept_);
    kept_span_ = tl_.span();
  }
  Ticks kept_span() const { return kept_span_; }

  /// The schedule keep() kept, and the one the last run() placed.
  Schedule kept_schedule() const { return schedule_of(kept_); }
  Schedule last_schedule() const { return schedule_of(order_); }

 private:
  /// Each stage's F's, B's and W's in microbatch order, in the order put() placed them.
  template <class Order>
  Schedule schedule_of(const Order& order) const {
    Schedule s;
    s.p = p_;
    s.m = m_;
    s.chunks = 1;
    s.placement = interleaved_placement(p_, 1);
    s.method = "heuristic";
    s.stages.resize(p_);
    for (int j = 0; j < p_; ++j) {
      int next[3] = {0, 0, 0};  // F, B, W
      s.stages[j].reserve(order[j].size());
      for (std::uint8_t t : order[j]) {
        OpType type = static_cast<OpType>(t);
        s.stages[j].push_back(Op{type, next[type == OpType::F ? 0 : type == OpType::B ? 1 : 2]++, 0});
      }
    }
    return s;
  }

  Mem delta(OpType t, int j) const { return memory_delta(Op{t, 0, 0}, j, pr_); }
  Ticks max_bubble() const { return max_bubble_; }
  int pending_w(int j) const { return b_[j] - w_[j]; }

  // Places the next op of `type` on stage j. Idle time before it counts as bubble once the stage
  // has started (its first F).
  [[gnu::always_inline]] void put(int j, OpType type) {
    int& counter = type == OpType::F ? f_[j] : type == OpType::B ? b_[j] : w_[j];
    Op op{type, counter, 0};
    Ticks before = tl_.stage_end(j);
    Ticks end = tl_.append(j, op);
    if (end < 0) {  // the round structure guarantees inputs; reaching here is a bug, not a user error
      broken_ = "internal error: " + op_short(op) + " on stage " + std::to_string(j) + " placed before its input";
      ++counter;  // still advance, so every loop that places ops ends; the candidate is discarded
      return;
    }
    // The order is all a stage's list holds: each kind runs in microbatch order (kept_schedule).
    order_[j].push_back(static_cast<std::uint8_t>(type));
    const Ticks duration = op_duration(op, j, pr_);
    if (f_[j] > 0) {
      bubble_[j] += end - (before + duration);
      max_bubble_ = std::max(max_bubble_, bubble_[j]);
    }
    mem_[j] += delta(type, j);
    ++counter;
    // The stage still has `left_` of work, which can only end later than now: its span will be at
    // least (end + left - its start), the makespan at least (end + left - the first start).
    left_[j] -= duration;
    first_start_ = std::min(first_start_, end - duration);
    if (prune_above_ >= 0) {
      const Ticks from = prune_cost_ == Cost::kMakespan ? first_start_ : tl_.stage_start(j);
      if (end + left_[j] - from > prune_above_) pruned_ = true;
    }
  }

  // Runs W's until `extra` more memory fits; false (with the reason) when no W is left to run.
  [[gnu::always_inline]] bool make_room(int j, Mem extra, const char* for_what) {
    while (mem_[j] + extra > limit_[j]) {
      if (pending_w(j) == 0) {
        why_ = "stage " + std::to_string(j) + " cannot fit " + for_what + " under the memory limit " +
               format_quanta(limit_[j]) + " (it holds " + format_quanta(mem_[j]) + " with no W left to free memory)";
        return false;
      }
      put(j, OpType::W);
    }
    return true;
  }

  // Fills the idle time until `input_at` with W's: every W that fits whole, then one more W when
  // the remaining gap would raise the largest cumulative bubble (or always, with greedy W).
  void fill_with_w(int j, Ticks input_at) {
    while (pending_w(j) > 0 && tl_.stage_end(j) + pr_.t_w[j] <= input_at) put(j, OpType::W);
    if (pending_w(j) > 0 && tl_.stage_end(j) < input_at) {
      bool raises_max = input_at - tl_.stage_end(j) > max_bubble() - bubble_[j];
      if (raises_max || opt_.no_bubble_greedy) put(j, OpType::W);
    }
  }

  // Round 0: one F on every stage, then as many extra F's as fit in front of each stage's first B
  // (estimated from the bottom up), strictly fewer on each later stage, then B0 bottom to top.
  bool warm_up() {
    for (int j = 0; j < p_; ++j) {
      if (!make_room(j, delta(OpType::F, j), "its first F")) return false;
      put(j, OpType::F);
    }
    std::vector<int> extra(p_, 0);
    Ticks first_b_end = tl_.produced_at(Product::Forward, p_ - 1, 0) + pr_.t_b[p_ - 1];
    for (int j = p_ - 2; j >= 0; --j) {
      Ticks clock = tl_.stage_end(j);
      Mem mem = mem_[j];
      Ticks b_input = first_b_end + pr_.hop(j + 1, j);
      while (f_[j] + extra[j] < m_ && mem + delta(OpType::F, j) <= limit_[j]) {
        bool stop = !opt_.warm_up_fs.empty()         ? f_[j] + extra[j] >= opt_.warm_up_fs[static_cast<size_t>(j)]
                    : opt_.allow_bubble_before_first_b ? clock + pr_.t_f[j] > b_input
                                                       : clock >= b_input;
        if (stop) break;
        clock += pr_.t_f[j];
        mem += delta(OpType::F, j);
        ++extra[j];
      }
      first_b_end = std::max(clock, b_input) + pr_.t_b[j];
    }
    // Each stage keeps strictly fewer F's than the one before it, unless both have all m. (Capping
    // only while below m, as the reference does, can leave a stage ahead of its predecessor.)
    for (int j = 1; j < p_; ++j) {
      int before = f_[j - 1] + extra[j - 1];
      auto too_many = [&] {
        int mine = f_[j] + extra[j];
        return mine > before || (mine == before && before < m_);
      };
      while (extra[j] > 0 && too_many()) --extra[j];
    }
    for (int j = 0; j < p_; ++j)
      for (int k = 0; k < extra[j]; ++k) put(j, OpType::F);
    return place_backwards(0);
  }

  // Round i >= 1: decide which stages run an F, place them top to bottom, then B_i bottom to top.
  bool steady_round(int i) {
    std::vector<int>& wants_f = wants_f_;
    wants_f.assign(p_, 0);
    for (int j = 0; j < p_; ++j) {
      if (f_[j] >= m_) continue;
      wants_f[j] = 1;
      if (opt_.prioritize_b && j + 1 < p_ && f_[j] >= f_[j + 1] + 2) wants_f[j] = f_worth_it(j) ? 1 : 0;
    }
    // A stage runs an F only if the next one does, so each stage stays at least one F ahead.
    for (int j = p_ - 2; j >= 0; --j) wants_f[j] = std::min(wants_f[j], wants_f[j + 1]);
    for (int j = 0; j < p_; ++j) {
      if (!wants_f[j]) continue;
      if (!make_room(j, delta(OpType::F, j), "another F")) return false;
      if (j > 0) fill_with_w(j, tl_.input_ready(j, Op{OpType::F, f_[j], 0}));
      put(j, OpType::F);
    }
    return place_backwards(i);
  }

  // With prioritize_b, a stage two or more F's ahead of the next skips its F when running it
  // would delay the B that the next stage will soon send back.
  bool f_worth_it(int j) const {
    Ticks next_b_input = tl_.stage_end(j + 1) + pr_.t_f[j + 1] + pr_.t_b[j + 1] + pr_.hop(j + 1, j);
    Ticks now = tl_.stage_end(j);
    if (now >= next_b_input) return false;
    Ticks w_time = 0;
    Mem mem = mem_[j] + delta(OpType::F, j);
    for (int k = 0; mem > limit_[j] && k < pending_w(j); ++k) {
      mem += delta(OpType::W, j);
      w_time += pr_.t_w[j];
    }
    if (now + pr_.t_f[j] + w_time <= next_b_input) return true;
    return next_b_input - now > max_bubble() - bubble_[j];
  }

  // B of microbatch i on every stage, last to first, with W's in the gaps. Stage 0's B feeds no
  // one, so once it has run all its F's it runs its pending W's first.
  bool place_backwards(int i) {
    for (int j = p_ - 1; j >= 0; --j) {
      if (!make_room(j, delta(OpType::B, j), "a B")) return false;
      if (j + 1 < p_) fill_with_w(j, tl_.input_ready(j, Op{OpType::B, i, 0}));
      if (j == 0 && f_[0] >= m_)
        while (pending_w(0) > 0) put(0, OpType::W);
      put(j, OpType::B);
    }
    return true;
  }

  const Problem& pr_;
  HeuristicOptions opt_;
  int p_, m_;
  std::vector<Mem> limit_;  // [stage]
  TimelineBuilder tl_;
  std::vector<int> f_, b_, w_;  // next microbatch of each kind, per stage
  std::vector<Mem> mem_;
  std::vector<Ticks> bubble_;   // cumulative idle time per stage since its first F
  Ticks max_bubble_ = 0;        // max of bubble_, kept as bubbles only grow
  std::vector<int> wants_f_;    // per stage, this round: run an F?
  std::string why_;
  std::string broken_;          // set when an op could not be placed: the candidate is discarded
  // Each stage's op types in order, this run's and the one keep() kept: a byte per op (a full Op
  // list per candidate cost more in fresh pages than the search itself).
  std::vector<std::vector<std::uint8_t>> order_, kept_;
  Ticks kept_span_ = 0;
  Ticks prune_above_ = -1;      // see prune_above()
  Cost prune_cost_ = Cost::kSpan;
  bool pruned_ = false;
  std::vector<Ticks> left_;     // per stage, the busy time of the ops not yet placed
  Ticks first_start_ = 0;       // the earliest start placed
};

}  // namespace

namespace {
std::string chunks_refused(const Problem& problem) {
  return "the heuristic plans one chunk per stage; the problem has chunks = " + std::to_string(problem.chunks);
}
}  // namespace

std::optional<Schedule> heuristic_schedule(const Problem& problem, const HeuristicOptions& options, std::string* why) {
  if (problem.chunks != 1) {
    *why = chunks_refused(problem);
    return std::nullopt;
  }
  Heuristic h(problem);
  if (!h.run(options, why)) return std::nullopt;
  h.keep();
  return h.kept_schedule();
}

namespace {
// Handcrafted orders that join the search as candidates, in tie-breaking order.
constexpr Schedule (*kSeeds[])(const Problem&) = {generate_zb_h1, generate_zb_h2, generate_1f1b};
}  // namespace

namespace {

// One thread's share of the heuristic's grid and seeds: its workspace and the best it found.
struct GridWorker {
  std::unique_ptr<Heuristic> space;
  Ticks best_cost = -1;
  size_t best_index = 0;
  int feasible = 0;
  int pruned = 0;
  std::string first_why;
  std::optional<Schedule> best_seed;  // the best handcrafted seed this worker tried
  Ticks best_seed_cost = -1;
  size_t best_seed_index = 0;
};

// The search's result from its workers: the best grid point or, where cheaper, the best seed (ties
// to the lower grid index, and to the earlier seed); nothing, with the first point's failure, when
// nothing fits.
std::optional<SearchResult> best_of(std::vector<GridWorker>& workers, const std::vector<HeuristicOptions>& grid,
                                    const Problem& problem, std::vector<Diag>* diags) {
  SearchResult result;
  result.candidates = static_cast<int>(grid.size() + std::size(kSeeds));
  // The best seed over all workers; ties go to the earlier seed in kSeeds order.
  std::optional<Schedule> best_seed;
  Ticks best_seed_cost = -1;
  size_t best_seed_index = 0;
  for (GridWorker& wk : workers) {
    if (wk.best_seed_cost < 0) continue;
    if (best_seed_cost < 0 || wk.best_seed_cost < best_seed_cost ||
        (wk.best_seed_cost == best_seed_cost && wk.best_seed_index < best_seed_index)) {
      best_seed_cost = wk.best_seed_cost;
      best_seed_index = wk.best_seed_index;
      best_seed = std::move(wk.best_seed);
    }
  }
  GridWorker* winner = nullptr;
  for (GridWorker& wk : workers) {
    result.feasible += wk.feasible;
    result.pruned += wk.pruned;
    if (wk.best_cost < 0) continue;
    if (!winner || wk.best_cost < winner->best_cost ||
        (wk.best_cost == winner->best_cost && wk.best_index < winner->best_index))
      winner = &wk;
  }
  if (!winner && !best_seed) {
    diags->push_back({"", "", -1, -1, "", "no heuristic schedule fits: " + workers[0].first_why});
    return std::nullopt;
  }
  if (best_seed && (!winner || best_seed_cost < winner->best_cost)) {
    result.winner = "handcrafted " + best_seed->method;
    result.cost = best_seed_cost;
    result.span = simulate_span(*best_seed, problem);
    result.schedule = std::move(*best_seed);
    result.schedule.method = "heuristic";
    return result;
  }
  result.schedule = winner->space->kept_schedule();
  result.cost = winner->best_cost;
  result.span = winner->space->kept_span();
  result.winner = grid[winner->best_index].name();
  return result;
}

}  // namespace

std::vector<HeuristicOptions> heuristic_grid_points(const Problem& problem) {
  std::vector<HeuristicOptions> grid;
  for (bool a : {true, false})
    for (bool b : {true, false})
      for (bool c : {true, false}) grid.push_back({a, b, c, {}});
  // Last, so ties keep the switches' schedules: the warm-up the warm-up bound's witness runs
  // (bounds.h). Where the estimate leaves the idle before each first B growing up the pipeline,
  // one F more on a few stages spreads it; on Table 5's 2p cells this meets the bound.
  grid.push_back({true, true, true, span_lower_bounds(problem).warm_up_fs});
  return grid;
}

std::optional<SearchResult> search_heuristic(const Problem& problem, std::vector<Diag>* diags, int threads,
                                             Cost cost_kind, const CostFn& true_cost) {
  if (problem.chunks != 1) {
    diags->push_back({"", "", -1, -1, "", chunks_refused(problem)});
    return std::nullopt;
  }
  const std::vector<HeuristicOptions> grid = heuristic_grid_points(problem);

  // Points 0 and 1 run first (two threads: one each); their best cost then prunes the other
  // points and the handcrafted seeds, which stop as soon as their cost is sure to exceed it. The
  // threshold does not depend on timing or on the thread count, so neither do the result or the
  // counts. Each worker builds its points in one reusable workspace, keeping its best run's
  // order by swapping buffers (no copy, no second run). The best cost wins, ties go to the lower
  // grid index. The calling thread runs point 0, so its failure, reported when nothing fits, is
  // point 0's.
  // A thread pays from a few thousand ops on (docs/benchmarks.md).
  if (threads <= 0) threads = problem.p * problem.m >= 1024 ? 2 : 1;
  threads = std::clamp(threads, 1, static_cast<int>(grid.size()));
  std::vector<GridWorker> workers(threads);
  // Workspaces are allocated here, in the calling thread, so worker threads only fill them.
  for (GridWorker& wk : workers) wk.space = std::make_unique<Heuristic>(problem);
  Ticks threshold = -1;  // prune above this; none while negative
  auto run_point = [&](GridWorker& wk, size_t k) {
    std::string why;
    if (!wk.space->run(grid[k], &why)) {
      if (wk.space->pruned()) ++wk.pruned;
      else if (wk.first_why.empty()) wk.first_why = why;
      return;
    }
    Ticks cost = true_cost ? true_cost(wk.space->last_schedule()) : wk.space->cost(cost_kind);
    if (cost < 0) {
      if (wk.first_why.empty()) wk.first_why = "a candidate could not be lowered and timed with its optimizer";
      return;
    }
    ++wk.feasible;
    if (wk.best_cost < 0 || cost < wk.best_cost || (cost == wk.best_cost && k < wk.best_index)) {
      wk.best_cost = cost;
      wk.best_index = k;
      wk.space->keep();
    }
  };
  // A seed, where it fits the memory limit.
  auto run_seed = [&](GridWorker& wk, size_t k) {
    Schedule seed = kSeeds[k](problem);
    if (!validate_memory(seed, problem).empty()) return;
    Ticks cost = true_cost ? true_cost(seed) : simulate_cost(seed, problem, cost_kind, nullptr, threshold);
    if (cost < 0) return;
    if (threshold >= 0 && cost > threshold) {
      ++wk.pruned;
      return;
    }
    ++wk.feasible;
    if (wk.best_seed_cost < 0 || cost < wk.best_seed_cost || (cost == wk.best_seed_cost && k < wk.best_seed_index)) {
      wk.best_seed_cost = cost;
      wk.best_seed_index = k;
      wk.best_seed = std::move(seed);
    }
  };
  constexpr size_t kFirst = 2;  // points run unpruned
  // A compute cost only grows as ops are placed; a true cost (lowered, timed) is known at the end.
  auto set_threshold = [&]() noexcept {
    if (true_cost || !is_compute_cost(cost_kind)) return;
    for (const GridWorker& wk : workers)
      if (wk.best_cost >= 0 && (threshold < 0 || wk.best_cost < threshold)) threshold = wk.best_cost;
    for (GridWorker& wk : workers) wk.space->prune_above(threshold, cost_kind);
  };
  // Then the seeds, the dearest items (each a whole schedule made and simulated), and the other
  // points, from a shared counter.
  std::atomic<size_t> next{0};
  const size_t items = std::size(kSeeds) + grid.size() - kFirst;
  auto work = [&](int t) {
    for (size_t k; (k = next.fetch_add(1)) < items;) {
      if (k < std::size(kSeeds)) run_seed(workers[t], k);
      else run_point(workers[t], kFirst + k - std::size(kSeeds));
    }
  };
  // Each thread runs the first points' share, waits for the threshold, then takes items; the
  // threads are started once, for both.
  std::barrier first_points(threads, set_threshold);
  auto thread_work = [&](int t) {
    for (size_t k = static_cast<size_t>(t); k < kFirst; k += static_cast<size_t>(threads)) run_point(workers[t], k);
    first_points.arrive_and_wait();
    work(t);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(thread_work, t);
  thread_work(0);
  for (auto& th : pool) th.join();

  return best_of(workers, grid, problem, diags);
}

}  // namespace zbpp
