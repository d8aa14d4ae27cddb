// Tests for planner/export_csv.cpp: golden files written by hand from PyTorch's documented action
// form (<stage><F|I|W|B><microbatch>, one row per rank), the round trip, and located errors.
// Regenerate nothing: the golden files are the specification.
#include "planner/export_csv.h"

#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "planner/gen_baseline.h"
#include "test_util.h"

using namespace zbpp;

namespace {
std::string golden(const std::string& name) {
  std::ifstream in(std::string(ZBPP_GOLDEN_DIR) + "/" + name);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

TEST_CASE("pytorch csv: export matches the golden files (our B is PyTorch's I, our BW its B)") {
  Problem pr = test::make_problem(2, 3, 1, 1, 1);
  CHECK(export_pytorch_csv(generate_zb_h1(pr)) == golden("pytorch_zb-h1_p2_m3.csv"));
  CHECK(export_pytorch_csv(generate_1f1b(pr)) == golden("pytorch_1f1b_p2_m3.csv"));
}

TEST_CASE("pytorch csv: import of the golden file gives back our schedule, and round trips") {
  Problem pr = test::make_problem(2, 3, 1, 1, 1);
  std::vector<Diag> diags;
  auto s = import_pytorch_csv(golden("pytorch_zb-h1_p2_m3.csv"), "g.csv", &diags);
  REQUIRE(s);
  CHECK(s->stages == generate_zb_h1(pr).stages);
  // V-shape: stage indices are virtual stages, so rank 0 holds stages 0 and 3.
  Problem two = test::make_problem(2, 4, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  Schedule v = generate_zb_v(two);
  std::string csv = export_pytorch_csv(v);
  CHECK(csv.rfind("0F0,", 0) == 0);
  CHECK(csv.find("3F0") != std::string::npos);
  auto back = import_pytorch_csv(csv, "v.csv", &diags);
  REQUIRE(back);
  CHECK(back->placement == v.placement);
  CHECK(back->stages == v.stages);
  CHECK(export_pytorch_csv(*back) == csv);
}

TEST_CASE("pytorch csv: malformed cells and inconsistent rows are located") {
  std::vector<Diag> diags;
  CHECK_FALSE(import_pytorch_csv("0F0,0X1\n1F0\n", "s.csv", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "s.csv: row 0, cell 1 ('0X1'): expected <stage><F|I|W|B><microbatch>, e.g. 0F3");
  diags.clear();
  CHECK_FALSE(import_pytorch_csv("0F0,1F0\n1F0\n", "s.csv", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "s.csv: row 1: stage 1 also appears on another rank; each stage must belong to one rank");
  diags.clear();
  CHECK_FALSE(import_pytorch_csv("", "s.csv", &diags));
  CHECK(format_diag(diags.at(0)) == "s.csv: no rows: expected one row of actions per rank");
}

TEST_CASE("pytorch csv: a bad cell is quoted short, without control bytes") {
  std::vector<Diag> diags;
  CHECK_FALSE(import_pytorch_csv("0F0," + std::string(100000, 'x') + "\n", "s.csv", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) ==
        "s.csv: row 0, cell 1 ('xxxxxxxxxxxxxxxxxxxx... (100000 characters)'): expected "
        "<stage><F|I|W|B><microbatch>, e.g. 0F3");
  diags.clear();
  CHECK_FALSE(import_pytorch_csv(std::string("0F\x1b[2J\0", 7), "s.csv", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "s.csv: row 0, cell 0 ('0F?[2J?'): expected <stage><F|I|W|B><microbatch>, e.g. 0F3");
}

TEST_CASE("pytorch csv: messages between two ranks must be consumed in the order they are sent") {
  std::vector<Diag> diags;
  // Planned schedules keep the order (lowering them validates), V-shape and interleaved included.
  Problem one = test::make_problem(3, 5, 1, 1, 1);
  Problem two = test::make_problem(2, 4, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  for (const Schedule& s : {generate_1f1b(one), generate_zb_h1(one), generate_zb_h2(one), generate_zb_v(two)}) {
    auto back = import_pytorch_csv(export_pytorch_csv(s), "s.csv", &diags);
    REQUIRE(back);
    CHECK(check_message_order(*back, "s.csv", &diags));
  }
  CHECK(diags.empty());
  // Rank 1 sends the gradient of microbatch 1 first; rank 0 needs microbatch 0's first.
  auto swapped = import_pytorch_csv("0F0,0F1,0I0,0I1,0W0,0W1\n1F0,1F1,1I1,1I0,1W0,1W1\n", "s.csv", &diags);
  REQUIRE(swapped);
  CHECK_FALSE(check_message_order(*swapped, "s.csv", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) ==
        "s.csv: row 0: 0I0 needs stage 1's gradient of microbatch 0 from row 1, which sends 1I1's first: messages "
        "between two ranks arrive in the order they are sent");
  // Activations too: rank 0 sends F1 first, rank 1 runs F0 first.
  diags.clear();
  auto forwards = import_pytorch_csv("0F1,0F0,0I0,0I1,0W0,0W1\n1F0,1F1,1I0,1I1,1W0,1W1\n", "s.csv", &diags);
  REQUIRE(forwards);
  CHECK_FALSE(check_message_order(*forwards, "s.csv", &diags));
  CHECK(diags.at(0).message.find("1F0 needs stage 0's activation of microbatch 0 from row 0, which sends 0F1's "
                                 "first") != std::string::npos);
}

TEST_CASE("pytorch csv: a UTF-8 byte order mark and CRLF line ends are read as the plain file") {
  std::vector<Diag> diags;
  const std::string plain = "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1\n";
  auto want = import_pytorch_csv(plain, "s.csv", &diags);
  REQUIRE(want);
  for (const std::string& text : {"\xEF\xBB\xBF" + plain, std::string("0F0,0F1,0I0,0W0,0I1,0W1\r\n1F0,1I0,1W0,1F1,1I1,1W1\r\n"),
                                  std::string("\xEF\xBB\xBF" "0F0,0F1,0I0,0W0,0I1,0W1\r\n1F0,1I0,1W0,1F1,1I1,1W1")}) {
    auto got = import_pytorch_csv(text, "s.csv", &diags);
    INFO(text);
    REQUIRE(got);
    CHECK(got->stages == want->stages);
    CHECK(got->placement == want->placement);
  }
  CHECK(diags.empty());
}

TEST_CASE("pytorch csv: a stage beyond the rows and a microbatch beyond any problem name their row and cell") {
  std::vector<Diag> diags;
  CHECK_FALSE(import_pytorch_csv("0F0,0I0,0W0\n1F0,5I0,1W0\n", "s.csv", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) ==
        "s.csv: row 1, cell 1 ('5I0'): stage 5 does not exist: 2 row(s) of 1 stage(s) each make stages 0..1");
  diags.clear();
  CHECK_FALSE(import_pytorch_csv("0F0,0I0,0W0\n1F0,1I0,1W0,1F9999999\n", "s.csv", &diags));
  REQUIRE(diags.size() == 1);
  CHECK(format_diag(diags[0]) == "s.csv: row 1, cell 3 ('1F9999999'): microbatch 9999999 is beyond the 1000000 "
                                 "microbatches a problem may have (0..999999)");
}
