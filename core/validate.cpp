// Schedule checks (see validate.h).
#include "core/validate.h"

#include <algorithm>
#include <array>
#include <optional>
#include <map>
#include <tuple>

#include "core/deps.h"
#include "core/lowered.h"
#include "core/message_order.h"
#include "core/replay.h"
#include "core/simulate.h"

namespace zbpp {

namespace {

Diag at(int stage, int index, const Op& op, const std::string& msg) { return {"", "", stage, index, op_short(op), msg}; }
Diag at_stage(int stage, const std::string& msg) { return {"", "", stage, -1, "", msg}; }

// Shape of the schedule against the problem; false when ops cannot even be indexed.
bool check_shape(const Schedule& s, const Problem& pr, std::vector<Diag>* out) {
  size_t before = out->size();
  auto say = [&](const std::string& msg) { add_diag(out, {"", "", -1, -1, "", msg}); };
  if (s.p != pr.p) say("schedule has p = " + std::to_string(s.p) + " but its problem has p = " + std::to_string(pr.p));
  if (s.m != pr.m) say("schedule has m = " + std::to_string(s.m) + " but its problem has m = " + std::to_string(pr.m));
  if (s.chunks != pr.chunks)
    say("schedule has chunks = " + std::to_string(s.chunks) + " but its problem has " + std::to_string(pr.chunks));
  // The rest sizes tables by p x chunks: only once both agree with the (checked, bounded) problem.
  if (out->size() != before) return false;
  if (static_cast<int>(s.stages.size()) != s.p)
    say("schedule lists " + std::to_string(s.stages.size()) + " stages but p = " + std::to_string(s.p));
  bool placement_ok = static_cast<int>(s.placement.size()) == s.p;
  std::vector<bool> seen(static_cast<size_t>(std::max(0, s.p * s.chunks)), false);
  for (const auto& row : s.placement) {
    placement_ok = placement_ok && static_cast<int>(row.size()) == s.chunks;
    for (int vs : row) {
      bool fresh = vs >= 0 && vs < s.p * s.chunks && !seen[vs];
      placement_ok = placement_ok && fresh;
      if (fresh) seen[vs] = true;
    }
  }
  if (!placement_ok)
    say("placement must give each of the " + std::to_string(s.p) + " stages " + std::to_string(s.chunks) +
        " distinct virtual stage(s) in 0.." + std::to_string(s.p * s.chunks - 1));
  return out->size() == before;
}

}  // namespace

std::vector<Diag> validate_structure(const Schedule& s, const Problem& pr) {
  std::vector<Diag> out;
  if (!check_shape(s, pr, &out)) return out;

  // Position of each kind of op per (stage, chunk, mb); -1 = absent.
  enum { kF = kKindF, kB = kKindB, kW = kKindW, kBW = kKindBW };
  for (int st = 0; st < s.p; ++st) {
    const auto& ops = s.stages[st];
    std::vector<std::array<int, kComputeKinds>> pos(static_cast<size_t>(s.chunks) * s.m, {-1, -1, -1, -1});
    bool fields_ok = true;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      if (!is_compute(op.type)) {
        add_diag(&out, at(st, i, op, op_type_name(op.type) + " is not a compute op; a compute-level schedule holds F, B, W and BW only"));
        fields_ok = false;
        continue;
      }
      if (op.mb < 0 || op.mb >= s.m) {
        add_diag(&out, at(st, i, op, "microbatch " + std::to_string(op.mb) + " out of range 0.." + std::to_string(s.m - 1)));
        fields_ok = false;
        continue;
      }
      if (op.chunk < 0 || op.chunk >= s.chunks) {
        add_diag(&out, at(st, i, op, "chunk " + std::to_string(op.chunk) + " out of range 0.." + std::to_string(s.chunks - 1)));
        fields_ok = false;
        continue;
      }
      int& slot = pos[static_cast<size_t>(op.chunk) * s.m + op.mb][compute_kind(op.type)];
      if (slot >= 0) {
        add_diag(&out, at(st, i, op, "duplicate " + op_short(op) + " (first at op " + std::to_string(slot) + ")"));
        fields_ok = false;
        continue;
      }
      slot = i;
    }
    if (!fields_ok) continue;
    for (int c = 0; c < s.chunks; ++c) {
      for (int mb = 0; mb < s.m; ++mb) {
        const auto& p = pos[static_cast<size_t>(c) * s.m + mb];
        auto name = [&](OpType t) { return op_short(Op{t, mb, c}); };
        if (p[kF] < 0) add_diag(&out, at_stage(st, name(OpType::F) + " is missing"));
        if (p[kBW] >= 0 && (p[kB] >= 0 || p[kW] >= 0)) {
          int other = p[kB] >= 0 ? p[kB] : p[kW];
          add_diag(&out, at(st, other, ops[other], op_short(ops[other]) + " duplicates work of " + name(OpType::BW) +
                                                      " (op " + std::to_string(p[kBW]) + "), which is B and W fused"));
          continue;
        }
        if (p[kBW] < 0 && p[kB] < 0) {
          add_diag(&out, at_stage(st, name(OpType::B) + " (or " + name(OpType::BW) + ") is missing"));
        } else if (p[kB] >= 0 && p[kW] < 0) {
          add_diag(&out, at_stage(st, name(OpType::W) + " is missing (its B is op " + std::to_string(p[kB]) + ")"));
        }
        int back = p[kBW] >= 0 ? p[kBW] : p[kB];
        if (p[kF] >= 0 && back >= 0 && back < p[kF])
          add_diag(&out, at(st, back, ops[back], op_short(ops[back]) + " before its F (op " + std::to_string(p[kF]) + ")"));
        if (p[kB] >= 0 && p[kW] >= 0 && p[kW] < p[kB])
          add_diag(&out, at(st, p[kW], ops[p[kW]], "W before its B (op " + std::to_string(p[kB]) + ")"));
      }
    }
  }
  return out;
}

