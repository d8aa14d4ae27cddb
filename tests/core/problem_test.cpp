// Tests for core/problem.cpp: conversion to exact units, broadcasting, limits, rejected inputs.
#include "core/problem.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace zbpp;

namespace {
std::string rejection(const ProblemInput& in) {
  std::vector<Diag> diags;
  auto pr = build_problem(in, "p.json", &diags);
  REQUIRE_FALSE(pr);
  REQUIRE(diags.size() == 1);
  return format_diag(diags[0]);
}

ProblemInput basic() {
  ProblemInput in;
  in.p = 4;
  in.m = 8;
  in.t_f = {18.522};
  in.t_b = {18.086};
  in.t_w = {9.337};
  in.t_comm = {0.601};
  return in;
}
}  // namespace

TEST_CASE("problem: decimals become exact ticks and scalars are broadcast") {
  std::vector<Diag> diags;
  auto pr = build_problem(basic(), "", &diags);
  REQUIRE(pr);
  CHECK(pr->t_f == std::vector<Ticks>(4, 18'522'000));
  CHECK(pr->t_w == std::vector<Ticks>(4, 9'337'000));
  CHECK(pr->t_comm == std::vector<Ticks>(4, 601'000));
  CHECK(pr->busy_time(0) == 8 * (18'522'000 + 18'086'000 + 9'337'000));
  CHECK_FALSE(pr->mem_limit);
  CHECK(format_quanta(pr->t_f[0]) == "18.522");
}

TEST_CASE("problem: per-stage times are kept per stage") {
  ProblemInput in = basic();
  in.t_f = {20, 18, 18, 22};
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  CHECK(pr->t_f == std::vector<Ticks>{20'000'000, 18'000'000, 18'000'000, 22'000'000});
}

TEST_CASE("problem: T_comm per link: neighbours take their link, the wrap and jumps the last or the slowest") {
  ProblemInput in = basic();
  in.t_comm = {0.1, 0.3, 0.2};  // p - 1 links: the wrap takes the slowest
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  CHECK(pr->t_comm == std::vector<Ticks>{100'000, 300'000, 200'000, 300'000});
  CHECK(pr->hop(0, 1) == 100'000);
  CHECK(pr->hop(2, 1) == 300'000);  // either direction of link 1
  CHECK(pr->hop(3, 2) == 200'000);
  CHECK(pr->hop(3, 0) == 300'000);
  CHECK(pr->hop(2, 2) == 0);
  CHECK(pr->slowest_hop() == 300'000);
  CHECK_FALSE(pr->uniform_hops());

  in.t_comm = {0.1, 0.3, 0.2, 0.05};  // p links: the last joins stage 3 back to 0, and serves jumps
  pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  CHECK(pr->hop(3, 0) == 50'000);
  CHECK(pr->hop(0, 2) == 50'000);
  CHECK(pr->hop(1, 2) == 300'000);

  // Written as read, read back the same; one number where the links agree.
  nlohmann::json j = problem_to_json(*pr);
  CHECK(j["t_comm"].dump() == "[0.1,0.3,0.2,0.05]");
  ProblemInput back;
  REQUIRE(problem_input_from_json(j, "", "", &back, &diags));
  auto again = build_problem(back, "", &diags);
  REQUIRE(again);
  CHECK(again->t_comm == pr->t_comm);
  in.t_comm = {0.2, 0.2, 0.2};
  pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  CHECK(problem_to_json(*pr)["t_comm"].dump() == "0.2");
  CHECK(pr->uniform_hops());

  in.t_comm = {0.1, 0.2};
  CHECK(rejection(in) == "p.json: t_comm has 2 values; give one, one per link between neighbouring stages (p - 1 = 3), "
                         "or p = 4 where the last is the link from stage 3 back to stage 0");
  in.t_comm = {0.1, -0.2, 0.1};
  CHECK(rejection(in) == "p.json: t_comm of link 1 must be non-negative and finite, got -0.2");
  in = basic();
  in.p = 2;
  in.t_comm = {0.1, 0.2};
  CHECK(rejection(in) == "p.json: t_comm has 2 values; give one (p = 2 has at most one link)");
}

TEST_CASE("problem: memory limits as multiples of p*M_B or absolute") {
  ProblemInput in = basic();
  in.mem_b = {2};
  in.mem_limit = "1.5p";
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  CHECK(*pr->mem_limit == 12 * kQuantaPerUnit);  // 1.5 * 4 stages * 2
  in.mem_limit = "7.25";
  pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  CHECK(*pr->mem_limit == 7'250'000);
  // With chunks, "p" multiples count the whole stage's M_B (all chunks).
  in.chunks = 2;
  in.mem_limit = "1p";
  pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  CHECK(*pr->mem_limit == 16 * kQuantaPerUnit);
}

TEST_CASE("problem: impossible or malformed inputs are rejected with the field named") {
  ProblemInput in = basic();
  in.m = 0;
  CHECK(rejection(in) == "p.json: m (microbatches) must be at least 1, got 0");
  in = basic();
  in.t_f = {-1};
  CHECK(rejection(in) == "p.json: t_f must be positive and finite, got -1.0");
  in = basic();
  in.t_w = {1, 2, 3};
  CHECK(rejection(in) == "p.json: t_w has 3 values; give one, or one per stage (p = 4)");
  in = basic();
  in.t_b = {1, 2, -3, 4};
  CHECK(rejection(in) == "p.json: t_b of stage 2 must be positive and finite, got -3.0");
  in = basic();
  in.t_comm = {-0.5};
  CHECK(rejection(in) == "p.json: t_comm must be non-negative and finite, got -0.5");
  in = basic();
  in.mem_limit = "0.2p";
  CHECK(rejection(in) ==
        "p.json: memory limit 0.8 is below 1, the activation memory of a single microbatch (M_B); no schedule fits");
  in.mem_limit = "2x";
  CHECK(rejection(in) == "p.json: memory limit '2x' is neither a number nor a multiple like '2p'");
  in.mem_limit = "0x10";
  CHECK(rejection(in) == "p.json: memory limit '0x10' is neither a number nor a multiple like '2p'");
  in.mem_limit = "-3";
  CHECK(rejection(in) == "p.json: memory limit '-3' must be positive");
  in = basic();
  in.t_f = {1e12};
  in.t_b = {1e12};
  CHECK(rejection(in).rfind("p.json: times too large: one iteration could last", 0) == 0);
  in = basic();
  in.p = 4096;
  in.m = 1'000'000;
  CHECK(rejection(in) == "p.json: problem too large: p x chunks x m = 4096000000 exceeds 4000000 (a schedule of that many "
                         "microbatch-stage pairs would not fit in memory)");
  in = basic();
  in.mem_limit = "1e300p";
  CHECK(rejection(in) == "p.json: memory limit '1e300p' is out of range");
  in = basic();
  in.chunks = 2;
  in.placement = {{0, 1}, {2, 3}, {4, 5}, {6, 6}};
  CHECK(rejection(in) == "p.json: placement must use each virtual stage 0..7 exactly once");
}

TEST_CASE("problem: JSON type errors name the JSON pointer") {
  auto j = nlohmann::json::parse(R"({"p": 4, "m": 8, "t_f": [1, 2, "x", 4], "t_b": 1, "t_w": 1})");
  ProblemInput in;
  std::vector<Diag> diags;
  CHECK_FALSE(problem_input_from_json(j, "p.json", "", &in, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "p.json: /t_f/2: expected a number, got \"x\"");

  diags.clear();
  j = nlohmann::json::parse(R"({"p": 4.5, "m": 8, "t_f": 1, "t_b": 1, "t_w": 1, "tw": 3})");
  CHECK_FALSE(problem_input_from_json(j, "p.json", "", &in, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "p.json: /tw: unknown field 'tw'");

  diags.clear();
  j = nlohmann::json::parse(R"({"p": 4, "m": 8, "t_f": 1, "t_b": 1, "t_w": 1, "t_comm": "fast"})");
  CHECK_FALSE(problem_input_from_json(j, "p.json", "", &in, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) ==
        "p.json: /t_comm: expected a number or a non-empty list of numbers (one per link), got \"fast\"");

  diags.clear();
  j = nlohmann::json::parse(R"({"p": 4.5, "m": 8, "t_f": 1, "t_b": 1, "t_w": 1})");
  CHECK_FALSE(problem_input_from_json(j, "p.json", "", &in, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "p.json: /p: expected an integer, got 4.5");
}

TEST_CASE("problem: JSON round trip keeps exact values and the limit's form") {
  ProblemInput in = basic();
  in.t_f = {18.522, 18.5, 18.5, 20.001};
  in.mem_w = {0.3664};
  in.mem_limit = "2p";
  std::vector<Diag> diags;
  auto pr = build_problem(in, "", &diags);
  REQUIRE(pr);
  nlohmann::json j = problem_to_json(*pr);
  CHECK(j["mem_limit"] == "2p");
  CHECK(j["t_f"].dump() == "[18.522,18.5,18.5,20.001]");
  ProblemInput back;
  REQUIRE(problem_input_from_json(j, "", "", &back, &diags));
  auto again = build_problem(back, "", &diags);
  REQUIRE(again);
  CHECK(again->t_f == pr->t_f);
  CHECK(again->mem_w == pr->mem_w);
  CHECK(again->mem_limit == pr->mem_limit);
}
