// Multi-iteration simulation (see simulate_iterations.h). Each stage walks its op list once per
// iteration. A RECV waits for the matching SEND (the n-th on its channel, as the runtime pairs
// them) plus the channel's latency; a compute op needs nothing else, since lowering put every
// remote input's RECV before it and every local input earlier in the list. A synchronous
// OPT_STEP ends for everybody at the last arrival plus the all-reduce latency.
#include "planner/simulate_iterations.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "planner/deps.h"

namespace zbpp {

namespace {

bool is_validation(OpType t) { return t == OpType::RECV_VALID || t == OpType::SEND_VALID || t == OpType::VALIDATE; }

}  // namespace

std::optional<IterationTimeline> simulate_iterations(const Schedule& s, const Problem& pr,
                                                     const IterationOptions& options, std::vector<Diag>* diags) {
  const int p = s.p, k = std::max(2, options.iterations);
  const bool sync = s.optimizer != kOptimizerPostValidation;
  IterationTimeline out;
  out.iterations = k;
  out.state_latency = options.state_latency >= 0 ? options.state_latency : pr.t_comm;
  int hops = 0;
  while ((1 << hops) < p) ++hops;
  out.allreduce_latency = options.allreduce_latency >= 0 ? options.allreduce_latency : 2 * hops * pr.t_comm;
  out.ops.assign(k, std::vector<std::vector<OpTiming>>(p));
  for (int it = 0; it < k; ++it)
    for (int st = 0; st < p; ++st) out.ops[it][st].resize(s.stages[st].size());

  std::map<std::tuple<int, int, int>, std::vector<Ticks>> sent;  // (kind, from, to) -> send times
  std::map<std::tuple<int, int, int>, size_t> received;          // (kind, from, to) -> RECVs done
  std::vector<int> iter(p, 0), cursor(p, 0);
  std::vector<Ticks> free_at(p, 0);
  std::vector<std::vector<Ticks>> arrived(k);  // sync OPT_STEP: arrival times per iteration
  std::vector<bool> waiting_at_step(p, false);

  auto latency = [&](int kind) { return kind <= 1 ? pr.t_comm : out.state_latency; };
  // Runs stage st until it blocks or finishes; true when it ran at least one op.
  auto advance = [&](int st) {
    bool moved = false;
    const auto& ops = s.stages[st];
    while (iter[st] < k) {
      const Op& op = ops[cursor[st]];
      Ticks start = free_at[st], end = start;
      bool skip = iter[st] == 0 && is_validation(op.type);
      if (!skip && is_recv(op.type)) {
        auto ch = std::make_tuple(message_channel(op.type), op.peer, st);
        size_t n = received[ch];
        auto found = sent.find(ch);
        if (found == sent.end() || found->second.size() <= n) return moved;
        start = end = std::max(start, found->second[n] + latency(std::get<0>(ch)));
        ++received[ch];
      } else if (!skip && is_send(op.type)) {
        sent[{message_channel(op.type), st, op.peer}].push_back(start);
      } else if (op.type == OpType::OPT_STEP && sync) {
        auto& at = arrived[iter[st]];
        if (!waiting_at_step[st]) {
          at.push_back(start);
          waiting_at_step[st] = true;
        }
        if (static_cast<int>(at.size()) < p) return moved;
        end = *std::max_element(at.begin(), at.end()) + out.allreduce_latency;
        waiting_at_step[st] = false;
      } else if (is_compute(op.type)) {
        end = start + op_duration(op, st, pr);
      }
      out.ops[iter[st]][st][cursor[st]] = {start, end};
      free_at[st] = end;
      moved = true;
      if (++cursor[st] == static_cast<int>(ops.size())) cursor[st] = 0, ++iter[st];
    }
    return moved;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int st = 0; st < p; ++st) progress = advance(st) || progress;
  }
  for (int st = 0; st < p; ++st)
    if (iter[st] < k) {
      const Op& op = s.stages[st][cursor[st]];
      diags->push_back({"", "", st, cursor[st], op_short(op),
                        "deadlock in iteration " + std::to_string(iter[st]) + " of " + std::to_string(k) +
                            ": the stage waits here for ever"});
      return std::nullopt;
    }

  Ticks max_busy = 0, first = -1, last = 0;
  for (int st = 0; st < p; ++st) {
    Ticks busy = 0;
    for (size_t i = 0; i < s.stages[st].size(); ++i)
      if (is_compute(s.stages[st][i].type)) busy += op_duration(s.stages[st][i], st, pr);
    max_busy = std::max(max_busy, busy);
    const auto& last_two = out.ops;
    out.period = std::max(out.period, last_two[k - 1][st].back().end - last_two[k - 2][st].back().end);
    if (!s.stages[st].empty()) {
      first = first < 0 ? out.ops[0][st].front().start : std::min(first, out.ops[0][st].front().start);
      last = std::max(last, out.ops[0][st].back().end);
    }
  }
  out.wall = first < 0 ? 0 : last - first;
  out.period_bubble_rate =
      out.period > 0 ? static_cast<double>(out.period - max_busy) / static_cast<double>(out.period) : 0.0;
  return out;
}

}  // namespace zbpp
