// Tests for planner/lower.cpp and validate_lowered: every generator's schedule lowers to a file
// that validates and replays, slots stay within the stage's microbatches in flight, and broken
// lowered files are rejected with both ranks' positions.
#include "planner/lower.h"

#include <catch2/catch.hpp>

#include "core/simulate.h"
#include "core/simulate_iterations.h"
#include "planner/gen_baseline.h"
#include "test_util.h"

using namespace zbpp;
using zbpp::test::make_problem;

namespace {
std::vector<std::string> errors(const Schedule& s, const Problem& pr) {
  std::vector<std::string> out;
  for (const Diag& d : validate(s, pr)) out.push_back(format_diag(d));
  return out;
}

std::string text(const std::vector<Op>& ops) {
  std::string out;
  for (const Op& op : ops) out += (out.empty() ? "" : " ") + op_short(op);
  return out;
}

size_t find(const std::vector<Op>& ops, OpType type, int mb) {
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].type == type && ops[i].mb == mb) return i;
  FAIL("op not found");
  return 0;
}
}  // namespace

TEST_CASE("lower: every baseline lowers to a valid file with the same timeline") {
  for (int p : {1, 2, 3, 4}) {
    for (int m : {1, p, 2 * p + 1}) {
      INFO("p=" << p << " m=" << m);
      Problem pr = make_problem(p, m, 1, 1.5, 0.5, 0.1);
      for (const Schedule& s : {generate_1f1b(pr), generate_zb_h1(pr), generate_zb_h2(pr)}) {
        Schedule lowered = lower_comms(s);
        CHECK(errors(lowered, pr).empty());
        std::vector<Diag> d;
        CHECK(simulate_timeline(lowered, pr, &d)->span == simulate_timeline(s, pr, &d)->span);
        CHECK(compute_projection(lowered).stages == s.stages);
      }
      Problem two = make_problem(p, m, 1, 1.5, 0.5, 0.1, 0.5, 0.25, "", 2);
      CHECK(errors(lower_comms(generate_zb_v_handcrafted(two)), two).empty());
      std::string err;
      if (m % p == 0) CHECK(errors(lower_comms(*generate_1f1b_interleaved(two, &err)), two).empty());
    }
  }
}

TEST_CASE("lower: receives come right before use, sends right after, and OPT_STEP last") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  Schedule lowered = lower_comms(generate_zb_h1(pr));
  CHECK(text(lowered.stages[0]) == "F0 SEND_F0 F1 SEND_F1 RECV_B0 B0 W0 RECV_B1 B1 W1 OPT_STEP");
  CHECK(text(lowered.stages[1]) == "RECV_F0 F0 B0 SEND_B0 RECV_F1 F1 B1 SEND_B1 W0 W1 OPT_STEP");
  CHECK(lowered.stages[1][0].peer == 0);
  CHECK(lowered.stages[0][1].peer == 1);
}

TEST_CASE("lower: slots are reused and bounded by the microbatches in flight") {
  Problem pr = make_problem(4, 12, 1, 1, 1);
  Schedule h1 = lower_comms(generate_zb_h1(pr));
  // ZB-H1 stage s holds p - s F's plus s W's: p microbatches in flight on every stage.
  CHECK(slots_per_stage(h1) == std::vector<int>{4, 4, 4, 4});
  Schedule ones = lower_comms(generate_1f1b(pr));
  CHECK(slots_per_stage(ones) == std::vector<int>{4, 3, 2, 1});
  // A microbatch keeps its slot from F to its last backward op.
  const auto& st = h1.stages[2];
  CHECK(st[find(st, OpType::F, 5)].slot == st[find(st, OpType::W, 5)].slot);
}