std::vector<Diag> validate_message_order(const Schedule& s) {
  std::vector<Diag> out;
  const auto crossings = find_message_crossings(s);
  if (crossings.empty()) return out;
  const VirtualStageMap map(s.placement);
  for (const MessageCrossing& c : crossings) {
    const Op& op = s.stages[c.to][c.receiver_op];
    const Op& sender = s.stages[c.from][c.sender_op];
    const Op first_needs{c.what == Product::Forward ? OpType::F : OpType::B, sender.mb, map.chunk_of[c.sent_for_vs]};
    add_diag(&out, at(c.to, c.receiver_op, op,
                      "stage " + std::to_string(c.from) + " sends the input of " + op_short(first_needs) +
                          " first (made by its op " + std::to_string(c.sender_op) + ", " + op_short(sender) +
                          "), but this stage runs " + op_short(op) + " before it: one stage's messages to "
                          "another arrive in the order sent, so the ops that need them run in that order"));
  }
  return out;
}

std::vector<Diag> validate_memory(const Schedule& s, const Problem& pr) {
  std::vector<Diag> out;
  if (!pr.limited()) return out;
  for (int st = 0; st < s.p; ++st) {
    const Mem limit = *pr.limit(st);
    const std::string limit_text = pr.stage_mem_limits.empty() ? mem_limit_text(pr) : format_quanta(limit) + " (stage " + std::to_string(st) + "'s)";
    Mem now = 0;
    for (int i = 0; i < static_cast<int>(s.stages[st].size()); ++i) {
      now += memory_delta(s.stages[st][i], st, pr);
      if (now > limit) {
        add_diag(&out, at(st, i, s.stages[st][i], "activation memory reaches " + format_quanta(now) +
                                                     ", over the limit " + limit_text));
        break;
      }
    }
  }
  return out;
}

