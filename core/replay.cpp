// The replay of lowered schedules (see replay.h). A worklist drives the stages: a stage runs until
// it blocks and is queued again only when what it waits for happens (a SEND on its channel, or the
// last arrival at a synchronous step), so the work is linear in the number of ops times
// iterations. The result does not depend on the order stages run in: each RECV pairs with a fixed
// SEND.
#include "core/replay.h"

#include <algorithm>
#include <cstdint>

#include "core/deps.h"

namespace zbpp {

namespace {

// One directed message channel (kind, from -> to): the times of its SENDs so far and how many of
// them the receiver consumed.
struct Channel {
  int to = 0;
  Ticks latency = 0;  // a tensor message's hop between the two stages, or the state latency
  std::vector<Ticks> sent;
  size_t received = 0;
};

struct Replay {
  const Schedule& s;
  const Problem& pr;
  const ReplayOptions& options;
  const int p, k;
  const bool barrier;  // a synchronous OPT_STEP that iterations after it wait for
  LoweredReplay& out;
  std::vector<Channel> channels;
  std::vector<std::vector<int>> channel_of;  // [stage][op index] -> channel of a SEND/RECV, -1 otherwise
  std::vector<int> stuck_at;                 // [stage] first op whose local input comes later in its list; n if none
  std::vector<int> iter, cursor, blocked_on;  // blocked_on: channel a stage waits on, -1 if none
  std::vector<Ticks> free_at;
  std::vector<std::vector<Ticks>> arrived;       // barrier: arrival times per iteration
  std::vector<std::vector<int>> parked_at_step;  // barrier: stages waiting per iteration
  std::vector<bool> waiting_at_step;
  std::vector<int> work;

  Replay(const Schedule& schedule, const Problem& problem, const ReplayOptions& o, LoweredReplay& result)
      : s(schedule), pr(problem), options(o), p(schedule.p), k(std::max(1, o.iterations)),
        barrier(schedule.optimizer != Optimizer::kPostValidation && k > 1), out(result), iter(p, 0), cursor(p, 0),
        blocked_on(p, -1), free_at(p, 0), arrived(k), parked_at_step(k), waiting_at_step(p, false) {
    out.first_start.assign(p, 0);
    out.iteration_end.assign(static_cast<size_t>(k) * p, 0);
    out.compute_start.assign(p, -1);
    out.compute_end.assign(p, -1);
    if (o.op_times) {
      out.ops.assign(k, std::vector<std::vector<OpTiming>>(p));
      for (int it = 0; it < k; ++it)
        for (int st = 0; st < p; ++st) out.ops[it][st].resize(s.stages[st].size());
    }
    index_channels();
    index_local_inputs();
  }