TEST_CASE("lower: a missing receive, a wrong peer and a missing OPT_STEP are located") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  Schedule s = lower_comms(generate_zb_h1(pr));
  Schedule no_recv = s;
  no_recv.stages[1].erase(no_recv.stages[1].begin() + 4);  // RECV_F1
  CHECK(errors(no_recv, pr).at(0) ==
        "stage 1, op 4 (F1): its input comes from stage 0, but no RECV_F for it comes before");
  Schedule wrong_peer = s;
  wrong_peer.stages[0][1].peer = 0;
  CHECK(errors(wrong_peer, pr).at(0) == "stage 0, op 1 (SEND_F0): peer 0 is not another stage (0..1)");
  Schedule no_step = s;
  no_step.stages[0].pop_back();
  CHECK(errors(no_step, pr).at(0) == "stage 0: OPT_STEP is missing (it must end every stage)");
}

TEST_CASE("lower: sends and receives in different orders are rejected with both positions") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  Schedule s = lower_comms(generate_zb_h1(pr));
  // Stage 0 computes F1 before F0: its sends go out as F1, F0 but stage 1 receives F0 first.
  s.stages[0] = *parse_ops("F1 SEND_F1 F0 SEND_F0 RECV_B0 B0 W0 RECV_B1 B1 W1 OPT_STEP", nullptr);
  s.stages[0][1].peer = s.stages[0][3].peer = 1;
  s.stages[0][4].peer = s.stages[0][7].peer = 1;
  for (int i : {0, 8, 9}) s.stages[0][i].slot = 1;  // F1, B1, W1
  for (int i : {2, 5, 6}) s.stages[0][i].slot = 0;  // F0, B0, W0
  CHECK(errors(s, pr).at(0) ==
        "stage 0, op 1 (SEND_F1): is message 0 from stage 0 to stage 1, but message 0 received there is stage 1 op 0 "
        "(RECV_F0 from 0): sends and receives must be in the same order");
}

TEST_CASE("lower: a receive moved before the send it waits for is a replay deadlock naming both ranks") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  Schedule s = lower_comms(generate_zb_h1(pr));
  // Stage 0 waits for B0's gradient before it has sent F1; stage 1 waits for F1 before sending B1,
  // but that is fine; the cycle is stage 0 RECV_B0 <- stage 1 SEND_B0 <- ... <- stage 0 SEND_F0.
  auto& st0 = s.stages[0];
  Op recv = st0[4];  // RECV_B0
  st0.erase(st0.begin() + 4);
  st0.insert(st0.begin(), recv);
  auto found = errors(s, pr);
  REQUIRE(found.size() == 1);
  CHECK(found[0] ==
        "stage 0, op 0 (RECV_B0): deadlock in replay: waits for stage 1 op 3 (SEND_B0 to 0); stage 1 is stuck at op 0 "
        "(RECV_F0 from 0), which waits for stage 0 op 2 (SEND_F0 to 1); stage 0 is stuck at op 0 (RECV_B0 from 1)");
}

TEST_CASE("lower: activation slots are checked: present, shared by F/B/W, never two microbatches at once") {
  Problem pr = make_problem(2, 3, 1, 1, 1);
  Schedule s = lower_comms(generate_zb_h1(pr));
  // stage 1: RECV_F0 F0 B0 SEND_B0 RECV_F1 F1 B1 SEND_B1 W0 RECV_F2 F2 B2 SEND_B2 W1 W2 OPT_STEP
  Schedule missing = s;
  missing.stages[1][1].slot = -1;
  CHECK(errors(missing, pr).at(0) == "stage 1, op 1 (F0): needs an activation slot in 0..2 (none given)");
  Schedule huge = s;
  huge.stages[1][1].slot = 1000000000;
  CHECK(errors(huge, pr).at(0) == "stage 1, op 1 (F0): needs an activation slot in 0..2, got 1000000000");
  Schedule wrong = s;
  wrong.stages[1][2].slot = 1;  // B0 not in F0's slot
  CHECK(errors(wrong, pr).at(0) == "stage 1, op 2 (B0): uses slot 1, but its F stored into slot 0");
  Schedule shared = s;
  shared.stages[1][5].slot = 0;  // F1 into F0's slot while F0 still waits for W0
  CHECK(errors(shared, pr).at(0) == "stage 1, op 5 (F1): slot 0 still holds F0 (a slot is free again after its microbatch's W)");
}

