// Multi-iteration simulation (see simulate_iterations.h). Each stage walks its op list once per
// iteration. A RECV waits for the matching SEND (the n-th on its channel, as the runtime pairs
// them) plus the channel's latency; a compute op needs nothing else, since lowering put every
// remote input's RECV before it and every local input earlier in the list. A synchronous
// OPT_STEP ends for everybody at the last arrival plus the all-reduce latency.
//
// A worklist drives the stages, as in simulate.cpp: a stage runs until it blocks and is queued
// again only when what it waits for happens (a SEND on its channel, or the last arrival at a
// synchronous step), so the work is linear in the number of ops times iterations. The result
// does not depend on the order stages run in: each RECV pairs with a fixed SEND.
#include "planner/simulate_iterations.h"

#include <algorithm>
#include <cstdint>

#include "planner/deps.h"

namespace zbpp {

namespace {

bool is_validation(OpType t) { return t == OpType::RECV_VALID || t == OpType::SEND_VALID || t == OpType::VALIDATE; }

// One directed message channel (kind, from -> to): the times of its SENDs so far and how many of
// them the receiver consumed.
struct Channel {
  int to = 0;
  std::vector<Ticks> sent;
  size_t received = 0;
};

struct IterSim {
  const Schedule& s;
  const Problem& pr;
  const int p, k;
  const bool sync;
  IterationTimeline& out;
  std::vector<Channel> channels;
  std::vector<std::vector<int>> channel_of;  // [stage][op index] -> channel of a SEND/RECV, -1 otherwise
  std::vector<int> iter, cursor, blocked_on;  // blocked_on: channel a stage waits on, -1 if none
  std::vector<Ticks> free_at;
  std::vector<std::vector<Ticks>> arrived;       // sync OPT_STEP: arrival times per iteration
  std::vector<std::vector<int>> parked_at_step;  // sync OPT_STEP: stages waiting per iteration
  std::vector<bool> waiting_at_step;
  std::vector<int> work;
  const bool op_times;
  std::vector<Ticks> first_start;    // [stage] start of its first op in the first iteration
  std::vector<Ticks> iteration_end;  // [iteration * p + stage] end of the stage's last op in that iteration

  IterSim(const Schedule& schedule, const Problem& problem, int iterations, IterationTimeline& timeline)
      : s(schedule), pr(problem), p(schedule.p), k(iterations), sync(schedule.optimizer != kOptimizerPostValidation),
        out(timeline), iter(p, 0), cursor(p, 0), blocked_on(p, -1), free_at(p, 0), arrived(k), parked_at_step(k),
        waiting_at_step(p, false), op_times(!timeline.ops.empty()), first_start(p, 0),
        iteration_end(static_cast<size_t>(k) * p, 0) {
    index_channels();
  }

