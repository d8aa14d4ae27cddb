// Tests for core/message_order.cpp: the first crossing of each link's messages, as data.
#include "core/message_order.h"

#include <map>
#include <optional>
#include <random>
#include <tuple>

#include <catch2/catch.hpp>

#include "planner/gen_baseline.h"
#include "test_util.h"

using namespace zbpp;

namespace {

// Interleaved on 2 stages: stage 0 holds virtual stages 0 and 2, stage 1 holds 1 and 3, so all four
// links carry messages of both chunks: activations 0 -> 1 (vs 0 -> 1, 2 -> 3) and 1 -> 0 (1 -> 2),
// gradients 1 -> 0 (3 -> 2, 1 -> 0) and 0 -> 1 (2 -> 1).
const std::vector<std::vector<int>> kInterleaved = {{0, 2}, {1, 3}};
const std::string kInOrder = "F0 F1 F0:1 F1:1 B0:1 B1:1 B0 B1 W0:1 W1:1 W0 W1";

Schedule interleaved(const std::string& stage0, const std::string& stage1) {
  std::string err;
  auto s = schedule_from_strings({stage0, stage1}, 2, 2, kInterleaved, &err);
  INFO(err);
  REQUIRE(s);
  return *s;
}

std::string text(const MessageCrossing& c) {
  return std::to_string(c.from) + "->" + std::to_string(c.to) + (c.what == Product::Forward ? " F" : " B") + " #" +
         std::to_string(c.position) + ": sent op " + std::to_string(c.sender_op) + " for vs " +
         std::to_string(c.sent_for_vs) + ", needed by op " + std::to_string(c.receiver_op) + " from vs " +
         std::to_string(c.needed_from_vs);
}
std::vector<std::string> texts(const std::vector<MessageCrossing>& crossings) {
  std::vector<std::string> out;
  for (const auto& c : crossings) out.push_back(text(c));
  return out;
}

// The plain definition, for comparison: per link, the messages sent and the messages needed, each
// in its stage's order (the producer's virtual stage and microbatch, with the op), and the first
// place where the two lists differ.
std::vector<MessageCrossing> crossings_by_lists(const Schedule& s) {
  const VirtualStageMap map(s.placement);
  struct Message {
    int producer_vs, mb, op;
  };
  std::map<std::tuple<int, int, Product>, std::pair<std::vector<Message>, std::vector<Message>>> links;
  for (int st = 0; st < s.p; ++st)
    for (int i = 0; i < static_cast<int>(s.stages[st].size()); ++i) {
      const Op& op = s.stages[st][i];
      if (auto c = consumer_of(op, st, map); c && c->remote)
        links[{st, c->stage, c->what}].first.push_back({map.vs(st, op.chunk), op.mb, i});
      if (auto d = dependency_of(op, st, map); d && d->remote)
        links[{map.stage_of[d->vs], st, d->what}].second.push_back({d->vs, d->mb, i});
    }
  std::vector<MessageCrossing> out;
  for (const auto& [link, lists] : links) {
    const auto& [from, to, what] = link;
    const auto& [sent, needed] = lists;
    for (size_t n = 0; n < std::min(sent.size(), needed.size()); ++n)
      if (sent[n].producer_vs != needed[n].producer_vs || sent[n].mb != needed[n].mb) {
        out.push_back({what, from, to, static_cast<int>(n), sent[n].op, message_consumer_vs(what, sent[n].producer_vs),
                       needed[n].op, needed[n].producer_vs});
        break;
      }
  }
  return out;
}

}  // namespace

TEST_CASE("find_message_crossings: none where every stage takes each link's inputs in the order sent") {
  CHECK(find_message_crossings(interleaved(kInOrder, kInOrder)).empty());
  Problem one = test::make_problem(4, 8, 1, 1, 1);
  Problem two = test::make_problem(4, 8, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  std::string err;
  for (const Schedule& s : {generate_1f1b(one), generate_zb_h2(one), *generate_1f1b_interleaved(two, &err),
                            generate_zb_v_handcrafted(two), *generate_dualpipe_v(two, &err)}) {
    INFO(s.method);
    CHECK(find_message_crossings(s).empty());
  }
}

TEST_CASE("find_message_crossings: the first crossing of an activation link and of a gradient link, as data") {
  // Stage 0 sends F1's output (vs 0 -> 1) second and F0:1's (vs 2 -> 3) third; stage 1 runs F0:1
  // second: the activation link 0 -> 1 crosses at its message 1 (F1:1 after it crosses too, but
  // the first crossing says it).
  const auto forward = find_message_crossings(interleaved(kInOrder, "F0 F0:1 F1 F1:1 B0:1 B1:1 B0 B1 W0:1 W1:1 W0 W1"));
  CHECK(texts(forward) == std::vector<std::string>{"0->1 F #1: sent op 1 for vs 1, needed by op 1 from vs 2"});
  REQUIRE(forward.size() == 1);
  CHECK(forward[0].what == Product::Forward);
  // Stage 1 sends B1:1's gradient (vs 3 -> 2) second; stage 0 runs B0 (needing vs 1's) second.
  const std::string backward = "F0 F1 F0:1 F1:1 B0:1 B0 B1:1 B1 W0:1 W1:1 W0 W1";
  const auto gradient = find_message_crossings(interleaved(backward, kInOrder));
  CHECK(texts(gradient) == std::vector<std::string>{"1->0 B #1: sent op 5 for vs 2, needed by op 5 from vs 1"});
  REQUIRE(gradient.size() == 1);
  CHECK(gradient[0].what == Product::InputGrad);
  // Both at once: one per link, by (from, to, kind).
  CHECK(texts(find_message_crossings(interleaved(backward, "F0 F0:1 F1 F1:1 B0:1 B1:1 B0 B1 W0:1 W1:1 W0 W1"))) ==
        std::vector<std::string>{"0->1 F #1: sent op 1 for vs 1, needed by op 1 from vs 2",
                                 "1->0 B #1: sent op 5 for vs 2, needed by op 5 from vs 1"});
}

TEST_CASE("find_message_crossings: what the per-link lists say, on shuffled interleaved and V schedules") {
  Problem two = test::make_problem(4, 8, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  Problem three = test::make_problem(3, 6, 1, 1, 1, 0, 0.5, 0.25, "", 3);
  std::string err;
  std::vector<std::optional<Schedule>> starts = {generate_1f1b_interleaved(two, &err),
                                                 generate_1f1b_interleaved(three, &err), generate_zb_v_handcrafted(two),
                                                 generate_dualpipe_v(two, &err)};
  std::mt19937 random(18);
  int crossed = 0;
  for (const auto& start : starts) {
    INFO(err);
    REQUIRE(start);
    for (int trial = 0; trial < 300; ++trial) {
      Schedule s = *start;
      // A few swaps of neighbours anywhere: crossings on any link, deadlocks too (not this check's).
      const int swaps = 1 + static_cast<int>(random() % 12);
      for (int k = 0; k < swaps; ++k) {
        auto& ops = s.stages[random() % s.stages.size()];
        const size_t i = random() % (ops.size() - 1);
        std::swap(ops[i], ops[i + 1]);
      }
      const auto found = texts(find_message_crossings(s));
      INFO(start->method << " trial " << trial);
      CHECK(found == texts(crossings_by_lists(s)));
      crossed += !found.empty();
    }
  }
  CHECK(crossed > 100);  // the shuffles reach the crossings
}