TEST_CASE("lower: post-validation adds the state chain forward and the verdict back, before the first B") {
  Problem pr = make_problem(3, 2, 1, 1, 1);
  Schedule s = lower_comms(generate_zb_h1(pr), {Optimizer::kPostValidation, PostValidationAt::kFirstBackward});
  CHECK(s.optimizer == Optimizer::kPostValidation);
  CHECK(text(s.stages[0]) == "F0 SEND_F0 F1 SEND_F1 RECV_VALID VALIDATE RECV_B0 B0 W0 RECV_B1 B1 W1 SEND_STATE OPT_STEP");
  CHECK(text(s.stages[1]) ==
        "RECV_F0 F0 SEND_F0 RECV_F1 F1 SEND_F1 RECV_VALID SEND_VALID VALIDATE RECV_B0 B0 SEND_B0 RECV_B1 B1 SEND_B1 W0 W1 "
        "RECV_STATE SEND_STATE OPT_STEP");
  // The state's last stage holds the verdict from its own step: it sends it first thing.
  CHECK(text(s.stages[2]) ==
        "SEND_VALID RECV_F0 F0 VALIDATE B0 SEND_B0 RECV_F1 F1 B1 SEND_B1 W0 W1 RECV_STATE OPT_STEP");
  CHECK(errors(s, pr).empty());
  Schedule held = lower_comms(generate_zb_h1(pr), {Optimizer::kPostValidation, PostValidationAt::kStart});
  CHECK(text(held.stages[1]).rfind("RECV_VALID SEND_VALID VALIDATE RECV_F0 F0", 0) == 0);
  CHECK(errors(held, pr).empty());
}

TEST_CASE("lower: every baseline lowers with post-validation to a valid file") {
  for (int p : {1, 2, 4})
    for (int m : {4, 8}) {
      INFO("p=" << p << " m=" << m);
      Problem pr = make_problem(p, m, 1, 1, 1);
      for (const Schedule& s : {generate_1f1b(pr), generate_zb_h1(pr), generate_zb_h2(pr)})
        CHECK(errors(lower_comms(s, {Optimizer::kPostValidation, PostValidationAt::kFirstBackward}), pr).empty());
      Problem two = make_problem(p, m, 1, 1, 1, 0, 1, 0.5, "", 2);
      for (PostValidationAt at : {PostValidationAt::kFirstBackward, PostValidationAt::kStart})
        CHECK(errors(lower_comms(generate_zb_v_handcrafted(two), {Optimizer::kPostValidation, at}), two).empty());
      if (m % p == 0) {
        std::string err;
        auto interleaved = generate_1f1b_interleaved(two, &err);
        REQUIRE(interleaved);
        CHECK(errors(lower_comms(*interleaved, {Optimizer::kPostValidation, PostValidationAt::kFirstBackward}), two).empty());
      }
    }
}

namespace {
// "SEND_VALID>1 RECV_F0<1": ops with their peers, for the optimizer's paths.
std::string peered(const std::vector<Op>& ops) {
  std::string out;
  for (const Op& op : ops)
    out += (out.empty() ? "" : " ") + op_short(op) + (is_send(op.type) ? ">" + std::to_string(op.peer) : "") +
           (is_recv(op.type) ? "<" + std::to_string(op.peer) : "");
  return out;
}
}  // namespace