namespace {

std::string where(const Schedule& s, int st, int i) { return "stage " + std::to_string(st) + " " + op_with_peer(s, st, i); }


// "0 -> 1 -> 2", or "0 -> 1 -> ... -> 31" for a long chain.
std::string chain_text(const std::vector<int>& order) {
  std::string out;
  for (size_t k = 0; k < order.size(); ++k) {
    if (order.size() > 8 && k == 2) {
      out += " -> ...";
      k = order.size() - 2;
      continue;
    }
    out += (k ? " -> " : "") + std::to_string(order[k]);
  }
  return out;
}

// The optimizer's ops on stage st. sync: OPT_STEP alone, last. post-validation (paper §4), along
// the paths of lower.h's state_chain: the stage ends with [RECV_STATE] [SEND_STATE] OPT_STEP, and
// runs [RECV_VALID] [SEND_VALID] VALIDATE, in that order, before its first W (VALIDATE may roll
// back the previous step, which needs that step's gradients, and only then clears them).
void check_optimizer_ops(const Schedule& s, int st, const StateChain& chain, std::vector<Diag>* out) {
  const auto& ops = s.stages[st];
  const int n = static_cast<int>(ops.size());
  const bool post = s.optimizer == Optimizer::kPostValidation;
  std::array<std::vector<int>, static_cast<size_t>(OpType::VALIDATE) + 1> seen;  // [op type] -> indices
  int first_w = n;
  for (int i = 0; i < n; ++i) {
    if (is_optimizer_op(ops[i].type)) seen[static_cast<size_t>(ops[i].type)].push_back(i);
    if ((ops[i].type == OpType::W || ops[i].type == OpType::BW) && first_w == n) first_w = i;
  }
  // "the state goes 0 -> 1 -> 2", or the verdict's path, for a message of type t.
  auto paths_text = [&](OpType t) {
    bool state = t == OpType::RECV_STATE || t == OpType::SEND_STATE;
    if (state) return "the state goes " + chain_text(chain.state) + ", in the order the stages start";
    return "the verdict goes " + chain_text(chain.verdict) +
           ", from the state's last stage, then in the order of first B's";
  };
  auto expect = [&](OpType t, bool wanted, int peer) -> int {  // its index, -1 when absent or wrong
    const auto& at_ = seen[static_cast<size_t>(t)];
    if (!wanted) {
      for (int i : at_)
        add_diag(out, at(st, i, ops[i], post ? "this stage has no neighbour to exchange optimizer state with there: " +
                                                       paths_text(t) + "; lower the schedule again with zbplan plan"
                                                : "belongs to post-validation, but this file's optimizer is \"sync\""));
      return -1;
    }
    if (at_.empty()) {
      std::string why = t == OpType::OPT_STEP ? " (it must end every stage)"
                        : peer >= 0           ? " with stage " + std::to_string(peer) + " (post-validation needs it)"
                                              : " (post-validation needs it on every stage)";
      add_diag(out, at_stage(st, op_type_name(t) + " is missing" + why));
      return -1;
    }
    for (size_t k = 1; k < at_.size(); ++k) add_diag(out, at(st, at_[k], ops[at_[k]], "second " + op_type_name(t) + " on this stage"));
    if (ops[at_[0]].peer != peer) {
      // OPT_STEP (and VALIDATE) take no peer: the stage's own step.
      add_diag(out, at(st, at_[0], ops[at_[0]],
                       peer < 0 ? "names peer stage " + std::to_string(ops[at_[0]].peer) + ", but " + op_type_name(t) +
                                      " is this stage's own and takes no peer; drop its \"peer\" (or lower the "
                                      "schedule again with zbplan plan)"
                                : "exchanges state with stage " + std::to_string(ops[at_[0]].peer) + ", expected stage " +
                                      std::to_string(peer) + " (" + paths_text(t) +
                                      "; lower the schedule again with zbplan plan)"));
      return -1;
    }
    return at_.size() == 1 ? at_[0] : -1;
  };
  int step = expect(OpType::OPT_STEP, true, -1);
  if (step >= 0 && step + 1 != n) add_diag(out, at(st, step, ops[step], "OPT_STEP must be the stage's last op"));
  auto expect_peer = [&](OpType t, int peer) { return expect(t, post && peer >= 0, peer); };
  int recv_state = expect_peer(OpType::RECV_STATE, chain.state_from[st]);
  int send_state = expect_peer(OpType::SEND_STATE, chain.state_to[st]);
  int recv_valid = expect_peer(OpType::RECV_VALID, chain.verdict_from[st]);
  int send_valid = expect_peer(OpType::SEND_VALID, chain.verdict_to[st]);
  int validate = expect(OpType::VALIDATE, post, -1);
  if (!post) return;
  // The tail: RECV_STATE, SEND_STATE, OPT_STEP as the last ops.
  std::vector<int> tail;
  for (int i : {recv_state, send_state, step})
    if (i >= 0) tail.push_back(i);
  for (size_t k = 0; k < tail.size(); ++k)
    if (tail[k] != n - static_cast<int>(tail.size() - k))
      add_diag(out, at(st, tail[k], ops[tail[k]], "must be among the stage's last ops, in the order RECV_STATE, SEND_STATE, "
                                                   "OPT_STEP (the state passes on once all of this stage's gradients are made)"));
  // The validation: RECV_VALID, SEND_VALID, VALIDATE in order, before the first W.
  int last = -1;
  for (int i : {recv_valid, send_valid, validate}) {
    if (i < 0) continue;
    if (i < last) add_diag(out, at(st, i, ops[i], "out of order: RECV_VALID, SEND_VALID and VALIDATE come in that order"));
    last = std::max(last, i);
  }
  if (validate >= 0 && validate > first_w)
    add_diag(out, at(st, validate, ops[validate], "must come before the stage's first W (" + op_with_peer(s, st, first_w) +
                                                       "): the rollback it may do needs the previous step's gradients"));
}

}  // namespace

