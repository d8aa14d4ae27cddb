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
  // The authors' round-by-round V-ZB and the handcrafted orders at the same memory join: the
  // greedy alone trails them where the ops' times differ (its choices are local), and the polish
  // below starts from the best of all.
  for (bool fill_b : {true, false})
    for (bool fill_f : {true, false}) {
      std::string failed;
      auto s = generate_v_zb_rounds(unlimited, {fill_f, fill_b}, &failed);
      consider(std::move(s), std::string("rounds") + (fill_f ? ",fill-f" : "") + (fill_b ? ",fill-b" : ""), failed);
    }
  consider(generate_zb_v_handcrafted(unlimited), "zb-v", "");
  std::string err;
  auto dual = generate_dualpipe_v(unlimited, &err);
  consider(std::move(dual), "dualpipe-v", err);
  if (!best) {
    *why = "v-zb: no candidate keeps within 1F1B's activation memory (" + failures.front() + ")";
    return std::nullopt;
  }
  // Polished within the memory it kept.
  Problem kept = unlimited;
  kept.mem_limit = peak_memory_of(*best, unlimited);
  improve_by_swaps(&*best, kept, Cost::kSpan, kSwapPasses, deadline);
  best->method = "v-zb";
  return best;
}

}  // namespace zbpp