TEST_CASE("lower: the state goes the way iterations start, the verdict the way the first B's run") {
  // One chunk: state 0 -> 1 -> 2, verdict 2 -> 1 -> 0. Interleaved the same.
  Problem one = make_problem(3, 6, 1, 1, 1);
  StateChain c = state_chain(generate_zb_h1(one));
  CHECK(c.state == std::vector<int>{0, 1, 2});
  CHECK(c.verdict == std::vector<int>{2, 1, 0});
  Problem two = make_problem(3, 6, 1, 1, 1, 0, 1, 0.5, "", 2);
  std::string err;
  auto interleaved = generate_1f1b_interleaved(two, &err);
  REQUIRE(interleaved);
  CHECK(state_chain(*interleaved).verdict == std::vector<int>{2, 1, 0});
  // ZB-V: stage 0 holds virtual stages 0 and 5, so it runs the first B (of the loss's chunk); the
  // verdict leaves stage 2, where the state ends, for stage 0 and then follows the first B's.
  Schedule v = generate_zb_v_handcrafted(two);
  c = state_chain(v);
  CHECK(c.state == std::vector<int>{0, 1, 2});
  CHECK(c.verdict == std::vector<int>{2, 0, 1});
  Schedule lowered = lower_comms(v, {Optimizer::kPostValidation, PostValidationAt::kFirstBackward});
  CHECK(errors(lowered, two).empty());
  auto optimizer_ops = [&](int st) {
    std::vector<Op> out;
    for (const Op& op : lowered.stages[st])
      if (is_optimizer_op(op.type)) out.push_back(op);
    return peered(out);
  };
  CHECK(optimizer_ops(0) == "RECV_VALID<2 SEND_VALID>1 VALIDATE SEND_STATE>1 OPT_STEP");
  CHECK(optimizer_ops(1) == "RECV_VALID<0 VALIDATE RECV_STATE<0 SEND_STATE>2 OPT_STEP");
  CHECK(optimizer_ops(2) == "SEND_VALID>0 VALIDATE RECV_STATE<1 OPT_STEP");
  CHECK(lowered.stages[2][0].type == OpType::SEND_VALID);
  // Each stage post-validates just before its first B, as with one chunk.
  for (int st = 0; st < 3; ++st) {
    const auto& ops = lowered.stages[st];
    size_t post_validate = 0, first_b = 0;
    while (ops[post_validate].type != OpType::VALIDATE) ++post_validate;
    while (ops[first_b].type != OpType::B) ++first_b;
    INFO("stage " << st << ": " << peered(ops));
    CHECK(first_b - post_validate == (ops[first_b - 1].type == OpType::RECV_B ? 2u : 1u));
  }
}

TEST_CASE("lower: a ZB-V file with the verdict's old path (back down the state's) is refused, saying what to do") {
  // Files lowered before the verdict followed the first B's relayed it 2 -> 1 -> 0.
  Problem two = make_problem(3, 6, 1, 1, 1, 0, 1, 0.5, "", 2);
  Schedule s = lower_comms(generate_zb_v_handcrafted(two), {Optimizer::kPostValidation, PostValidationAt::kFirstBackward});
  for (auto& ops : s.stages)
    for (Op& op : ops) {
      if (op.type == OpType::RECV_VALID) op.peer = &ops == &s.stages[0] ? 1 : 2;
      if (op.type == OpType::SEND_VALID) op.peer = &ops == &s.stages[2] ? 1 : 0;
    }
  auto found = errors(s, two);
  REQUIRE(!found.empty());
  CHECK(found[0].substr(found[0].find(':')) ==
        ": exchanges state with stage 1, expected stage 2 (the verdict goes 2 -> 0 -> 1, from the state's last "
        "stage, then in the order of first B's; lower the schedule again with zbplan plan)");
}

