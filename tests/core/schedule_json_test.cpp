// Tests for core/schedule_json.cpp: round trip, and errors located by line/column or JSON pointer.
#include "core/schedule_json.h"

#include <filesystem>
#include <fstream>
#include <functional>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "planner/gen_baseline.h"
#include "planner/lower.h"
#include "test_util.h"

using namespace zbpp;

namespace {
std::string written_zb_h1() {
  Problem pr = test::make_problem(3, 4, 18.522, 18.086, 9.337, 0.601, 1, 0.3664, "1p");
  Schedule s = generate_zb_h1(pr);
  std::vector<Diag> diags;
  auto t = simulate_timeline(s, pr, &diags);
  REQUIRE(t);
  return schedule_to_json_text(s, pr, *t);
}

std::string load_error(const std::string& text) {
  std::vector<Diag> diags;
  auto j = parse_json_text(text, "s.json", &diags);
  if (j) CHECK_FALSE(schedule_from_json(*j, "s.json", &diags));
  REQUIRE(!diags.empty());
  return format_diag(diags[0]);
}
}  // namespace

TEST_CASE("schedule file: written file reads back to the same schedule and problem") {
  std::string text = written_zb_h1();
  std::vector<Diag> diags;
  auto j = parse_json_text(text, "s.json", &diags);
  REQUIRE(j);
  auto file = schedule_from_json(*j, "s.json", &diags);
  INFO(format_diags(diags));
  REQUIRE(file);
  Problem pr = test::make_problem(3, 4, 18.522, 18.086, 9.337, 0.601, 1, 0.3664, "1p");
  Schedule expected = generate_zb_h1(pr);
  CHECK(file->schedule.stages == expected.stages);
  CHECK(file->schedule.method == "zb-h1");
  CHECK(file->problem.t_f == pr.t_f);
  CHECK(file->problem.mem_limit == pr.mem_limit);
  CHECK((*j)["problem"]["mem_limit"] == "1p");
  CHECK((*j)["stages"][0][0] == nlohmann::json::parse(R"({"type": "F", "mb": 0, "chunk": 0})"));
  // One op per line, so schedules diff line by line.
  CHECK(text.find("      {\"type\": \"F\", \"mb\": 1, \"chunk\": 0},\n") != std::string::npos);
}

TEST_CASE("schedule file: numbers of every width the writer spells (1 to 4 digits) read back as written") {
  // A lowered file has every op field: microbatches, slots and peers.
  auto round_trip = [](int p, int m) {
    Problem pr = test::make_problem(p, m, 1, 1, 1, 0.5);
    const Schedule compute = generate_1f1b(pr);
    const Schedule lowered = lower_comms(compute);
    std::vector<Diag> diags;
    auto t = simulate_timeline(compute, pr, &diags);
    REQUIRE(t);
    const std::string text = schedule_to_json_text(lowered, pr, *t);
    auto j = parse_json_text(text, "s.json", &diags);
    REQUIRE(j);
    auto file = schedule_from_json(*j, "s.json", &diags);
    INFO(format_diags(diags));
    REQUIRE(file);
    CHECK(file->schedule.stages == lowered.stages);
    int most = 0;  // the widest slot and peer written
    for (const auto& ops : lowered.stages)
      for (const Op& op : ops) most = std::max({most, op.slot, op.peer});
    return std::pair{text, most};
  };
  // Microbatches 0..1233 on 2 stages.
  const auto [text, unused] = round_trip(2, 1234);
  for (const char* line : {"      {\"type\": \"F\", \"mb\": 9, \"chunk\": 0, \"slot\": 1},\n",
                           "      {\"type\": \"SEND_F\", \"mb\": 99, \"chunk\": 0, \"peer\": 1},\n",
                           "      {\"type\": \"F\", \"mb\": 100, \"chunk\": 0, \"slot\": 0},\n",
                           "      {\"type\": \"RECV_F\", \"mb\": 1233, \"chunk\": 0, \"peer\": 0},\n"})
    CHECK(text.find(line) != std::string::npos);
  // Slots and peers past 100 on 120 stages.
  CHECK(round_trip(120, 120).second >= 100);
}

TEST_CASE("schedule file: a JSON syntax error points at line and column with a caret") {
  std::string bad = "{\n  \"p\": 2,\n  \"m\": 2 \"stages\": []\n}\n";
  CHECK(load_error(bad) ==
        "s.json:3:17: invalid JSON: parse error at line 3, column 17: syntax error while parsing object - unexpected "
        "string literal; expected '}'\n  \"m\": 2 \"stages\": []\n                ^ near here");
  // A file cut short: its last line that holds something, the caret after it (not an empty line).
  CHECK(load_error("{\n  \"p\": 2,\n") ==
        "s.json:3:1: invalid JSON: parse error at line 3, column 1: syntax error while parsing object key - unexpected "
        "end of input; expected string literal\n  \"p\": 2,\n         ^ the file ends here");
  CHECK(load_error(" \n") == "s.json:2:1: invalid JSON: parse error at line 2, column 1: syntax error while parsing value - "
                             "unexpected end of input; expected '[', '{', or a literal (the file is empty)");
}

