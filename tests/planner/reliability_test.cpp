// Regression tests for what fuzzing and the bad-input corpus found (docs/reliability.md): messages
// that echo a JSON value stay short and do not recurse, and shape checks do not trust a file's sizes.
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "planner/problem.h"
#include "planner/schedule_json.h"
#include "planner/validate.h"
#include "tests/planner/test_util.h"

using namespace zbpp;

TEST_CASE("json_excerpt: short values whole, long and deep ones cut at 80 characters") {
  CHECK(json_excerpt(nlohmann::json::parse(R"({"a": [1, 2.5, "x"], "b": null})")) == R"({"a": [1, 2.5, "x"], "b": null})");
  CHECK(json_excerpt(nlohmann::json(std::string(1000, 'A'))) == "\"" + std::string(79, 'A') + "...");
  // 100000 nested lists: dump() would recurse 100000 frames deep (zbplan crashed with a stack overflow).
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(json_excerpt(nlohmann::json::parse(deep)) == std::string(80, '[') + "...");
}

TEST_CASE("problem file: a deeply nested value gets a located, short message") {
  std::string text = R"({"p": 4, "m": 8, "t_b": 1, "t_w": 1, "t_f": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::vector<Diag> diags;
  auto j = parse_json_text(text, "deep.json", &diags);
  REQUIRE(j);
  ProblemInput in;
  CHECK_FALSE(problem_input_from_json(*j, "deep.json", "", &in, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "deep.json: /t_f/0: expected a number, got " + std::string(80, '[') + "...");
}

TEST_CASE("schedule file: a deeply nested op gets a located, short message") {
  std::string text = R"({"p": 1, "m": 1, "placement": [[0]], "problem": {"p": 1, "m": 1, "t_f": 1, "t_b": 1, "t_w": 1},
    "stages": [[)" + std::string(100000, '[') + std::string(100000, ']') + "]]}";
  std::vector<Diag> diags;
  auto j = parse_json_text(text, "deep.json", &diags);
  REQUIRE(j);
  CHECK_FALSE(schedule_from_json(*j, "deep.json", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == R"(deep.json: /stages/0/0: expected an op object like {"type": "F", "mb": 0, "chunk": 0}, got )" +
                                     std::string(80, '[') + "...");
}

TEST_CASE("validate: a file's p and chunks of 1e9 are reported, never used to size a table") {
  // p x chunks overflowed int (undefined behaviour) and sized a vector<bool> from the product.
  Problem pr = test::make_problem(2, 4, 1, 1, 1);
  Schedule s = test::inline_schedule({"F0 B0 W0", "F0 B0 W0"}, 4);
  s.p = 1'000'000'000;
  s.chunks = 1'000'000'000;
  auto diags = validate(s, pr, "s.json");
  REQUIRE(diags.size() == 2);
  CHECK(format_diag(diags[0]) == "s.json: schedule has p = 1000000000 but its problem has p = 2");
  CHECK(format_diag(diags[1]) == "s.json: schedule has chunks = 1000000000 but its problem has 1");
}

TEST_CASE("parse_json_text: a number beyond a double is a located error, not an uncaught exception") {
  // nlohmann throws out_of_range (not parse_error) for it: zbplan and zbrun aborted (fuzz_problem).
  std::vector<Diag> diags;
  CHECK_FALSE(parse_json_text("{\"p\": 4,\n \"m\": 1e400}", "x.json", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "x.json:2:7: invalid JSON: number overflow parsing '1e400' (beyond the range of a double)\n"
                                 " \"m\": 1e400}\n      ^ near here");
}