TEST_CASE("lower: broken post-validation files are located") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  const LowerOptions post{Optimizer::kPostValidation, PostValidationAt::kFirstBackward};
  Schedule s = lower_comms(generate_zb_h1(pr), post);
  // stage 0: F0 SEND_F0 F1 SEND_F1 RECV_VALID VALIDATE RECV_B0 B0 W0 RECV_B1 B1 W1 SEND_STATE OPT_STEP
  Schedule late = s;
  late.stages[0].erase(late.stages[0].begin() + 5);  // VALIDATE, moved after W0
  late.stages[0].insert(late.stages[0].begin() + 8, Op{OpType::VALIDATE, 0, 0, -1, -1});
  CHECK(errors(late, pr).at(0) ==
        "stage 0, op 8 (VALIDATE): must come before the stage's first W (op 7 (W0)): the rollback it may do needs the "
        "previous step's gradients");
  Schedule no_send = s;
  no_send.stages[0].erase(no_send.stages[0].begin() + 12);
  CHECK(errors(no_send, pr).at(0) == "stage 0: SEND_STATE is missing with stage 1 (post-validation needs it)");
  Schedule wrong_peer = s;
  wrong_peer.stages[0][4].peer = 0;
  CHECK(errors(wrong_peer, pr).at(0) ==
        "stage 0, op 4 (RECV_VALID): exchanges state with stage 0, expected stage 1 (the verdict goes 1 -> 0, from the "
        "state's last stage, then in the order of first B's; lower the schedule again with zbplan plan)");
  Schedule extra = s;  // stage 0 starts the state's path: it receives no state
  extra.stages[0].insert(extra.stages[0].end() - 1, Op{OpType::RECV_STATE, 0, 0, 1, -1});
  CHECK(errors(extra, pr).at(0) ==
        "stage 0, op 13 (RECV_STATE): this stage has no neighbour to exchange optimizer state with there: the state "
        "goes 0 -> 1, in the order the stages start; lower the schedule again with zbplan plan");
  Schedule in_sync = s;
  in_sync.optimizer = Optimizer::kSync;
  CHECK(errors(in_sync, pr).at(0) ==
        "stage 0, op 12 (SEND_STATE): belongs to post-validation, but this file's optimizer is \"sync\"");
  Schedule early_step = s;
  std::swap(early_step.stages[0][12], early_step.stages[0][13]);  // OPT_STEP before SEND_STATE
  CHECK(errors(early_step, pr).at(0) == "stage 0, op 12 (OPT_STEP): OPT_STEP must be the stage's last op");
}

// Issue 18: a lowered file is timed as zbrun replays it, so the waits its SEND/RECV order causes
// are in its planned figures. ZB-H1, p=2, m=2, T_F = T_B = T_W = 1, T_comm = 0. Stage 1 sends B1's
// gradient at 5; stage 0 runs ... RECV_B0 B0 [3, 4] W0 [4, 5] RECV_B1 B1 [5, 6] W1 [6, 7].
TEST_CASE("lower: a RECV moved earlier makes its stage wait, and the planned figures include the wait") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  const Ticks unit = kQuantaPerUnit;
  Schedule s = lower_comms(generate_zb_h1(pr));
  REQUIRE(text(s.stages[0]) == "F0 SEND_F0 F1 SEND_F1 RECV_B0 B0 W0 RECV_B1 B1 W1 OPT_STEP");
  std::vector<Diag> diags;
  auto before = simulate_timeline(s, pr, &diags);
  REQUIRE(before);
  CHECK(before->span == 7 * unit);
  CHECK(before->makespan == 7 * unit);
  // RECV_B1 before W0: still no deadlock, but stage 0 now waits from 4 to 5 for B1's gradient
  // before W0, so W0 [5, 6] B1 [6, 7] W1 [7, 8].
  auto& st0 = s.stages[0];
  const Op recv = st0[7];
  st0.erase(st0.begin() + 7);
  st0.insert(st0.begin() + 6, recv);
  REQUIRE(text(st0) == "F0 SEND_F0 F1 SEND_F1 RECV_B0 B0 RECV_B1 W0 B1 W1 OPT_STEP");
  CHECK(errors(s, pr).empty());
  auto after = simulate_timeline(s, pr, &diags);
  REQUIRE(after);
  CHECK(diags.empty());
  CHECK(after->ops[0][3].start == 5 * unit);  // W0, the projection's op 3
  CHECK(after->span == 8 * unit);
  CHECK(after->makespan == 8 * unit);
  CHECK(after->span_bubble_rate == Approx(2.0 / 8));
  // The compute ops alone (what the file was timed by before) hide the wait.
  auto compute_only = simulate_timeline(compute_projection(s), pr, &diags);
  REQUIRE(compute_only);
  CHECK(compute_only->span == 7 * unit);
  // Iterations back to back see it too: one iteration alone now ends at 8 (sync: + the all-reduce, 0 here).
  IterationOptions o;
  o.allreduce_latency = 0;
  auto iterations = simulate_iterations(s, pr, o, &diags);
  REQUIRE(iterations);
  CHECK(iterations->wall == 8 * unit);
}