  // Numbers the channels in use: a sorted list of (to, kind, from) keys, no map. A stage talks
  // to a few peers only, so the list is about as long as the number of stages; each stage's own
  // keys (a handful) are gathered first, so neither the sort nor the lookups see one per message.
  void index_channels() {
    auto key = [&](int to, int kind, int from) {
      return (static_cast<uint64_t>(to) * kMessageChannels + static_cast<uint64_t>(kind)) * static_cast<uint64_t>(p) +
             static_cast<uint64_t>(from);
    };
    auto key_of = [&](int st, const Op& op) {
      return is_send(op.type) ? key(op.peer, message_channel(op.type), st) : key(st, message_channel(op.type), op.peer);
    };
    std::vector<uint64_t> keys;
    std::vector<size_t> stage_keys(p + 1, 0);  // stage st's distinct keys: keys[stage_keys[st] .. stage_keys[st + 1])
    channel_of.resize(p);
    for (int st = 0; st < p; ++st) {
      const auto& ops = s.stages[st];
      channel_of[st].assign(ops.size(), -1);
      for (size_t i = 0; i < ops.size(); ++i) {
        if (!is_send(ops[i].type) && !is_recv(ops[i].type)) continue;
        const uint64_t k = key_of(st, ops[i]);
        auto first = keys.begin() + static_cast<std::ptrdiff_t>(stage_keys[st]);
        auto found = std::find(first, keys.end(), k);
        channel_of[st][i] = static_cast<int>(found - first);  // the stage's own number for now
        if (found == keys.end()) keys.push_back(k);
      }
      stage_keys[st + 1] = keys.size();
    }
    std::vector<uint64_t> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    channels.resize(sorted.size());
    for (size_t c = 0; c < sorted.size(); ++c) channels[c].to = static_cast<int>(sorted[c] / kMessageChannels / p);
    // The stages' own numbers become the channels' indices.
    std::vector<int> channel(keys.size());
    for (size_t j = 0; j < keys.size(); ++j)
      channel[j] = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), keys[j]) - sorted.begin());
    for (int st = 0; st < p; ++st)
      for (int& c : channel_of[st])
        if (c >= 0) c = channel[stage_keys[st] + static_cast<size_t>(c)];
  }

  Ticks latency(OpType t) const { return message_channel(t) <= 1 ? pr.t_comm : out.state_latency; }

  // Runs stage st until it blocks or finishes, queueing the stages its SENDs and steps release.
  void advance(int st) {
    const auto& ops = s.stages[st];
    const int n = static_cast<int>(ops.size());
    const int* channel = channel_of[st].data();
    int it = iter[st], i = cursor[st];
    Ticks clock = free_at[st];
    while (it < k) {
      OpTiming* times = op_times ? out.ops[it][st].data() : nullptr;
      for (; i < n; ++i) {
        const Op& op = ops[i];
        Ticks start = clock, end = start;
        const OpType type = op.type;
        if (is_compute(type)) {
          end = start + op_duration(op, st, pr);
        } else if (it == 0 && is_validation(type)) {
          // nothing to validate in the first iteration
        } else if (is_recv(type)) {
          Channel& ch = channels[channel[i]];
          if (ch.sent.size() <= ch.received) {
            blocked_on[st] = channel[i];
            iter[st] = it, cursor[st] = i, free_at[st] = clock;
            return;
          }
          start = end = std::max(start, ch.sent[ch.received++] + latency(type));
        } else if (is_send(type)) {
          Channel& ch = channels[channel[i]];
          ch.sent.push_back(start);
          if (blocked_on[ch.to] == channel[i]) {
            blocked_on[ch.to] = -1;
            work.push_back(ch.to);
          }
        } else if (type == OpType::OPT_STEP && sync) {
          auto& at = arrived[it];
          if (!waiting_at_step[st]) {
            at.push_back(start);
            waiting_at_step[st] = true;
          }
          if (static_cast<int>(at.size()) < p) {
            parked_at_step[it].push_back(st);
            iter[st] = it, cursor[st] = i, free_at[st] = clock;
            return;
          }
          // The last arrival releases the others; each then computes the same end.
          for (int other : parked_at_step[it]) work.push_back(other);
          parked_at_step[it].clear();
          end = *std::max_element(at.begin(), at.end()) + out.allreduce_latency;
          waiting_at_step[st] = false;
        }
        if (times) times[i] = {start, end};
        if (it == 0 && i == 0) first_start[st] = start;
        clock = end;
      }
      iteration_end[static_cast<size_t>(it) * p + st] = clock;
      i = 0;
      ++it;
    }
    iter[st] = it, cursor[st] = i, free_at[st] = clock;
  }

  void run() {
    for (int st = p - 1; st >= 0; --st) work.push_back(st);
    while (!work.empty()) {
      int st = work.back();
      work.pop_back();
      advance(st);
    }
  }
};

}  // namespace

std::optional<IterationTimeline> simulate_iterations(const Schedule& s, const Problem& pr,
                                                     const IterationOptions& options, std::vector<Diag>* diags) {
  const int p = s.p, k = std::max(2, options.iterations);
  IterationTimeline out;
  out.iterations = k;
  out.state_latency = options.state_latency >= 0 ? options.state_latency : pr.t_comm;
  int hops = 0;
  while ((1 << hops) < p) ++hops;
  out.allreduce_latency = options.allreduce_latency >= 0 ? options.allreduce_latency : 2 * hops * pr.t_comm;
  if (options.op_times) {
    out.ops.assign(k, std::vector<std::vector<OpTiming>>(p));
    for (int it = 0; it < k; ++it)
      for (int st = 0; st < p; ++st) out.ops[it][st].resize(s.stages[st].size());
  }

  IterSim sim(s, pr, k, out);
  sim.run();
  for (int st = 0; st < p; ++st)
    if (sim.iter[st] < k) {
      const Op& op = s.stages[st][sim.cursor[st]];
      diags->push_back({"", "", st, sim.cursor[st], op_short(op),
                        "deadlock in iteration " + std::to_string(sim.iter[st]) + " of " + std::to_string(k) +
                            ": the stage waits here for ever"});
      return std::nullopt;
    }

  Ticks max_busy = 0, first = -1, last = 0;
  for (int st = 0; st < p; ++st) {
    Ticks busy = 0;
    for (size_t i = 0; i < s.stages[st].size(); ++i)
      if (is_compute(s.stages[st][i].type)) busy += op_duration(s.stages[st][i], st, pr);
    max_busy = std::max(max_busy, busy);
    auto end_of = [&](int it) { return sim.iteration_end[static_cast<size_t>(it) * p + st]; };
    out.period = std::max(out.period, end_of(k - 1) - end_of(k - 2));
    if (!s.stages[st].empty()) {
      first = first < 0 ? sim.first_start[st] : std::min(first, sim.first_start[st]);
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