namespace {

// The checks of a lowered file's ops, stage by stage (each message's peer and tensor, each compute
// op's activation slot and remote input and output), then of its channels (the sends and receives
// between two stages pair up one to one, in order). Findings go to *out.
class LoweredChecks {
 public:
  LoweredChecks(const Schedule& s, const StateChain& chain, std::vector<Diag>* out)
      : s_(s), chain_(chain), out_(out), map_(s.placement), max_slots_(s.m * s.chunks),
        per_kind_(static_cast<size_t>(s.chunks) * s.m), received_(2 * per_kind_), unsent_(2 * per_kind_),
        slot_holder_(max_slots_), slot_of_(per_kind_) {}

  void stage(int st) {
    const auto& ops = s_.stages[st];
    std::fill(received_.begin(), received_.end(), -1);
    std::fill(unsent_.begin(), unsent_.end(), -1);
    std::fill(slot_holder_.begin(), slot_holder_.end(), -1);
    std::fill(slot_of_.begin(), slot_of_.end(), -1);
    recent_.clear();
    check_optimizer_ops(s_, st, chain_, out_);
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      const bool comm = is_send(op.type) || is_recv(op.type);
      if (comm && (op.peer < 0 || op.peer >= s_.p || op.peer == st)) {
        add_diag(out_, at(st, i, op, "peer " + std::to_string(op.peer) + " is not another stage (0.." +
                                         std::to_string(s_.p - 1) + ")"));
        continue;
      }
      if (is_optimizer_op(op.type)) {  // checked by check_optimizer_ops; state messages pair by order
        if (is_send(op.type)) channel_ops(sends_, {message_kind(op.type), st, op.peer}).push_back(i);
        if (is_recv(op.type)) channel_ops(recvs_, {message_kind(op.type), op.peer, st}).push_back(i);
        continue;
      }
      if (comm && (op.mb < 0 || op.mb >= s_.m || op.chunk < 0 || op.chunk >= s_.chunks)) {
        add_diag(out_, at(st, i, op, "microbatch or chunk out of range"));
        continue;
      }
      if (is_tensor_message(op.type)) {
        if (is_recv(op.type)) receive(st, i, op);
        else send(st, i, op);
        continue;
      }
      compute(st, i, op);
    }
    // In (kind, chunk, mb) order.
    for (int i : received_)
      if (i >= 0) add_diag(out_, at(st, i, ops[i], "receives a tensor no op here uses"));
    for (int i : unsent_)
      if (i >= 0) add_diag(out_, at(st, i, ops[i], "its output is needed on another stage but never sent"));
  }

