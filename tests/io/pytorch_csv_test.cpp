// Tests for io/export_csv.cpp: golden files written by hand from PyTorch's documented action
// form (<stage><F|I|W|B><microbatch>, one row per rank), the CSVs PyTorch's own schedule code writes
// (tests/golden/pytorch, README there), the round trip, and located errors.
// Regenerate nothing: the golden files are the specification.
#include "io/export_csv.h"
#include "io/import_csv.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "planner/gen_baseline.h"
#include "planner/lower.h"
#include "test_util.h"

using namespace zbpp;

namespace {
std::string golden(const std::string& name) {
  std::ifstream in(std::string(ZBPP_GOLDEN_DIR) + "/" + name, std::ios::binary);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The one diagnostic importing `text` gives.
std::string import_error(const std::string& text) {
  std::vector<Diag> diags;
  CHECK_FALSE(import_pytorch_csv(text, "s.csv", &diags));
  REQUIRE(diags.size() == 1);
  return format_diag(diags[0]);
}

// Imports `text`, which must validate as a schedule of its shape, and returns the import.
CsvImport import_valid(const std::string& text, const std::string& name) {
  std::vector<Diag> diags;
  auto in = import_pytorch_csv(text, name, &diags);
  INFO(name << ": " << format_diags(diags));
  REQUIRE(in);
  const Schedule& s = in->schedule;
  Problem pr = test::make_problem(s.p, s.m, 1, 1, 1, 0, 1, 0.5, "", s.chunks);
  pr.placement = s.placement;
  test::check_invariants(s, pr);
  return *in;
}

// The one diagnostic check_message_cells gives for `text`, which imports and validates.
std::string message_cells_error(const std::string& text) {
  CsvImport in = import_valid(text, "s.csv");
  std::vector<Diag> diags;
  CHECK_FALSE(check_message_cells(in, "s.csv", &diags));
  REQUIRE(diags.size() == 1);
  return format_diag(diags[0]);
}

std::string ops_text(const std::vector<Op>& ops) {
  std::string out;
  for (const Op& op : ops) out += (out.empty() ? "" : " ") + op_short(op);
  return out;
}
}  // namespace

TEST_CASE("pytorch csv: export matches the golden files (our B is PyTorch's I, our BW its B)") {
  Problem pr = test::make_problem(2, 3, 1, 1, 1);
  CHECK(export_pytorch_csv(generate_zb_h1(pr)) == golden("pytorch_zb-h1_p2_m3.csv"));
  CHECK(export_pytorch_csv(generate_1f1b(pr)) == golden("pytorch_1f1b_p2_m3.csv"));
  // A lowered schedule exports its compute ops only: PyTorch adds its own communication.
  CHECK(export_pytorch_csv(lower_comms(generate_zb_h1(pr))) == golden("pytorch_zb-h1_p2_m3.csv"));
}

TEST_CASE("pytorch csv: import of the golden file gives back our schedule, and round trips") {
  Problem pr = test::make_problem(2, 3, 1, 1, 1);
  std::vector<Diag> diags;
  auto s = import_pytorch_csv(golden("pytorch_zb-h1_p2_m3.csv"), "g.csv", &diags);
  REQUIRE(s);
  CHECK(s->schedule.stages == generate_zb_h1(pr).stages);
  CHECK(s->notes.empty());
  // V-shape: stage indices are virtual stages, so rank 0 holds stages 0 and 3.
  Problem two = test::make_problem(2, 4, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  Schedule v = generate_zb_v_handcrafted(two);
  std::string csv = export_pytorch_csv(v);
  CHECK(csv.rfind("0F0,", 0) == 0);
  CHECK(csv.find("3F0") != std::string::npos);
  auto back = import_pytorch_csv(csv, "v.csv", &diags);
  REQUIRE(back);
  CHECK(back->schedule.placement == v.placement);
  CHECK(back->schedule.stages == v.stages);
  CHECK(export_pytorch_csv(back->schedule) == csv);
}

TEST_CASE("pytorch csv: every CSV PyTorch's _dump_csv writes imports to the schedule it means") {
  // Each schedule class in both formats (tests/golden/pytorch/README.md): compute_only
  // (PyTorch's pipeline_order: idle steps, OVERLAP_F_B, REDUCE_GRAD) and compute_comms (what its
  // runtime runs: UNSHARD/RESHARD, REDUCE_GRAD, SEND/RECV). p = 4, m = 8.
  const Problem one = test::make_problem(4, 8, 1, 1, 1);
  const Problem two = test::make_problem(4, 8, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  std::string err;
  struct Case {
    std::string name;
    bool comms;  ///< has a compute_comms file too
    std::optional<Schedule> ours;  ///< our generator for the same order, if we have one
  };
  const std::vector<Case> cases = {
      {"gpipe_p4_m8", false, std::nullopt},
      {"looped_bfs_p4_v2_m8", true, std::nullopt},
      {"interleaved_1f1b_p4_v2_m8", true, generate_1f1b_interleaved(two, &err)},
      {"interleaved_zb_p4_v2_m8", true, std::nullopt},
      {"zbv_p4_m8", true, generate_zb_v_handcrafted(two)},
      {"dualpipev_p4_m8", true, generate_dualpipe_v(two, &err)},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CsvImport compute = import_valid(golden("pytorch/" + c.name + "_compute_only.csv"), c.name);
    const Schedule& s = compute.schedule;
    CHECK(s.p == 4);
    CHECK(s.m == 8);
    CHECK(s.chunks == (c.name == "gpipe_p4_m8" ? 1 : 2));
    CHECK(compute.messages.empty());
    for (const auto& ops : s.stages) {
      auto count = [&](OpType type) { return std::count_if(ops.begin(), ops.end(), [&](const Op& op) { return op.type == type; }); };
      CHECK(count(OpType::F) == s.chunks * 8);
      CHECK(count(OpType::B) + count(OpType::BW) == s.chunks * 8);
      CHECK(count(OpType::W) == count(OpType::B));
    }
    if (c.ours) {
      CHECK(s.placement == c.ours->placement);
      CHECK(s.stages == c.ours->stages);
    }
    std::vector<Diag> diags;
    CHECK(check_message_order(compute, c.name, &diags));
    CHECK(diags.empty());
    if (!c.comms) continue;
    // The compute_comms file means the same schedule, and its messages are ours.
    CsvImport comms = import_valid(golden("pytorch/" + c.name + ".csv"), c.name);
    CHECK(comms.schedule.placement == s.placement);
    CHECK(comms.schedule.stages == s.stages);
    CHECK(check_message_cells(comms, c.name, &diags));
    CHECK(diags.empty());
    size_t lowered_messages = 0;
    for (const auto& ops : lower_comms(s).stages)
      for (const Op& op : ops) lowered_messages += message_kind(op.type) < 2 && (is_send(op.type) || is_recv(op.type));
    CHECK(comms.messages.size() == lowered_messages);
  }
  // GPipe: all forwards, then all full backwards (our BW), then REDUCE_GRAD, which is ignored.
  CsvImport gpipe = import_valid(golden("pytorch/gpipe_p4_m8_compute_only.csv"), "gpipe");
  CHECK(ops_text(gpipe.schedule.stages[3]) == "F0 F1 F2 F3 F4 F5 F6 F7 BW0 BW1 BW2 BW3 BW4 BW5 BW6 BW7");
  CHECK(gpipe.notes == std::vector<std::string>{"import: ignored 4 REDUCE_GRAD cells (PyTorch's gradient reduction; "
                                                "zbrun's optimizer step reduces gradients itself)"});
  // DualPipe-V's OVERLAP_F_B pairs run as their two actions, F first.
  CsvImport dual = import_valid(golden("pytorch/dualpipev_p4_m8.csv"), "dualpipev");
  const auto& ops = dual.schedule.stages[0];
  const size_t f7 = std::find(ops.begin(), ops.end(), Op{OpType::F, 7, 0}) - ops.begin();
  REQUIRE(f7 + 1 < ops.size());
  CHECK(ops[f7 + 1] == Op{OpType::BW, 3, 1});
  CHECK(dual.step_of[0][f7] == dual.step_of[0][f7 + 1]);
  CHECK(dual.cells[0][dual.step_of[0][f7]] == "(0F7;7B3)OVERLAP_F_B");
  CHECK(dual.notes == std::vector<std::string>{
                          "import: 25 OVERLAP_F_B cells: each runs its actions one after the other (PyTorch overlaps "
                          "them; this model runs one op at a time)",
                          "import: ignored 8 REDUCE_GRAD cells (PyTorch's gradient reduction; zbrun's optimizer step "
                          "reduces gradients itself)",
                          "import: ignored 8 UNSHARD cells and 8 RESHARD cells (FSDP's weight gathering; zbrun keeps "
                          "every stage's weights whole)"});
  CHECK(dual.messages.size() == 192);
}

TEST_CASE("pytorch csv: PyTorch's own 1F1B order is refused, as its _validate_schedule refuses it") {
  // Schedule1F1B's pipeline_order starts the last rank at microbatch 1 (and ends it at 8), so no
  // stage has microbatches 0..m-1 (tests/bad_inputs/csv/pytorch-1f1b-order.csv, from PyTorch).
  std::vector<Diag> diags;
  auto in = import_pytorch_csv("0F0,0F1,0B0,0B1,0REDUCE_GRAD\n1F1,1B0,1F2,1B1,1REDUCE_GRAD\n", "s.csv", &diags);
  REQUIRE(in);
  CHECK(in->schedule.m == 3);
  Problem pr = test::make_problem(2, 3, 1, 1, 1);
  diags = validate(in->schedule, pr, "s.csv");
  REQUIRE_FALSE(diags.empty());
  CHECK(format_diag(diags[0]) == "s.csv: stage 0: F2 is missing");
}

TEST_CASE("pytorch csv: cells are read as Python's csv reader and PyTorch's _Action.from_str read them") {
  const std::string plain = "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1\n";
  CsvImport want = import_valid(plain, "plain");
  // Quoted cells, whitespace around a cell or inside a quote,
  // idle cells, "None", CR or CRLF line ends, text after a closing quote (joins the cell, as
  // Python's reader does), a trailing blank line.
  for (const std::string& text :
       {std::string("\"0F0\",\" 0F1\" ,0I0 ,\t0W0,,0I1,\"0W1\"\r1F0,None,1I0,1W0,1F1,1I1,1W1\r\r"),
        std::string("\"0F0\"  ,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1\n"),
        std::string(" 0F0 , 0F1 ,0I0,0W0,0I1,0W1\r\n\"1F0\",1I0,1W0,1F1,1I1,1W1\r\n\r\n")}) {
    INFO(text);
    CsvImport got = import_valid(text, "s.csv");
    CHECK(got.schedule.stages == want.schedule.stages);
    CHECK(got.schedule.placement == want.schedule.placement);
  }
  // A quoted cell may hold commas and line ends: one cell, refused as one, located by its step.
  CHECK(import_error("0F0,\"0F1,\n0I0\",0W0\n") ==
        "s.csv: row 1 (rank 0), column 2 (step 1), cell '0F1,?0I0': expected <stage><type><microbatch> like 0F3 (type F, "
        "I, B, W, SEND_F, RECV_F, SEND_B or RECV_B; REDUCE_GRAD, UNSHARD and RESHARD take no microbatch), a pair like "
        "(0F3;7B1)OVERLAP_F_B, or an empty cell");
  CHECK(import_error("\"0F\"\"0\"\n").find("cell '0F\"0': expected <stage>") != std::string::npos);
  // A quote after a space is text (Python reads ' "0F0"' as it stands), so PyTorch refuses it too.
  CHECK(import_error("0F0, \"0F1\"\n").find("column 2 (step 1), cell ' \"0F1\"': expected <stage>") != std::string::npos);
  // PyTorch would read "0F1x" as 0F1; a file holding it was not written by PyTorch.
  CHECK(import_error("0F0,0F1x\n").find("cell '0F1x': expected <stage><type><microbatch>") != std::string::npos);
  CHECK(import_error("0F0,0F\n") == "s.csv: row 1 (rank 0), column 2 (step 1), cell '0F': F needs a microbatch, as in 0F3");
  CHECK(import_error("1F0\n0F0,0SEND_B\n") ==
        "s.csv: row 2 (rank 1), column 2 (step 1), cell '0SEND_B': SEND_B needs a microbatch, as in 0SEND_B3");
  CHECK(import_error("(0F0;0I0)F\n") ==
        "s.csv: row 1 (rank 0), column 1 (step 0), cell '(0F0;0I0)F': only OVERLAP_F_B groups actions in parentheses, "
        "as in (0F3;7B1)OVERLAP_F_B");
  CHECK(import_error("(0F0;0SEND_F0)OVERLAP_F_B\n") ==
        "s.csv: row 1 (rank 0), column 1 (step 0), cell '(0F0;0SEND_F0)OVERLAP_F_B': OVERLAP_F_B pairs compute actions "
        "(F, I, B, W); '0SEND_F0' is not one");
  CHECK(import_error("( ; )OVERLAP_F_B\n") ==
        "s.csv: row 1 (rank 0), column 1 (step 0), cell '( ; )OVERLAP_F_B': OVERLAP_F_B holds no action; expected a "
        "pair like (0F3;7B1)OVERLAP_F_B");
  CHECK(import_error("(0F0;0X0)OVERLAP_F_B\n").find("cell '(0F0;0X0)OVERLAP_F_B': '0X0' in the pair: expected <stage>") !=
        std::string::npos);
  CHECK(import_error("0F0,0F1234567890\n") ==
        "s.csv: row 1 (rank 0), column 2 (step 1), cell '0F1234567890': the microbatch number is too long; expected "
        "<stage><type><microbatch> like 0F3 (type F, I, B, W, SEND_F, RECV_F, SEND_B or RECV_B; REDUCE_GRAD, UNSHARD "
        "and RESHARD take no microbatch), a pair like (0F3;7B1)OVERLAP_F_B, or an empty cell");
  // An OVERLAP_F_B pair, padded as from_str allows, is its actions in order; empty parts are skipped.
  CsvImport pair = import_valid("0F0,( 0F1 ;; 0I0 )OVERLAP_F_B,0W0,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1\n", "pair");
  CHECK(pair.schedule.stages == want.schedule.stages);
  CHECK(pair.step_of[0] == std::vector<int>{0, 1, 1, 2, 3, 4});
}

TEST_CASE("pytorch csv: REDUCE_GRAD, UNSHARD and RESHARD are ignored, REDUCE_GRAD only after the stage's backwards") {
  const std::string body = "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1";
  CsvImport plain = import_valid(body + "\n", "plain");
  CsvImport with = import_valid("0UNSHARD,0F0,0F1,0I0,0W0,0I1,0W1,0REDUCE_GRAD,0RESHARD\n1F0,1I0,1W0,1F1,1I1,1W1,1REDUCE_GRAD\n",
                                "with");
  CHECK(with.schedule.stages == plain.schedule.stages);
  CHECK(with.notes.size() == 2);
  CHECK(with.notes[1] == "import: ignored 1 UNSHARD cell and 1 RESHARD cell (FSDP's weight gathering; zbrun keeps every "
                         "stage's weights whole)");
  CHECK(import_error("0F0,0F1,0I0,0W0,0REDUCE_GRAD,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1\n") ==
        "s.csv: row 1 (rank 0), column 5 (step 4), cell '0REDUCE_GRAD': stage 0 reduces its gradients before its last "
        "backward, '0W1' at column 7: PyTorch would reduce a partial gradient");
  CHECK(import_error(body + ",1REDUCE_GRAD,1REDUCE_GRAD\n") ==
        "s.csv: row 2 (rank 1), column 8 (step 7), cell '1REDUCE_GRAD': stage 1 reduces its gradients a second time "
        "(first at column 7)");
  CHECK(import_error(body + ",0UNSHARD\n") ==
        "s.csv: row 2 (rank 1), column 7 (step 6), cell '0UNSHARD': stage 0 runs on rank 0 (row 1), not on this one");
  CHECK(import_error(body + ",5RESHARD\n") ==
        "s.csv: row 2 (rank 1), column 7 (step 6), cell '5RESHARD': stage 5 has no F, I, B or W action on any rank");
  CHECK(import_error("0REDUCE_GRAD\n") ==
        "s.csv: row 1 (rank 0) has no F, I, B or W action; every rank runs a stage");
}

TEST_CASE("pytorch csv: communication cells are checked against the messages our lowering sends") {
  // 1F1B on 2 ranks, 2 microbatches, as PyTorch's compute_comms format writes it.
  const std::string rank1 = "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n";
  const std::string good = "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n" + rank1;
  CsvImport in = import_valid(good, "s.csv");
  std::vector<Diag> diags;
  CHECK(check_message_cells(in, "s.csv", &diags));
  CHECK(diags.empty());
  CHECK(in.messages.size() == 8);
  CHECK(message_cells_error("0F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n" + rank1) ==
        "s.csv: row 1 (rank 0): no 0SEND_F0 cell after 0F0 (column 1): a CSV with communication cells needs every "
        "message the schedule sends");
  CHECK(message_cells_error("0SEND_F0,0F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n" + rank1) ==
        "s.csv: row 1 (rank 0), column 1 (step 0), cell '0SEND_F0': comes before 0F0 (column 2), which makes what it "
        "sends");
  CHECK(message_cells_error(good.substr(0, good.find('\n') + 1) +
                            "1F0,1RECV_F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n") ==
        "s.csv: row 2 (rank 1), column 2 (step 1), cell '1RECV_F0': comes after 1F0 (column 1), which needs what it "
        "receives");
  CHECK(message_cells_error("0F0,0SEND_F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n" + rank1) ==
        "s.csv: row 1 (rank 0), column 3 (step 2), cell '0SEND_F0': no such message in the lowered schedule: it repeats "
        "column 2");
  CHECK(message_cells_error(good.substr(0, good.size() - 1) + ",1SEND_F1\n") ==
        "s.csv: row 2 (rank 1), column 9 (step 8), cell '1SEND_F1': no such message in the lowered schedule: stage 1 is "
        "the last stage: there is no stage 2 to send to");
  CHECK(message_cells_error(good.substr(0, good.size() - 1) + ",1RECV_F7\n") ==
        "s.csv: row 2 (rank 1), column 9 (step 8), cell '1RECV_F7': no such message in the lowered schedule: microbatch "
        "7 does not exist (m = 2)");
  // Receives pair up with the sender's sends in order.
  CHECK(message_cells_error(good.substr(0, good.find('\n') + 1) +
                            "1RECV_F1,1RECV_F0,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n") ==
        "s.csv: row 2 (rank 1), column 1 (step 0), cell '1RECV_F1': receive 1 from rank 0, whose send 1 to this rank is "
        "'0SEND_F0' (column 2): receives pair up with sends in the order they are posted");
  // Two stages on one rank pass tensors without a message (the V's turn, PyTorch writes none).
  CHECK(message_cells_error("0F0,0SEND_F0,1F0,1B0,0B0\n") ==
        "s.csv: row 1 (rank 0), column 2 (step 1), cell '0SEND_F0': no such message in the lowered schedule: stages 0 "
        "and 1 are both on this rank, which passes the tensor on without a message");
}

TEST_CASE("pytorch csv: malformed cells and inconsistent rows are located") {
  CHECK(import_error("0F0,0X1\n1F0\n") ==
        "s.csv: row 1 (rank 0), column 2 (step 1), cell '0X1': expected <stage><type><microbatch> like 0F3 (type F, I, "
        "B, W, SEND_F, RECV_F, SEND_B or RECV_B; REDUCE_GRAD, UNSHARD and RESHARD take no microbatch), a pair like "
        "(0F3;7B1)OVERLAP_F_B, or an empty cell");
  CHECK(import_error("0F0,1F0\n1F0\n") ==
        "s.csv: row 2 (rank 1), column 1 (step 0), cell '1F0': stage 1 is also on rank 0 (row 1); each stage must belong "
        "to one rank");
  CHECK(import_error("0F0,1F0\n2F0\n") == "s.csv: row 2 (rank 1) runs 1 stage(s), row 1 (rank 0) runs 2: every rank "
                                         "needs the same number");
  CHECK(import_error("\n0F0,1F0\n") ==
        "s.csv: row 1 (rank 0) has no F, I, B or W action; every rank runs a stage (a blank line is a rank too)");
  CHECK(import_error("0F0\n,,\n1F0\n") ==
        "s.csv: row 2 (rank 1) has no F, I, B or W action; every rank runs a stage (a blank line is a rank too)");
  CHECK(import_error("") == "s.csv: no rows: expected one row of actions per rank");
  CHECK(import_error(",,\n\n") == "s.csv: no rows: expected one row of actions per rank");
}

TEST_CASE("pytorch csv: a bad cell is quoted short, without control bytes") {
  CHECK(import_error("0F0," + std::string(100000, 'x') + "\n") ==
        "s.csv: row 1 (rank 0), column 2 (step 1), cell 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (100000 characters)': "
        "expected <stage><type><microbatch> like 0F3 (type F, I, B, W, SEND_F, RECV_F, SEND_B or RECV_B; REDUCE_GRAD, "
        "UNSHARD and RESHARD take no microbatch), a pair like (0F3;7B1)OVERLAP_F_B, or an empty cell");
  CHECK(import_error(std::string("0F\x1b[2J\0", 7)).find("cell '0F?[2J?': expected <stage>") != std::string::npos);
}

TEST_CASE("pytorch csv: messages between two ranks must be consumed in the order they are sent") {
  std::vector<Diag> diags;
  // Planned schedules keep the order (lowering them validates), V-shape and interleaved included.
  Problem one = test::make_problem(3, 5, 1, 1, 1);
  Problem two = test::make_problem(2, 4, 1, 1, 1, 0, 0.5, 0.25, "", 2);
  std::string err;
  for (const Schedule& s : {generate_1f1b(one), generate_zb_h1(one), generate_zb_h2(one), generate_zb_v_handcrafted(two),
                            *generate_dualpipe_v(two, &err)}) {
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
        "s.csv: row 1 (rank 0), column 3 (step 2), cell '0I0': 0I0 needs stage 1's gradient of microbatch 0 from rank "
        "1, which sends 1I1's first (column 3): messages between two ranks arrive in the order they are sent");
  // Activations too: rank 0 sends F1 first, rank 1 runs F0 first.
  diags.clear();
  auto forwards = import_pytorch_csv("0F1,0F0,0I0,0I1,0W0,0W1\n1F0,1F1,1I0,1I1,1W0,1W1\n", "s.csv", &diags);
  REQUIRE(forwards);
  CHECK_FALSE(check_message_order(*forwards, "s.csv", &diags));
  CHECK(diags.at(0).message.find("1F0 needs stage 0's activation of microbatch 0 from rank 0, which sends 0F1's "
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
    CHECK(got->schedule.stages == want->schedule.stages);
    CHECK(got->schedule.placement == want->schedule.placement);
  }
  CHECK(diags.empty());
}

TEST_CASE("pytorch csv: a stage beyond the rows and a microbatch beyond any problem name their row and cell") {
  CHECK(import_error("0F0,0I0,0W0\n1F0,5I0,1W0\n") ==
        "s.csv: row 2 (rank 1), column 2 (step 1), cell '5I0': stage 5 does not exist: 2 row(s) of 1 stage(s) each make "
        "stages 0..1");
  CHECK(import_error("0F0,0I0,0W0\n1F0,1I0,1W0,1F9999999\n") ==
        "s.csv: row 2 (rank 1), column 4 (step 3), cell '1F9999999': microbatch 9999999 is beyond the 1000000 "
        "microbatches a problem may have (0..999999)");
}
