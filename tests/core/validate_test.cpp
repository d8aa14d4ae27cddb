// Tests for core/validate.cpp: each kind of bad schedule is rejected with its located message.
#include "core/validate.h"

#include <catch2/catch.hpp>

#include "test_util.h"

using namespace zbpp;
using zbpp::test::inline_schedule;
using zbpp::test::make_problem;

namespace {
// The one message validate() gives for a schedule, or "" when it passes.
std::string only_error(const std::vector<std::string>& stages, const Problem& pr) {
  auto diags = validate(inline_schedule(stages, pr.m), pr, "s.json");
  INFO(format_diags(diags));
  REQUIRE(diags.size() <= 1);
  return diags.empty() ? "" : format_diag(diags[0]);
}
const std::vector<std::string> kGood = {"F0 F1 B0 W0 B1 W1", "F0 B0 F1 B1 W0 W1"};
}  // namespace

TEST_CASE("validate: a sound schedule passes") {
  CHECK(only_error(kGood, make_problem(2, 2, 1, 1, 1)) == "");
}

TEST_CASE("validate: a dropped op is named") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  CHECK(only_error({"F0 F1 B0 W0 B1 W1", "F0 B0 F1 B1 W0"}, pr) == "s.json: stage 1: W1 is missing (its B is op 3)");
  CHECK(only_error({"F0 B0 W0 B1 W1", "F0 B0 F1 B1 W0 W1"}, pr) == "s.json: stage 0: F1 is missing");
  CHECK(only_error({"F0 F1 B0 W0 W1", "F0 B0 F1 B1 W0 W1"}, pr) ==
        "s.json: stage 0: B1 (or BW1) is missing");
}

TEST_CASE("validate: a duplicated op is named with its first occurrence") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  CHECK(only_error({"F0 F1 B0 W0 B1 W1 F1", "F0 B0 F1 B1 W0 W1"}, pr) ==
        "s.json: stage 0, op 6 (F1): duplicate F1 (first at op 1)");
  CHECK(only_error({"F0 F1 B0 W0 BW1 W1", "F0 B0 F1 B1 W0 W1"}, pr) ==
        "s.json: stage 0, op 5 (W1): W1 duplicates work of BW1 (op 4), which is B and W fused");
}

TEST_CASE("validate: W before its B and B before its F are ordering errors") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  CHECK(only_error({"F0 F1 B0 W0 B1 W1", "F0 W0 B0 F1 B1 W1"}, pr) == "s.json: stage 1, op 1 (W0): W before its B (op 2)");
  CHECK(only_error({"F0 B1 F1 B0 W0 W1", "F0 B0 F1 B1 W0 W1"}, pr) == "s.json: stage 0, op 1 (B1): B1 before its F (op 2)");
}

TEST_CASE("validate: an order that deadlocks is rejected with the waiting chain") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  CHECK(only_error({"F0 B0 W0 F1 B1 W1", "F1 F0 B0 W0 B1 W1"}, pr) ==
        "s.json: stage 0, op 1 (B0): deadlock: waits for stage 1 op 2 (B0); stage 1 is stuck at op 0 (F1), which "
        "waits for stage 0 op 3 (F1); stage 0 is stuck at op 1 (B0)");
}

TEST_CASE("validate: a schedule over the memory limit names the op that crosses it") {
  Problem pr = make_problem(2, 3, 1, 1, 1, 0, 1, 0.5, "2");
  CHECK(only_error({"F0 F1 F2 B0 W0 B1 W1 B2 W2", "F0 B0 W0 F1 B1 W1 F2 B2 W2"}, pr) ==
        "s.json: stage 0, op 2 (F2): activation memory reaches 3, over the limit 2");
  Problem multiple = make_problem(2, 3, 1, 1, 1, 0, 1, 0.5, "1p");
  CHECK(only_error({"F0 F1 F2 B0 W0 B1 W1 B2 W2", "F0 B0 W0 F1 B1 W1 F2 B2 W2"}, multiple) ==
        "s.json: stage 0, op 2 (F2): activation memory reaches 3, over the limit 2 = 1p");
}

TEST_CASE("validate: out-of-range fields and shape mismatches") {
  Problem pr = make_problem(2, 2, 1, 1, 1);
  CHECK(only_error({"F0 F1 B0 W0 B1 W1 F2", "F0 B0 F1 B1 W0 W1"}, pr) ==
        "s.json: stage 0, op 6 (F2): microbatch 2 out of range 0..1");
  CHECK(only_error({"F0 F1 B0 W0 B1 W1 F0:1", "F0 B0 F1 B1 W0 W1"}, pr) ==
        "s.json: stage 0, op 6 (F0:1): chunk 1 out of range 0..0");
  CHECK(only_error({"F0 F1 B0 W0 B1 W1 SEND_F0", "F0 B0 F1 B1 W0 W1"}, pr) ==
        "s.json: stage 0, op 6 (SEND_F0): SEND_F is not a compute op; a compute-level schedule holds F, B, W and BW only");
  CHECK(only_error({"F0 F1 B0 W0 B1 W1"}, make_problem(1, 2, 1, 1, 1)) == "");
  auto diags = validate(inline_schedule(kGood, 2), make_problem(3, 2, 1, 1, 1), "s.json");
  REQUIRE_FALSE(diags.empty());
  CHECK(format_diag(diags[0]) == "s.json: schedule has p = 2 but its problem has p = 3");
}

