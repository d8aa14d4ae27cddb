// V-ZB at 1F1B's activation memory: the best of the round-by-round V-ZB, the greedy and the
// handcrafted V orders, polished by swaps (see gen_v.h).
#include <algorithm>

#include "core/simulate.h"
#include "planner/gen_baseline.h"
#include "planner/gen_v.h"
#include "planner/gen_v_internal.h"

namespace zbpp {

std::optional<Schedule> generate_v_zb_best(const Problem& pr, std::string* why, const Deadline& deadline) {
  // 1F1B's activation memory, without the problem's limit (validation checks that, as for zb-v).
  Problem unlimited = pr;
  unlimited.mem_limit.reset();
  unlimited.stage_mem_limits.clear();
  std::optional<Schedule> best;
  Ticks best_span = kNever;
  int best_rank = 0;
  std::vector<std::string> failures;
  // A candidate counts when every stage keeps within 2p chunk activations (1F1B's p microbatches).
  // Ties go to the lower rank: the greedy's knobs first, then the rounds, ZB-V, DualPipe-V (the
  // order they were once made in; they are made cheapest first, so a deadline leaves out greedy runs).
  auto consider = [&](std::optional<Schedule> s, int rank, const std::string& name, const std::string& failed) {
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
    if (t->span < best_span || (t->span == best_span && rank < best_rank))
      best = std::move(s), best_span = t->span, best_rank = rank;
  };
  const std::vector<VGreedyOptions> knobs = knobs_at(2 * pr.p);
  const int greedy = static_cast<int>(knobs.size());
  // The handcrafted orders cost next to nothing; the authors' round-by-round V-ZB little more.
  consider(generate_zb_v_handcrafted(unlimited), greedy + 4, "zb-v", "");
  std::string err;
  auto dual = generate_dualpipe_v(unlimited, &err);
  consider(std::move(dual), greedy + 5, "dualpipe-v", err);
  int made = 2;
  // Past the deadline no further candidate is made once one is at hand (the best so far is polished
  // as far as time allows, and returned; *why then says what was left out).
  int rank = greedy;
  for (bool fill_b : {true, false})
    for (bool fill_f : {true, false}) {
      const int r = rank++;
      if (best && deadline.passed()) continue;
      ++made;
      std::string failed;
      auto s = generate_v_zb_rounds(unlimited, {fill_f, fill_b}, &failed);
      consider(std::move(s), r, std::string("rounds") + (fill_f ? ",fill-f" : "") + (fill_b ? ",fill-b" : ""), failed);
    }
  // The greedy alone trails the rounds where the ops' times differ (its choices are local), and
  // the polish below starts from the best of all.
  for (int k = 0; k < greedy; ++k) {
    if (best && deadline.passed()) break;
    std::string failed;
    auto s = generate_v_greedy(unlimited, knobs[k], &failed, best ? deadline : Deadline{});
    if (s || failed != kGreedyStopped) ++made;
    consider(std::move(s), k, "greedy " + knobs[k].name(), failed);
  }
  if (!best) {
    *why = "v-zb: no candidate keeps within 1F1B's activation memory (" + failures.front() + ")";
    return std::nullopt;
  }
  // Polished within the memory it kept.
  const Problem kept = within_own_peak(*best, unlimited);
  const int candidates = greedy + 6;  // the knobs, 4 round-by-round, ZB-V, DualPipe-V
  if (made < candidates) *why = "made " + std::to_string(made) + " of its " + std::to_string(candidates) + " candidates";
  if (!improve_by_swaps(&*best, kept, Cost::kSpan, kSwapPasses, deadline))
    *why += std::string(why->empty() ? "" : "; ") + "the polish by swaps cut";
  best->method = "v-zb";
  return best;
}

}  // namespace zbpp
