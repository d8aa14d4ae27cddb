// Tests for core/ir.cpp: the short text form of ops and its parser.
#include "core/ir.h"

#include <tuple>

#include <catch2/catch.hpp>

using namespace zbpp;

TEST_CASE("ir: short forms round-trip") {
  for (const char* text : {"F0", "B12", "W3", "BW5", "F7:1", "SEND_F3", "RECV_B2:1", "OPT_STEP"}) {
    std::string err;
    auto op = parse_op(text, &err);
    INFO(text << ": " << err);
    REQUIRE(op);
    CHECK(op_short(*op) == text);
  }
}

TEST_CASE("ir: parse_ops reads a stage and rejects bad words with a reason") {
  std::string err;
  auto ops = parse_ops("F0 F1  B0 W0\tBW1", &err);
  REQUIRE(ops);
  REQUIRE(ops->size() == 5);
  CHECK((*ops)[4].type == OpType::BW);
  CHECK((*ops)[4].mb == 1);
  CHECK_FALSE(parse_ops("F0 X1", &err));
  CHECK(err == "unknown op 'X1' (expected F, B, W, BW, SEND_F, RECV_F, SEND_B, RECV_B, OPT_STEP, SEND_STATE, RECV_STATE, SEND_VALID, RECV_VALID or VALIDATE)");
  CHECK_FALSE(parse_ops("F", &err));
  CHECK(err == "op 'F' needs a microbatch number, e.g. F0");
  CHECK_FALSE(parse_ops("F1:", &err));
  CHECK(err == "op 'F1:' needs a chunk number after ':'");
  CHECK_FALSE(parse_ops("F1x", &err));
  CHECK(err == "unexpected text after op in 'F1x'");
}

TEST_CASE("ir: virtual stage map inverts a placement") {
  VirtualStageMap map({{0, 3}, {1, 2}});
  CHECK(map.virtual_stages() == 4);
  CHECK(map.stage_of == std::vector<int>{0, 1, 1, 0});
  CHECK(map.chunk_of == std::vector<int>{0, 0, 1, 1});
  CHECK(map.vs(1, 1) == 2);
}

TEST_CASE("ir: without_ops keeps every field but the ops") {
  Schedule s;
  s.p = 2, s.m = 3, s.chunks = 2;
  s.placement = {{0, 3}, {1, 2}};
  s.level = Level::kLowered;
  s.method = "zb-v";
  s.optimizer = Optimizer::kPostValidation;
  s.stages = {{Op{OpType::F, 0, 0}}, {Op{OpType::F, 0, 1}, Op{OpType::B, 0, 1}}};
  Schedule h = s.without_ops();
  CHECK(h.stages == std::vector<std::vector<Op>>(2));
  h.stages = s.stages;
  CHECK(std::tie(h.p, h.m, h.chunks, h.placement, h.level, h.method, h.optimizer, h.stages) ==
        std::tie(s.p, s.m, s.chunks, s.placement, s.level, s.method, s.optimizer, s.stages));
}