  // Sends and receives pair up one to one, in order, per (kind, from, to).
  void channels() {
    std::map<Channel, std::pair<std::vector<int>, std::vector<int>>> channels;  // in (kind, from, to) order
    for (auto& [key, ops] : sends_) channels[key].first = std::move(ops);
    for (auto& [key, ops] : recvs_) channels[key].second = std::move(ops);
    for (const auto& [key, ends] : channels) {
      const auto& [kind, a, b] = key;
      const auto& [out_a, in_b] = ends;
      for (size_t k = 0; k < std::max(out_a.size(), in_b.size()); ++k) {
        if (k >= in_b.size()) {
          add_diag(out_, at(a, out_a[k], s_.stages[a][out_a[k]], "has no matching receive on stage " + std::to_string(b)));
          break;
        }
        if (k >= out_a.size()) {
          add_diag(out_, at(b, in_b[k], s_.stages[b][in_b[k]], "has no matching send on stage " + std::to_string(a)));
          break;
        }
        const Op& snd = s_.stages[a][out_a[k]];
        const Op& rcv = s_.stages[b][in_b[k]];
        int snd_vs = map_.vs(a, snd.chunk), rcv_vs = map_.vs(b, rcv.chunk);
        bool same = kind >= 2 || (snd.mb == rcv.mb && rcv_vs == message_consumer_vs(message_product(snd.type), snd_vs));
        if (!same) {
          add_diag(out_, at(a, out_a[k], snd,
                            "is message " + std::to_string(k) + " from stage " + std::to_string(a) + " to stage " +
                                std::to_string(b) + ", but message " + std::to_string(k) + " received there is " +
                                where(s_, b, in_b[k]) + ": sends and receives must be in the same order"));
          break;
        }
      }
    }
  }

 private:
  // (kind, from, to) -> op indices of each SEND, then each RECV, in order; only the channels in
  // use (tables of every p x p pair took 1.6 GB at p = 4096 for 20000 ops).
  using Channel = std::tuple<int, int, int>;
  // A stage talks to a few peers: the channels it used last, so most ops skip the map lookup.
  struct Recent {
    const void* table;
    Channel key;
    std::vector<int>* ops;
  };

  std::vector<int>& channel_ops(std::map<Channel, std::vector<int>>& table, const Channel& key) {
    for (const Recent& r : recent_)
      if (r.table == &table && r.key == key) return *r.ops;
    recent_.push_back({&table, key, &table[key]});
    return *recent_.back().ops;
  }

  // Per stage, messages are indexed by (kind, chunk, mb) with kind 0 (activations) or 1 (gradients).
  size_t message(int kind, const Op& op) const {
    return kind * per_kind_ + static_cast<size_t>(op.chunk) * s_.m + op.mb;
  }

  // A RECV: whose output is this? The producer of the consumer's input on this stage.
  void receive(int st, int i, const Op& op) {
    const Op consumer = message_compute_op(op);
    auto dep = dependency_of(consumer, st, map_);
    if (!dep || !dep->remote || map_.stage_of[dep->vs] != op.peer) {
      add_diag(out_, at(st, i, op, "receives nothing this stage's " + op_short(consumer) + " needs from stage " +
                                       std::to_string(op.peer)));
      return;
    }
    received_[message(message_kind(op.type), op)] = i;
    channel_ops(recvs_, {message_kind(op.type), op.peer, st}).push_back(i);
  }

  // A SEND: of a tensor this stage made and has not sent, to the stage of its consumer.
  void send(int st, int i, const Op& op) {
    const int kind = message_kind(op.type);
    int& made = unsent_[message(kind, op)];
    if (made < 0) {
      add_diag(out_, at(st, i, op, "sends a tensor this stage has not made yet (or sends it twice)"));
      return;
    }
    const int to = consumer_of(message_compute_op(op), st, map_)->stage;
    if (op.peer != to) {
      add_diag(out_, at(st, i, op, "sends to stage " + std::to_string(op.peer) + ", but its consumer runs on stage " +
                                       std::to_string(to)));
      return;
    }
    made = -1;
    channel_ops(sends_, {kind, st, op.peer}).push_back(i);
  }

