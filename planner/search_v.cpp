// The V and interleaved searches over the greedy's knobs and the seeds, polished by swaps (see gen_v.h).
#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <tuple>

#include "core/bounds.h"
#include "core/deps.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "planner/gen_baseline.h"
#include "planner/gen_v.h"
#include "planner/gen_v_internal.h"

namespace zbpp {


namespace {

using Seeds = std::vector<std::pair<std::string, std::optional<Schedule>>>;

// The greedy over its grid (budgets from `chunks` to `most` chunk activations, every knob), a
// budget at a time from the largest down (smaller budgets rarely win, and they are the slow ones:
// their stages wait most), the knobs of a budget in two threads on big problems. Each point keeps
// its grid index (budgets rising, then knobs) and the best is the least (cost, index), so the
// result never depends on which thread ran which point, nor on the order. `bound_at(budget)`, where
// given, is a certified lower bound on the cost of every schedule within that budget: a budget
// whose bound exceeds the best found is left out (its points are `pruned`; none of them could
// win). Past `deadline` no further point is taken.
struct GridResult {
  std::optional<SearchResult> best;
  size_t points = 0, taken = 0, pruned = 0;
  int feasible = 0;
};
GridResult run_greedy_grid(const Problem& pr, const std::vector<std::vector<int>>& placement, int most,
                           const std::function<Ticks(const Schedule&)>& cost_of_candidate,
                           const std::function<Ticks(int)>& bound_at, const std::string& shape,
                           const Deadline& deadline, ProgressTicker* ticker) {
  const int chunks = static_cast<int>(placement[0].size());
  const size_t per_budget = knobs_at(chunks).size();
  GridResult out;
  out.points = most >= chunks ? per_budget * static_cast<size_t>(most - chunks + 1) : 0;
  struct Point {
    std::optional<Schedule> schedule;
    Ticks cost = -1;
  };
  const int threads = pr.p * pr.m >= 1024 ? 2 : 1;
  Ticks best_cost = -1;
  size_t best_index = 0;
  for (int budget = most; budget >= chunks && !deadline.passed(); --budget) {
    if (bound_at && best_cost >= 0 && bound_at(budget) > best_cost) {
      out.pruned += per_budget;
      continue;
    }
    const std::vector<VGreedyOptions> knobs = knobs_at(budget);
    std::vector<Point> points(knobs.size());
    std::atomic<size_t> next{0};
    auto work = [&](bool says) {
      for (size_t k; !deadline.passed() && (k = next.fetch_add(1)) < knobs.size();) {
        if (says)
          ticker->tick([&](double seconds) {
            return shape + " search: the greedy's grid, budget " + std::to_string(budget) + " of " +
                   std::to_string(chunks) + ".." + std::to_string(most) + ", " + std::to_string(out.taken + k) +
                   " of " + std::to_string(out.points) + " points (" + std::to_string(static_cast<int>(seconds)) +
                   " s)";
          });
        std::string why;
        auto s = generate_greedy_on(pr, placement, knobs[k], &why, deadline);
        if (!s) continue;
        points[k].cost = cost_of_candidate(*s);
        if (points[k].cost >= 0) points[k].schedule = std::move(s);
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, false);
    work(true);
    for (auto& th : pool) th.join();
    out.taken += std::min(next.load(), knobs.size());
    const size_t first_index = per_budget * static_cast<size_t>(budget - chunks);
    for (size_t k = 0; k < points.size(); ++k) {
      if (points[k].cost < 0) continue;
      ++out.feasible;
      const size_t index = first_index + k;
      if (best_cost >= 0 && std::tie(points[k].cost, index) >= std::tie(best_cost, best_index)) continue;
      best_cost = points[k].cost;
      best_index = index;
      out.best = SearchResult{std::move(*points[k].schedule), 0, best_cost, knobs[k].name(), 0, 0, 0, {}};
    }
  }
  if (out.best) out.best->span = simulate_span(out.best->schedule, pr);
  return out;
}

// The greedy on `placement` over every budget from one microbatch's chunk activations up to what
// the memory limit allows (at most 2p per chunk) and every knob, the seeds beside it; the winner
// polished by swaps, and the best of each group in `apart` polished apart (kept if it ends
// lower). `shape` names the placement in the message when nothing fits.
std::optional<SearchResult> search_placement(const Problem& pr, const std::vector<std::vector<int>>& placement,
                                             Seeds seeds, const std::string& shape, std::vector<Diag>* diags,
                                             Cost cost_kind, const CostFn& true_cost, const Deadline& deadline,
                                             ProgressTicker* ticker, std::vector<Seeds> apart = {},
                                             std::string cut = {}) {
  const int chunks = static_cast<int>(placement[0].size());
  // The largest budget any stage's limit allows (each stage's is clamped to its own in the greedy).
  int most = 2 * chunks * pr.p;
  if (pr.limited()) {
    Mem roomiest = 0;
    for (int s = 0; s < pr.p; ++s)
      roomiest = std::max(roomiest, pr.limit(s) && pr.mem_b[s] > 0 ? *pr.limit(s) / pr.mem_b[s] : Mem{most});
    most = static_cast<int>(std::min<Mem>(most, roomiest));
  }
  std::optional<SearchResult> best;
  int candidates = 0, feasible = 0, pruned = 0;
  // A candidate within the memory limit: its cost, or -1.
  // (Interleaved: also one whose stages take their inputs in the order sent, or it cannot be lowered.)
  auto cost_of_candidate = [&](const Schedule& s) -> Ticks {
    if (!validate_memory(s, pr).empty() || !validate_message_order(s).empty()) return -1;
    return true_cost ? true_cost(s) : simulate_cost(s, pr, cost_kind);
  };
  // Counts the candidate; keeps it in *into where it fits and is cheaper than what *into holds.
  auto consider = [&](Schedule s, const std::string& name, std::optional<SearchResult>* into) {
    ++candidates;
    const Ticks cost = cost_of_candidate(s);
    if (cost < 0) return;
    ++feasible;
    if (*into && cost >= (*into)->cost) return;
    const Ticks span = simulate_span(s, pr);
    *into = SearchResult{std::move(s), span, cost, name, 0, 0, 0, {}};
  };
  // Ranked by a compute cost, a budget's points cost at least the bound on that cost within the
  // budget (the greedy keeps every stage within it); the true cost has no such bound here.
  std::function<Ticks(int)> bound_at;
  if (!true_cost)
    bound_at = [&](int budget) {
      Problem within = pr;
      within.mem_limit.reset();
      within.stage_mem_limits.assign(pr.p, 0);
      for (int s = 0; s < pr.p; ++s) {
        const Mem mine = static_cast<Mem>(budget) * pr.mem_b[s];
        within.stage_mem_limits[s] = pr.limit(s) ? std::min(mine, *pr.limit(s)) : mine;
      }
      return cost_lower_bound(within, cost_kind, placement);
    };
  GridResult grid = run_greedy_grid(pr, placement, most, cost_of_candidate, bound_at, shape, deadline, ticker);
  feasible += grid.feasible;
  candidates += static_cast<int>(grid.taken);
  pruned = static_cast<int>(grid.pruned);
  if (grid.taken + grid.pruned < grid.points)
    cut += std::string(cut.empty() ? "" : "; ") + "the greedy ran " + std::to_string(grid.taken) + " of its " +
           std::to_string(grid.points) + " grid points";
  best = std::move(grid.best);
  for (auto& [name, seed] : seeds)
    if (seed) consider(std::move(*seed), name, &best);
  // Polish by swaps, ranked by the compute cost; kept only if its true cost agrees.
  auto polish = [&](SearchResult* r, const Problem& within) {
    Schedule polished = r->schedule;
    improve_by_swaps(&polished, within, is_compute_cost(cost_kind) ? cost_kind : Cost::kSpan, kSwapPasses, deadline);
    const Ticks cost = true_cost ? true_cost(polished) : simulate_cost(polished, pr, cost_kind);
    if (cost >= 0 && cost < r->cost) {
      r->span = simulate_span(polished, pr);
      r->cost = cost;
      r->winner += ", polished by swaps";
      r->schedule = std::move(polished);
    }
  };
  auto skipped = [&](const std::string& what) {
    if (!deadline.passed()) return false;
    cut += std::string(cut.empty() ? "" : "; ") + what + " skipped";
    return true;
  };
  if (best && !skipped("the polish by swaps")) polish(&*best, pr);
  // The best of each group of seeds polished apart, also polished, and kept if it ends lower: a
  // better start can end worse after the polish, so these never take another winner's polish
  // away. Polished within its own peak, so that a larger limit never gives a worse plan from it.
  // Past the deadline each group's best still competes, unpolished: the family's blocks cost time
  // to make, and one of them is often the winner as made.
  bool polish_apart = true;
  for (Seeds& group : apart) {
    std::optional<SearchResult> other;
    for (auto& [name, seed] : group)
      if (seed) consider(std::move(*seed), name, &other);
    if (!other) continue;
    if (polish_apart && skipped("the seed groups' polish")) polish_apart = false;
    if (polish_apart) polish(&*other, within_own_peak(other->schedule, pr));
    if (!best || other->cost < best->cost) best = std::move(other);
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
  best->pruned = pruned;
  best->cut = cut;
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
                                     const CostFn& true_cost, const Deadline& deadline,
                                     const std::function<void(const std::string&)>& progress) {
  ProgressTicker ticker(progress);
  Seeds seeds;
  seeds.emplace_back("v-min", generate_v_block(pr, VBlock::kMin));
  seeds.emplace_back("v-half", generate_v_block(pr, VBlock::kHalf));
  // V-ZB (which searches and polishes its own) only while time is left; the handcrafted orders,
  // which cost next to nothing, always.
  std::string stalled, err;
  const bool v_zb_made = !deadline.passed();
  if (v_zb_made) seeds.emplace_back("v-zb", generate_v_zb_best(pr, &stalled, deadline));
  seeds.emplace_back("zb-v", generate_zb_v_handcrafted(pr));
  seeds.emplace_back("dualpipe-v", generate_dualpipe_v(pr, &err));
  // Polished apart: the reordered V-Min and V-Half; and the authors' family of blocks (between
  // V-Min's, V-Half's and V-ZB's memories one of them fits each limit closely) in three groups, as
  // each was reordered (steady phase kept or not, or laid out as the authors do): each group's
  // best ends lowest after the polish at some limits.
  std::vector<Seeds> apart(4);
  apart[0].emplace_back("v-min reordered", generate_v_block_reordered(pr, VBlock::kMin));
  apart[0].emplace_back("v-half reordered", generate_v_block_reordered(pr, VBlock::kHalf));
  const Cost compute = is_compute_cost(cost_kind) ? cost_kind : Cost::kSpan;
  // Only the few best of each group by the compute cost go on to be ranked (the true cost lowers
  // each candidate and runs iterations back to back: hundreds of blocks would cost more than the
  // greedy's whole grid); kept as they are made, by cost, then in the order made (ties go to the
  // first, as consider() keeps them), so the family is never held whole.
  constexpr size_t kFamilyKept = 4;
  struct Kept {
    Ticks cost;
    size_t order;
    std::string name;
    Schedule schedule;
  };
  std::vector<std::vector<Kept>> family(apart.size());
  std::vector<size_t> made_in(apart.size(), 0);
  int made = 0, blocks = 0;
  // At most a third of the time left: the greedy's grid, which finds most winners, comes after.
  const Deadline family_deadline = deadline.at ? deadline.within(deadline.left() / 3) : deadline;
  auto take = [&](VFamilyMember&& member) {
    const Ticks cost = simulate_cost(member.schedule, pr, compute);
    const size_t g = member.form == VBlockForm::kAsTheirs ? 3 : member.form == VBlockForm::kSteadyFree ? 2 : 1;
    if (cost < 0) return;
    const size_t order = made_in[g]++;
    auto& group = family[g];
    auto worse = [](const Kept& a, Ticks cost, size_t order) { return std::tie(a.cost, a.order) > std::tie(cost, order); };
    if (group.size() == kFamilyKept && !worse(group.back(), cost, order)) return;
    auto at = std::find_if(group.begin(), group.end(), [&](const Kept& k) { return worse(k, cost, order); });
    group.insert(at, Kept{cost, order, std::move(member.name), std::move(member.schedule)});
    if (group.size() > kFamilyKept) group.pop_back();
  };
  // Each stage within its own limit in `pr` (for_each_v_block checks them); no further limit here.
  for_each_v_block(pr, std::numeric_limits<Mem>::max(), take, family_deadline, &made, &blocks, &ticker);
  for (size_t g = 1; g < family.size(); ++g)
    for (Kept& k : family[g]) apart[g].emplace_back(std::move(k.name), std::move(k.schedule));
  std::string cut = v_zb_made ? "" : "seeds v-zb not made";
  if (made < blocks)
    cut += (cut.empty() ? "" : "; ") + std::string("the family of blocks made ") + std::to_string(made) + " of its " +
           std::to_string(blocks) + " blocks";
  return search_placement(pr, v_shape_placement(pr.p), std::move(seeds), "V-shape", diags, cost_kind, true_cost,
                          deadline, &ticker, std::move(apart), cut);
}

std::optional<SearchResult> search_interleaved(const Problem& pr, std::vector<Diag>* diags, Cost cost_kind,
                                               const CostFn& true_cost, const Deadline& deadline,
                                               const std::function<void(const std::string&)>& progress) {
  ProgressTicker ticker(progress);
  Seeds seeds;
  std::string err;
  auto interleaved = generate_1f1b_interleaved(pr, &err);  // where m is a multiple of p
  seeds.emplace_back("1f1b-i split", split_backwards(interleaved));
  seeds.emplace_back("1f1b-i", std::move(interleaved));
  return search_placement(pr, interleaved_placement(pr.p, pr.chunks), std::move(seeds), "interleaved", diags,
                          cost_kind, true_cost, deadline, &ticker);
}

}  // namespace zbpp