TEST_CASE("validate: a hopeless file keeps 1000 findings and counts the rest") {
  Problem pr = make_problem(2, 5000, 1, 1, 1);
  Schedule s = inline_schedule({"F0 B0 W0", "F0 B0 W0"}, 5000);
  auto diags = validate(s, pr, "s.json");
  REQUIRE(diags.size() == kMaxDiags + 1);
  // Each stage misses F and B of microbatches 1..4999: 2 x 2 x 4999 findings.
  CHECK(diag_count(diags) == 19996);
  CHECK(format_diag(diags.back()) == "... and 18996 more");
}

TEST_CASE("validate: a stage of duplicated ops keeps 1000 findings, not one per op") {
  // Issue 19, class 6: each duplicate was kept, millions for a big file (3.4 GB before bad_alloc).
  Problem pr = make_problem(1, 1, 1, 1, 1);
  Schedule s = inline_schedule({"F0 B0 W0"}, 1);
  s.stages[0].resize(200000, s.stages[0][0]);
  auto diags = validate(s, pr, "s.json");
  CHECK(diags.size() == kMaxDiags + 1);
  CHECK(diag_count(diags) == 200000 - 3);  // every F0 after the first
  CHECK(format_diag(diags[0]) == "s.json: stage 0, op 3 (F0): duplicate F0 (first at op 0)");
  CHECK(format_diag(diags.back()) == "... and " + std::to_string(200000 - 3 - kMaxDiags) + " more");
}

TEST_CASE("validate_warnings: W ops of a stage out of microbatch order are named, once per stage and chunk") {
  Problem pr = make_problem(2, 3, 1, 1, 1);
  Schedule s = inline_schedule({"F0 F1 F2 B0 B1 B2 W0 W2 W1", "F0 B0 F1 B1 F2 B2 W1 W0 W2"}, 3);
  CHECK(validate(s, pr, "s.json").empty());  // still a valid schedule: it runs
  auto warnings = validate_warnings(s, "s.json");
  REQUIRE(warnings.size() == 2);
  CHECK(format_diag(warnings[0]) ==
        "s.json: stage 0, op 7 (W2): warning: W2 runs before W1 (op 8): this file does not keep bit-identity (weight "
        "gradients add up out of microbatch order, so the trained weights differ from other schedules'); run each "
        "stage's W ops in microbatch order");
  CHECK(format_diag(warnings[1]).rfind("s.json: stage 1, op 6 (W1): warning: W1 runs before W0 (op 7)", 0) == 0);
  CHECK(validate_warnings(inline_schedule({"F0 F1 F2 B0 B1 B2 W0 W1 W2", "F0 B0 W0 F1 B1 W1 F2 B2 W2"}, 3)).empty());
  // BW adds weight gradients too; each chunk keeps its own order.
  CHECK(validate_warnings(inline_schedule({"F0 F1 BW1 BW0"}, 2)).size() == 1);
}

TEST_CASE("validate: a stage takes one link's inputs in the order they are sent") {
  // Interleaved on 2 stages: stage 0 holds virtual stages 0 and 2, stage 1 holds 1 and 3, so stage 0
  // sends stage 1 the activations of both chunks on one link. Stage 0 sends F1's input before
  // F0:1's; stage 1 runs F0:1 first: no lowering can carry that (messages arrive in order).
  Problem pr = make_problem(2, 2, 1, 1, 1, 0, 1, 0.5, "", 2);
  const std::vector<std::vector<int>> interleaved = {{0, 2}, {1, 3}};
  auto schedule = [&](const std::string& stage1) {
    std::string err;
    auto s = schedule_from_strings({"F0 F1 F0:1 F1:1 B0:1 B1:1 B0 B1 W0:1 W1:1 W0 W1", stage1}, 2, 2, interleaved, &err);
    REQUIRE(s);
    return *s;
  };
  pr.placement = interleaved;
  CHECK(validate(schedule("F0 F1 F0:1 F1:1 B0:1 B1:1 B0 B1 W0:1 W1:1 W0 W1"), pr, "s.json").empty());
  auto diags = validate(schedule("F0 F0:1 F1 F1:1 B0:1 B1:1 B0 B1 W0:1 W1:1 W0 W1"), pr, "s.json");
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) ==
        "s.json: stage 1, op 1 (F0:1): stage 0 sends the input of F1 first (made by its op 1, F1), but this stage "
        "runs F0:1 before it: one stage's messages to another arrive in the order sent, so the ops that need them "
        "run in that order");
  // A gradient link, 1 -> 0: stage 1 sends B1:1's gradient second, stage 0 runs B0 second.
  std::string err;
  auto gradient = schedule_from_strings({"F0 F1 F0:1 F1:1 B0:1 B0 B1:1 B1 W0:1 W1:1 W0 W1",
                                         "F0 F1 F0:1 F1:1 B0:1 B1:1 B0 B1 W0:1 W1:1 W0 W1"}, 2, 2, interleaved, &err);
  REQUIRE(gradient);
  diags = validate(*gradient, pr, "s.json");
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) ==
        "s.json: stage 0, op 5 (B0): stage 1 sends the input of B1:1 first (made by its op 5, B1:1), but this stage "
        "runs B0 before it: one stage's messages to another arrive in the order sent, so the ops that need them "
        "run in that order");
  // For a reader that says the crossing in its own terms (zbplan import), the rest passes.
  CHECK(validate_but_message_order(*gradient, pr, "s.json").empty());
  CHECK(validate_but_message_order(schedule("F0 F0:1 F1 F1:1 B0:1 B1:1 B0 B1 W0:1 W1:1 W0 W1"), pr).empty());
  CHECK_FALSE(validate_but_message_order(schedule("F0 F1 F0:1 F1:1 B0:1 B1:1 B1 W0:1 W1:1 W0 W1"), pr).empty());
}