  // Numbers the channels in use: a sorted list of (to, kind, from) keys, no map. A stage talks
  // to a few peers only, so the list is about as long as the number of stages; each stage's own
  // keys (a handful) are gathered first, through a table by (direction, kind, peer) that is
  // cleared after each stage, so neither the sort nor the lookups see one per message.
  void index_channels() {
    auto key = [&](int to, int kind, int from) {
      return (static_cast<uint64_t>(to) * kMessageKinds + static_cast<uint64_t>(kind)) * static_cast<uint64_t>(p) +
             static_cast<uint64_t>(from);
    };
    std::vector<uint64_t> keys;
    std::vector<size_t> sends_per_key;  // [key index] -> SENDs per iteration, for the channel's times
    std::vector<size_t> stage_keys(p + 1, 0);  // stage st's distinct keys: keys[stage_keys[st] .. stage_keys[st + 1])
    std::vector<int> own(static_cast<size_t>(2) * kMessageKinds * p, -1);  // (sends?, kind, peer) -> the stage's number
    channel_of.resize(p);
    for (int st = 0; st < p; ++st) {
      const auto& ops = s.stages[st];
      channel_of[st].assign(ops.size(), -1);
      int* numbers = channel_of[st].data();
      for (size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        const bool sends = is_send(op.type);
        if (!sends && !is_recv(op.type)) continue;
        const int kind = message_kind(op.type);
        int& number = own[(static_cast<size_t>(sends) * kMessageKinds + static_cast<size_t>(kind)) * p +
                          static_cast<size_t>(op.peer)];
        if (number < 0) {
          number = static_cast<int>(keys.size() - stage_keys[st]);
          keys.push_back(sends ? key(op.peer, kind, st) : key(st, kind, op.peer));
          sends_per_key.push_back(0);
        }
        numbers[i] = number;
        if (sends) ++sends_per_key[stage_keys[st] + static_cast<size_t>(number)];
      }
      stage_keys[st + 1] = keys.size();
      for (size_t j = stage_keys[st]; j < keys.size(); ++j) {  // clear what this stage set
        const uint64_t k = keys[j];
        const int to = static_cast<int>(k / kMessageKinds / p), kind = static_cast<int>(k / p % kMessageKinds);
        const int from = static_cast<int>(k % p);
        const bool sends = from == st;
        own[(static_cast<size_t>(sends) * kMessageKinds + static_cast<size_t>(kind)) * p +
            static_cast<size_t>(sends ? to : from)] = -1;
      }
    }
    std::vector<uint64_t> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    channels.resize(sorted.size());
    for (size_t c = 0; c < sorted.size(); ++c) {
      const int to = static_cast<int>(sorted[c] / kMessageKinds / p), from = static_cast<int>(sorted[c] % p);
      const int kind = static_cast<int>(sorted[c] / p % kMessageKinds);
      channels[c].to = to;
      channels[c].latency = kind <= kGradient ? pr.hop(from, to) : options.state_latency;
    }
    // The stages' own numbers become the channels' indices.
    std::vector<int> channel(keys.size());
    for (size_t j = 0; j < keys.size(); ++j) {
      channel[j] = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), keys[j]) - sorted.begin());
      if (sends_per_key[j] > 0) channels[channel[j]].sent.reserve(sends_per_key[j] * static_cast<size_t>(k));
    }
    for (int st = 0; st < p; ++st)
      for (int& c : channel_of[st])
        if (c >= 0) c = channel[stage_keys[st] + static_cast<size_t>(c)];
  }

  // A local input is made on the stage itself, earlier in its list or never in time: the first op
  // whose local input is not made before it stops the stage in every iteration (it waits for
  // itself). Within a chunk (B after its F, W after its B) validate_structure keeps that order, so
  // only a placement with two consecutive virtual stages on one stage (a V's turn: F of vs+1
  // needs F of vs there, B of vs needs B of vs+1) needs the pass; one pass, products keyed by
  // virtual stage (each belongs to one stage).
  VirtualStageMap map{s.placement};
  void index_local_inputs() {
    stuck_at.resize(p);
    for (int st = 0; st < p; ++st) stuck_at[st] = static_cast<int>(s.stages[st].size());
    bool turns = false;
    for (int vs = 0; vs + 1 < map.virtual_stages(); ++vs) turns = turns || map.stage_of[vs] == map.stage_of[vs + 1];
    if (!turns) return;
    const int vss = map.virtual_stages();
    std::vector<char> made(static_cast<size_t>(kProducts) * vss * s.m, 0);
    for (int st = 0; st < p; ++st) {
      const auto& ops = s.stages[st];
      const int n = static_cast<int>(ops.size());
      int i = 0;
      for (; i < n; ++i) {
        const Op& op = ops[i];
        if (!is_compute(op.type)) continue;
        auto dep = dependency_of(op, st, map);
        if (dep && !dep->remote && !made[product_key(dep->what, dep->vs, dep->mb, vss, s.m)]) break;
        if (auto what = product_of(op.type)) made[product_key(*what, map.vs(st, op.chunk), op.mb, vss, s.m)] = 1;
      }
      stuck_at[st] = i;
    }
  }
  // Where the local input of op i on `st` is made: its index on the stage, or -1 when never.
  int local_input_at(int st, int i) const {
    const auto& ops = s.stages[st];
    auto dep = dependency_of(ops[i], st, map);
    for (int j = 0; j < static_cast<int>(ops.size()); ++j)
      if (is_compute(ops[j].type) && product_of(ops[j].type) == dep->what && ops[j].mb == dep->mb &&
          map.vs(st, ops[j].chunk) == dep->vs)
        return j;
    return -1;
  }

  // Runs stage st until it blocks or finishes, queueing the stages its SENDs and steps release.
  void advance(int st) {
    const auto& ops = s.stages[st];
    const int n = static_cast<int>(ops.size()), stop = stuck_at[st];
    const int* channel = channel_of[st].data();
    int it = iter[st], i = cursor[st];
    Ticks clock = free_at[st];
    while (it < k) {
      OpTiming* times = options.op_times ? out.ops[it][st].data() : nullptr;
      const bool post_validating = it > 0 || options.post_validation_in_first_iteration;
      for (; i < n; ++i) {
        if (i == stop) {  // for ever: nothing wakes it
          iter[st] = it, cursor[st] = i, free_at[st] = clock;
          return;
        }
        const Op& op = ops[i];
        Ticks start = clock, end = start;
        const OpType type = op.type;
        if (is_compute(type)) {
          end = start + op_duration(op, st, pr);
          if (it == 0) {
            if (out.compute_start[st] < 0) out.compute_start[st] = start;
            out.compute_end[st] = end;
          }
        } else if (!post_validating && is_post_validation_op(type)) {
          // nothing to post-validate in the first iteration
        } else if (is_recv(type)) {
          Channel& ch = channels[channel[i]];
          if (ch.sent.size() <= ch.received) {
            blocked_on[st] = channel[i];
            iter[st] = it, cursor[st] = i, free_at[st] = clock;
            return;
          }
          start = end = std::max(start, ch.sent[ch.received++] + ch.latency);
        } else if (is_send(type)) {
          Channel& ch = channels[channel[i]];
          ch.sent.push_back(start);
          if (blocked_on[ch.to] == channel[i]) {
            blocked_on[ch.to] = -1;
            work.push_back(ch.to);
          }
        } else if (type == OpType::OPT_STEP && barrier) {
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
          end = *std::max_element(at.begin(), at.end()) + options.allreduce_latency;
          waiting_at_step[st] = false;
        }
        if (times) times[i] = {start, end};
        if (it == 0 && i == 0) out.first_start[st] = start;
        clock = end;
      }
      out.iteration_end[static_cast<size_t>(it) * p + st] = clock;
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

  // What stage st's stuck op waits for: (stage, op index), or (-1, -1) when nothing runs it.
  std::pair<int, int> blocker(int st) const {
    const int i = cursor[st];
    const Op& op = s.stages[st][i];
    if (i == stuck_at[st]) {
      const int at = local_input_at(st, i);
      return at < 0 ? std::pair{-1, -1} : std::pair{st, at};
    }
    if (is_recv(op.type)) {  // the SEND it pairs with: the next unreceived one on its channel
      const int c = channel_of[st][i], from = op.peer;
      std::vector<int> sends;  // the channel's SENDs in one iteration of the sender
      for (int j = 0; j < static_cast<int>(s.stages[from].size()); ++j)
        if (channel_of[from][j] == c && is_send(s.stages[from][j].type)) sends.push_back(j);
      if (sends.empty()) return {-1, -1};
      return {from, sends[channels[c].received % sends.size()]};
    }
    // A synchronous OPT_STEP waits for the first stage that has not reached it in this iteration.
    for (int t = 0; t < p; ++t)
      if (t != st && (iter[t] < iter[st] || (iter[t] == iter[st] && !waiting_at_step[t]))) {
        const auto& ops = s.stages[t];
        auto step = std::find_if(ops.begin(), ops.end(), [](const Op& o) { return o.type == OpType::OPT_STEP; });
        return {t, static_cast<int>(step - ops.begin())};
      }
    return {-1, -1};
  }
};

}  // namespace