  // A compute op: its activation slot (F takes a free one, its B/W use the same, W frees it), its
  // remote input received before it, its remote output remembered until sent.
  void compute(int st, int i, const Op& op) {
    if (op.slot < 0 || op.slot >= max_slots_) {
      add_diag(out_, at(st, i, op, "needs an activation slot in 0.." + std::to_string(max_slots_ - 1) +
                                       (op.slot < 0 ? " (none given)" : ", got " + std::to_string(op.slot))));
      return;
    }
    const int activation = op.chunk * s_.m + op.mb;
    if (op.type == OpType::F) {
      if (int held = slot_holder_[op.slot]; held >= 0) {
        add_diag(out_, at(st, i, op, "slot " + std::to_string(op.slot) + " still holds " +
                                         op_short(Op{OpType::F, held % s_.m, held / s_.m}) +
                                         " (a slot is free again after its microbatch's W)"));
        return;
      }
      slot_holder_[op.slot] = activation;
      slot_of_[activation] = op.slot;
    } else {
      int stored = slot_of_[activation];
      if (op.slot != stored) {
        add_diag(out_, at(st, i, op, "uses slot " + std::to_string(op.slot) + ", but its F stored into slot " +
                                         std::to_string(stored)));
        return;
      }
      if (op.type == OpType::W || op.type == OpType::BW) slot_holder_[op.slot] = -1;
    }
    if (auto dep = dependency_of(op, st, map_); dep && dep->remote) {
      int& recv = received_[message(message_kind(dep->what), op)];
      if (recv >= 0)
        recv = -1;
      else
        add_diag(out_, at(st, i, op, "its input comes from stage " + std::to_string(map_.stage_of[dep->vs]) +
                                         ", but no " + op_type_name(recv_type(dep->what)) + " for it comes before"));
    }
    if (auto to = consumer_of(op, st, map_); to && to->remote) unsent_[message(message_kind(to->what), op)] = i;
  }

  const Schedule& s_;
  const StateChain& chain_;
  std::vector<Diag>* out_;
  const VirtualStageMap map_;
  const int max_slots_;
  const size_t per_kind_;
  std::map<Channel, std::vector<int>> sends_, recvs_;
  std::vector<Recent> recent_;
  // Flat tables, reset for each stage; -1: none.
  std::vector<int> received_, unsent_;  // (kind, chunk, mb) -> op index
  std::vector<int> slot_holder_;        // slot -> chunk * m + mb whose activations it holds
  std::vector<int> slot_of_;            // (chunk, mb) -> its slot
};

std::vector<Diag> check_lowered(const Schedule& s, const Problem& pr, bool replay_too) {
  std::vector<Diag> out;
  if (!check_shape(s, pr, &out)) return out;
  // 1. The compute ops alone form a sound schedule; map their positions back to the file's.
  Schedule projection = compute_projection(s);
  // A finding's op index in the projection -> in the file (built only when there is a finding).
  auto file_index = [&](const Diag& d) {
    int seen = -1;
    for (int i = 0; i < static_cast<int>(s.stages[d.stage].size()); ++i)
      if (is_compute(s.stages[d.stage][i].type) && ++seen == d.op_index) return i;
    return d.op_index;
  };
  for (Diag d : validate_structure(projection, pr)) {
    if (d.stage >= 0 && d.op_index >= 0) d.op_index = file_index(d);
    add_diag(&out, d);
  }
  if (!out.empty()) return out;

  // 2. Each stage's ops, then the channels between stages.
  const StateChain chain = state_chain(projection);
  LoweredChecks checks(s, chain, &out);
  for (int st = 0; st < s.p; ++st) checks.stage(st);
  if (!out.empty()) return out;
  checks.channels();
  if (!out.empty()) return out;

  // 3. Memory of the compute ops, then the replay.
  for (Diag d : validate_memory(projection, pr)) {
    if (d.stage >= 0 && d.op_index >= 0) d.op_index = file_index(d);
    add_diag(&out, d);
  }
  if (!replay_too) return out;
  // The replay of one iteration, with the validation ops of every later one.
  ReplayOptions replay;
  replay.post_validation_in_first_iteration = true;
  replay.op_times = false;
  std::vector<Diag> deadlock;
  if (!replay_lowered(s, pr, replay, &deadlock)) add_diag(&out, deadlock.at(0));
  return out;
}

}  // namespace

