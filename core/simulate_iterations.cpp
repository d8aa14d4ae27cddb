// Multi-iteration timing (see simulate_iterations.h): the replay of lowered files (replay.h) over
// iterations back to back, and the figures from its times.
#include "core/simulate_iterations.h"

#include <algorithm>

#include "core/deps.h"
#include "core/replay.h"

namespace zbpp {

std::optional<IterationTimeline> simulate_iterations(const Schedule& s, const Problem& pr,
                                                     const IterationOptions& options, std::vector<Diag>* diags) {
  const int p = s.p, k = std::max(2, options.iterations);
  IterationTimeline out;
  out.iterations = k;
  out.state_latency = options.state_latency >= 0 ? options.state_latency : pr.slowest_hop();
  int hops = 0;
  while ((1 << hops) < p) ++hops;
  out.allreduce_latency = options.allreduce_latency >= 0 ? options.allreduce_latency : 2 * hops * pr.slowest_hop();
  ReplayOptions replay;
  replay.iterations = k;
  replay.op_times = options.op_times;
  replay.state_latency = out.state_latency;
  replay.allreduce_latency = out.allreduce_latency;
  auto sim = replay_lowered(s, pr, replay, diags);
  if (!sim) return std::nullopt;
  out.ops = std::move(sim->ops);
  out.first = compute_figures(s, pr, sim->compute_start, sim->compute_end);

  Ticks max_busy = 0, first = -1, last = 0;
  for (int st = 0; st < p; ++st) {
    max_busy = std::max(max_busy, out.first.busy[st]);
    auto end_of = [&](int it) { return sim->iteration_end[static_cast<size_t>(it) * p + st]; };
    out.period = std::max(out.period, end_of(k - 1) - end_of(k - 2));
    if (!s.stages[st].empty()) {
      first = first < 0 ? sim->first_start[st] : std::min(first, sim->first_start[st]);
      last = std::max(last, end_of(0));
    }
  }
  out.wall = first < 0 ? 0 : last - first;
  auto bubble = [&](Ticks cost) {
    return cost > 0 ? static_cast<double>(cost - max_busy) / static_cast<double>(cost) : 0.0;
  };
  out.period_bubble_rate = bubble(out.period);
  out.wall_bubble_rate = bubble(out.wall);
  return out;
}

}  // namespace zbpp