std::string op_with_peer(const Schedule& s, int st, int i) {
  const Op& op = s.stages[st][i];
  std::string text = "op " + std::to_string(i) + " (" + op_short(op);
  if (is_send(op.type)) text += " to " + std::to_string(op.peer);
  if (is_recv(op.type)) text += " from " + std::to_string(op.peer);
  return text + ")";
}

Diag deadlock_chain(const Schedule& s, const std::vector<int>& cursor, int first, const std::string& prefix,
                    const std::function<std::pair<int, int>(int stage)>& blocker) {
  Diag d{"", "", first, cursor[first], op_short(s.stages[first][cursor[first]]), prefix};
  std::vector<bool> seen(s.p, false);
  seen[first] = true;
  for (int st = first;;) {
    auto [t, k] = blocker(st);
    if (t < 0) {  // cannot happen after validation; keep the message finite anyway
      d.message += " waits for an op that no stage runs";
      break;
    }
    d.message += " waits for stage " + std::to_string(t) + " " + op_with_peer(s, t, k);
    const bool finished = cursor[t] >= static_cast<int>(s.stages[t].size());
    if (!finished && cursor[t] != k) d.message += "; stage " + std::to_string(t) + " is stuck at " + op_with_peer(s, t, cursor[t]);
    if (seen[t] || finished) break;
    seen[t] = true;
    d.message += ", which";
    st = t;
  }
  return d;
}

std::optional<LoweredReplay> replay_lowered(const Schedule& s, const Problem& pr, const ReplayOptions& options,
                                            std::vector<Diag>* diags) {
  LoweredReplay out;
  Replay replay(s, pr, options, out);
  replay.run();
  int first = 0;
  while (first < s.p && replay.iter[first] >= replay.k) ++first;
  if (first == s.p) return out;
  std::vector<int> cursor = replay.cursor;
  for (int st = 0; st < s.p; ++st)
    if (replay.iter[st] >= replay.k) cursor[st] = static_cast<int>(s.stages[st].size());
  const std::string prefix = replay.k == 1 ? "deadlock in replay:"
                                           : "deadlock in iteration " + std::to_string(replay.iter[first]) + " of " +
                                                 std::to_string(replay.k) + ":";
  diags->push_back(deadlock_chain(s, cursor, first, prefix, [&](int st) { return replay.blocker(st); }));
  return std::nullopt;
}

}  // namespace zbpp