TEST_CASE("schedule file: wrong fields are reported with their JSON pointer") {
  std::string text = written_zb_h1();
  auto j = nlohmann::json::parse(text);
  auto with = [&](const std::string& pointer, const nlohmann::json& value) {
    auto copy = j;
    copy[nlohmann::json::json_pointer(pointer)] = value;
    return load_error(copy.dump());
  };
  CHECK(with("/stages/1/3/mb", "two") == "s.json: /stages/1/3/mb: expected a non-negative integer, got \"two\"");
  CHECK(with("/stages/2/0/type", "X") ==
        "s.json: /stages/2/0/type: unknown op type \"X\" (expected F, B, W, BW, SEND_F, RECV_F, SEND_B, RECV_B, OPT_STEP, SEND_STATE, RECV_STATE, SEND_VALID, RECV_VALID or VALIDATE)");
  CHECK(with("/stages/0/1/microbatch", 1) == "s.json: /stages/0/1/microbatch: unknown op field 'microbatch'");
  CHECK(with("/problem/t_b", -1) == "s.json: t_b must be positive and finite, got -1.0");
  CHECK(with("/problem/t_w", nlohmann::json::array()) ==
        "s.json: /problem/t_w: expected a number or a non-empty list of numbers (one per stage), got []");
  CHECK(with("/version", 7) == "s.json: /version: this zbplan reads version 2, the file has 7");
  // Version 1 named figures otherwise (issue 20): refused, saying how to get a file this zbplan reads.
  CHECK(with("/version", 1) ==
        "s.json: /version: version 1 of the format is no longer read: its bubble_rate was the span's and its solver "
        "cost \"period\" meant the span (version 2 names each figure by what it measures); plan the schedule again "
        "with zbplan plan, or, for a file written by hand, set \"version\": 2 and drop its recorded figures");
  CHECK(with("/bubble_rate", 0.1) ==
        "s.json: /bubble_rate: unknown field 'bubble_rate': version 2 of the format calls it span_bubble_rate (the "
        "period's and the wall clock's are in /iterations): plan the schedule again with zbplan plan, or drop the "
        "figure (every figure is recomputed on read)");
  CHECK(with("/problem/placement", nlohmann::json::parse("[[2],[1],[0]]")) ==
        "s.json: /problem/placement: differs from the schedule's /placement");
  CHECK(with("/placement/1/0", 4294967297LL) ==
        "s.json: /placement/1/0: expected a virtual stage (an integer 0..1000000), got 4294967297");
  auto missing = j;
  missing.erase("stages");
  CHECK(load_error(missing.dump()) == "s.json: /: missing required field 'stages'");
}

TEST_CASE("schedule file: an unreadable path is an error, not a crash") {
  std::vector<Diag> diags;
  CHECK_FALSE(load_schedule_file("/nonexistent/s.json", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "/nonexistent/s.json: cannot open file: No such file or directory");
}

TEST_CASE("schedule file: read from disk, its ops streamed from the parser, it gives and says what the DOM reader does") {
  // load_schedule_file hands each op to the reader as the parser completes it (issue 34, class 8:
  // a DOM node per op cost ten times the text); the errors and the schedule must not change.
  const nlohmann::json good = nlohmann::json::parse(written_zb_h1());
  std::vector<std::pair<std::string, std::string>> cases = {{"valid", good.dump(1)}};
  auto edited = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    cases.emplace_back(name, j.dump(1));
  };
  edited("ops wrong in two stages", [](nlohmann::json& j) {
    j["stages"][2][1]["mb"] = -3;
    j["stages"][0][4]["type"] = "Q";
    j["stages"][0][5] = 7;
    j["stages"][1][0] = nlohmann::json::array({1, 2});
  });
  edited("a stage that is not a list, beside a bad op", [](nlohmann::json& j) {
    j["stages"][1] = "F0";
    j["stages"][2][0]["extra"] = true;
  });
  edited("a bad header and a bad op", [](nlohmann::json& j) {
    j["colour"] = "blue";
    j["stages"][0][0]["mb"] = "x";
  });
  edited("stages not a list", [](nlohmann::json& j) { j["stages"] = {{"0", nlohmann::json::array()}}; });
  edited("more errors than are kept (1000), most in one stage", [](nlohmann::json& j) {
    j["stages"][0][0]["mb"] = "x";
    for (int i = 0; i < 1500; ++i) j["stages"][1].push_back({{"type", "F"}, {"mb", "x"}});
    j["stages"][2][3]["mb"] = "x";
  });
  // A key given twice inside an op, which only the text can hold.
  std::string twice = good.dump(1);
  twice.replace(twice.find("\"mb\": 1,"), 8, "\"mb\": 1, \"mb\": 2,");
  cases.emplace_back("a key twice in an op", twice);

  const std::string path = (std::filesystem::temp_directory_path() / "zbpp-streamed-s.json").string();
  for (const auto& [name, text] : cases) {
    INFO(name);
    std::ofstream(path) << text;
    std::vector<Diag> dom_diags, streamed_diags;
    std::optional<ScheduleFile> dom;
    if (auto j = parse_json_text(text, path, &dom_diags)) dom = schedule_from_json(*j, path, &dom_diags);
    std::string read_back;
    auto streamed = load_schedule_file(path, &streamed_diags, &read_back);
    CHECK(read_back == text);
    CHECK(format_diags(streamed_diags) == format_diags(dom_diags));
    CHECK(diag_count(streamed_diags) == diag_count(dom_diags));
    if (name.find("1000") != std::string::npos) CHECK(diag_count(dom_diags) == 1502);
    REQUIRE(streamed.has_value() == dom.has_value());
    if (name == "valid") REQUIRE(streamed);
    else CHECK_FALSE(streamed);
    if (streamed) CHECK(streamed->schedule.stages == dom->schedule.stages);
  }
  std::filesystem::remove(path);
}
