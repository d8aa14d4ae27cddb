// Regression tests for what fuzzing and the bad-input corpus found (docs/reliability.md): messages
// that echo a JSON value stay short and do not recurse, and shape checks do not trust a file's sizes.
#include <cmath>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/problem.h"
#include "core/schedule_json.h"
#include "core/validate.h"
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

// Issue 19, class 10 (the file half): nlohmann keeps the last of two equal keys without a word.
TEST_CASE("parse_json_text: a duplicate key is refused at its JSON pointer, at any depth") {
  auto error = [](const std::string& text) {
    std::vector<Diag> diags;
    CHECK_FALSE(parse_json_text(text, "x.json", &diags));
    REQUIRE(diags.size() == 1);
    return format_diag(diags[0]);
  };
  CHECK(error(R"({"p": 4, "m": 8, "p": 2})") ==
        "x.json: /p: duplicate key \"p\": give each field once (JSON readers disagree on which one counts)");
  CHECK(error(R"({"stages": [[{"type": "F"}, {"type": "B", "mb": 0, "mb": 1}]], "m": 1})").rfind(
            "x.json: /stages/0/1/mb: duplicate key \"mb\"", 0) == 0);
  CHECK(error(R"({"problem": {"t_f": [1, 2], "a/b": 1, "a/b": 2}})")
            .rfind("x.json: /problem/a~1b: duplicate key", 0) == 0);
  // The same key in two objects, and keys that differ only in case, are fine.
  std::vector<Diag> diags;
  CHECK(parse_json_text(R"([{"p": 1}, {"p": 2, "P": 3}])", "x.json", &diags));
  CHECK(diags.empty());
}

// Issue 19, class 12 (the JSON half): get<long long>() wrapped 18446744073709551615 to -1.
TEST_CASE("json_integer: an unsigned value beyond long long is out of range, and shown as written") {
  auto big = nlohmann::json::parse("18446744073709551615");
  CHECK_FALSE(json_integer(big, -1, 1'000'000'000LL));
  CHECK(json_integer(nlohmann::json::parse("-1"), -1, 5) == -1);
  CHECK_FALSE(json_integer(nlohmann::json::parse("6"), -1, 5));
  CHECK_FALSE(json_integer(nlohmann::json::parse("2.0"), -1, 5));
  ProblemInput in;
  std::vector<Diag> diags;
  auto j = nlohmann::json::parse(R"({"p": 18446744073709551615, "m": 8, "t_f": 1, "t_b": 1, "t_w": 1})");
  CHECK_FALSE(problem_input_from_json(j, "p.json", "", &in, &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "p.json: /p: integer out of range: 18446744073709551615");
}

TEST_CASE("problem: a time that is not a number is shown as nan or inf, not as JSON's null") {
  ProblemInput in;
  in.p = 2;
  in.m = 2;
  in.t_comm = {std::nan("")};
  std::vector<Diag> diags;
  CHECK_FALSE(build_problem(in, "", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].message.find("t_comm must be non-negative and finite, got ") == 0);
  CHECK(diags[0].message.find("nan") != std::string::npos);
  CHECK(diags[0].message.find("null") == std::string::npos);
}

// Issue 19, class 6: the reader kept one error per bad op.
TEST_CASE("schedule file: 100000 bad ops keep 1000 findings and count the rest") {
  std::string ops;
  for (int i = 0; i < 100000; ++i) ops += std::string(i ? "," : "") + R"({"type": "X", "mb": 0})";
  std::string text = R"({"p": 1, "m": 1, "placement": [[0]], "problem": {"p": 1, "m": 1, "t_f": 1, "t_b": 1, "t_w": 1},
    "stages": [[)" + ops + "]]}";
  std::vector<Diag> diags;
  auto j = parse_json_text(text, "big.json", &diags);
  REQUIRE(j);
  CHECK_FALSE(schedule_from_json(*j, "big.json", &diags));
  CHECK(diags.size() == kMaxDiags + 1);
  CHECK(diag_count(diags) == 100000);
  CHECK(format_diag(diags.back()) == "... and 99000 more");
}