std::vector<Diag> validate_lowered(const Schedule& s, const Problem& pr) { return check_lowered(s, pr, true); }

bool lowered_replayable(const Schedule& s, const Problem& pr) {
  std::vector<Diag> unused;
  if (!check_shape(s, pr, &unused)) return false;
  for (int st = 0; st < s.p; ++st)
    for (const Op& op : s.stages[st]) {
      const bool message = is_send(op.type) || is_recv(op.type);
      if (message && (op.peer < 0 || op.peer >= s.p || op.peer == st)) return false;
      if (!is_optimizer_op(op.type) && (op.mb < 0 || op.mb >= s.m || op.chunk < 0 || op.chunk >= s.chunks)) return false;
    }
  return true;
}

std::vector<Diag> validate_lowered_but_replay(const Schedule& s, const Problem& pr) {
  return check_lowered(s, pr, false);
}

namespace {

std::vector<Diag> check_all(const Schedule& s, const Problem& pr, const std::string& file,
                            std::optional<Timeline>* timeline, bool message_order) {
  std::vector<Diag> out;
  if (s.level == Level::kLowered) {
    out = validate_lowered(s, pr);
  } else {
    out = validate_structure(s, pr);
    if (out.empty()) {
      out = validate_memory(s, pr);
      std::optional<Timeline> simulated;
      if (timeline) simulated = simulate_timeline(s, pr, &out);
      else simulate_cost(s, pr, Cost::kSpan, &out);  // the deadlock check alone keeps no op times
      // After the deadlock check: a deadlock's wait chain says more than the crossing it also has.
      if (out.empty() && message_order) out = validate_message_order(s);
      if (out.empty() && timeline) *timeline = std::move(simulated);
    }
  }
  for (Diag& d : out) d.file = file;
  return out;
}

}  // namespace

std::vector<Diag> validate(const Schedule& s, const Problem& pr, const std::string& file,
                           std::optional<Timeline>* timeline) {
  return check_all(s, pr, file, timeline, true);
}

std::vector<Diag> validate_but_message_order(const Schedule& s, const Problem& pr, const std::string& file) {
  return check_all(s, pr, file, nullptr, false);
}

std::vector<Diag> validate_warnings(const Schedule& s, const std::string& file) {
  std::vector<Diag> out;
  for (int st = 0; st < static_cast<int>(s.stages.size()); ++st) {
    const auto& ops = s.stages[st];
    std::map<int, int> last;  // chunk -> index of its latest W or BW so far
    std::map<int, bool> told;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (ops[i].type != OpType::W && ops[i].type != OpType::BW) continue;
      auto prev = last.find(ops[i].chunk);
      if (prev != last.end() && ops[prev->second].mb > ops[i].mb && !told[ops[i].chunk]) {
        told[ops[i].chunk] = true;
        Diag d = at(st, prev->second, ops[prev->second],
                    op_short(ops[prev->second]) + " runs before " + op_short(ops[i]) + " (op " + std::to_string(i) +
                        "): this file does not keep bit-identity (weight gradients add up out of microbatch order, "
                        "so the trained weights differ from other schedules'); run each stage's W ops in microbatch "
                        "order");
        d.file = file;
        d.warning = true;
        add_diag(&out, d);
      }
      if (prev == last.end() || ops[i].mb > ops[prev->second].mb) last[ops[i].chunk] = i;
    }
  }
  return out;
}

}  // namespace zbpp
