// The method table (planner/methods.h): every row plans what its columns say, auto runs every row
// but itself, and zbplan's --method, --help and `zbplan methods` read the same names.
#include "planner/methods.h"

#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "cli/zbplan_cli.h"
#include "core/validate.h"
#include "planner/pipeline.h"
#include "test_util.h"

namespace zbpp {
namespace {

// Four stages of uneven times, 8 microbatches, memory 2p (room for every method's schedule).
Problem four_stages() {
  ProblemInput in;
  in.p = 4;
  in.m = 8;
  in.t_f = {1.0, 1.4, 0.8, 1.2};
  in.t_b = {1.1, 1.3, 0.9, 1.5};
  in.t_w = {0.6, 0.5, 0.7, 0.4};
  in.mem_limit = "2p";
  return test::checked_problem(in);
}

TEST_CASE("methods: one row per name, auto last, aliases and the name list from the table") {
  std::set<std::string> names;
  for (const Method& m : methods()) {
    INFO(m.name);
    CHECK(names.insert(m.name).second);
    CHECK(find_method(m.name) == &m);
    const bool generates = m.generator != nullptr;
    CHECK((m.runs == Runs::kGenerator) == generates);
    CHECK(std::string(m.what).size() > 10);
    CHECK(std::string(m.memory).size() > 0);
  }
  CHECK(methods().back().runs == Runs::kAuto);
  CHECK(plan_methods().size() == methods().size());
  for (size_t i = 0; i < methods().size(); ++i) CHECK(plan_methods()[i] == methods()[i].name);
  for (const MethodAlias& a : method_aliases()) {
    CHECK(find_method(a.method));
    CHECK(!find_method(a.name));
  }
  CHECK(find_method("ZB-H1") == nullptr);  // exact: the CLI folds the case
  CHECK(is_v_method("zb-v"));
  CHECK(!is_v_method("heuristic"));
  CHECK(is_ilp("ilp-v"));
  CHECK(!is_ilp("heuristic-v"));
  CHECK(plans_one_chunk(*find_method("auto")));
  CHECK(!plans_one_chunk(*find_method("1f1b-i")));
}

TEST_CASE("methods: every row plans the placement its row says, through plan_schedule") {
  const Problem pr = four_stages();
  for (const Method& m : methods()) {
    if (m.runs == Runs::kSearchIlp || m.runs == Runs::kAuto) continue;  // the ILP: refine_ilp_test; auto: below
    INFO(m.name);
    Problem given = pr;
    if (m.placing == Placing::kInterleaved) given = split_into_chunks(pr, 2);
    std::vector<Diag> diags;
    auto planned = plan_schedule(given, m.name, &diags);
    INFO(format_diags(diags));
    REQUIRE(planned);
    CHECK(validate(planned->schedule, planned->problem).empty());
    const Schedule& s = planned->schedule;
    switch (m.placing) {
      case Placing::kOneChunk:
      case Placing::kAsGiven:  // one chunk given, one planned
        CHECK(s.chunks == 1);
        break;
      case Placing::kV:
        CHECK(s.placement == v_shape_placement(pr.p));
        break;
      case Placing::kInterleaved:
        CHECK(s.placement == interleaved_placement(pr.p, 2));
        break;
      case Placing::kEvery:
        break;
    }
  }
}

TEST_CASE("methods: a fixed-placement row refuses a problem of other chunks, naming itself") {
  const Problem two = split_into_chunks(four_stages(), 2);
  Problem three = split_into_chunks(four_stages(), 3);
  for (const Method& m : methods()) {
    if (m.runs != Runs::kGenerator) continue;
    INFO(m.name);
    std::vector<Diag> diags;
    const Problem& wrong = m.placing == Placing::kOneChunk ? two : three;
    if (m.placing == Placing::kInterleaved) {
      Problem one = four_stages();
      CHECK(!plan_schedule(one, m.name, &diags));
      CHECK(format_diags(diags).find(std::string(m.name) + " interleaves chunks") != std::string::npos);
      continue;
    }
    CHECK(!plan_schedule(wrong, m.name, &diags));
    CHECK(format_diags(diags).find("method " + std::string(m.name) + " runs") != std::string::npos);
  }
}

TEST_CASE("methods: auto tries every row but the ILPs (without a time limit) and itself") {
  std::vector<Diag> diags;
  PlanOptions options;
  options.lowerings = {{Optimizer::kPostValidation, PostValidationAt::kFirstBackward}};
  auto best = plan_schedule(four_stages(), "auto", &diags, options);
  INFO(format_diags(diags));
  REQUIRE(best);
  std::string notes;
  for (const auto& n : best->notes) notes += n + "\n";
  for (const Method& m : methods()) {
    INFO(m.name);
    if (m.runs == Runs::kAuto) continue;
    if (m.runs == Runs::kSearchIlp) {
      // "auto: ilp, ilp-v: left out: ...": the names between "auto: " and ": left out".
      bool left_out = false;
      for (const auto& n : best->notes) {
        const size_t end = n.find(": left out");
        if (n.rfind("auto: ", 0) != 0 || end == std::string::npos) continue;
        std::istringstream names(n.substr(6, end - 6));
        for (std::string name; std::getline(names, name, ',');)
          left_out |= name == m.name || name == " " + std::string(m.name);
      }
      CHECK(left_out);
      continue;
    }
    CHECK(notes.find("auto: " + std::string(m.name) + " under ") != std::string::npos);
  }
}

TEST_CASE("methods: zbplan methods prints a row per method and the paper's names, and --method takes them in any case") {
  std::ostringstream out, err;
  const char* argv[] = {"zbplan", "methods"};
  REQUIRE(run_zbplan(2, argv, out, err) == 0);
  std::istringstream lines(out.str());
  std::string line;
  std::getline(lines, line);
  CHECK(line.rfind("method ", 0) == 0);
  for (const Method& m : methods()) {
    REQUIRE(std::getline(lines, line));
    CHECK(line.rfind(std::string(m.name) + " ", 0) == 0);
    CHECK(line.find(m.what) != std::string::npos);
  }
  for (const MethodAlias& a : method_aliases()) {
    REQUIRE(std::getline(lines, line));
    CHECK(line.rfind(std::string(a.name) + ": " + a.method + " at --mem-limit " + a.mem_limit, 0) == 0);
  }
  // Any case, every row: a bad name would exit 2 before the missing -o is reported.
  for (const Method& m : methods()) {
    std::string upper = m.name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::ostringstream o, e;
    const char* plan[] = {"zbplan", "plan", "--method", upper.c_str(), "-p", "2", "-m", "4", "--tf", "1",
                          "--tb", "1", "--tw", "1"};
    run_zbplan(14, plan, o, e);
    INFO(e.str());
    CHECK(e.str().find("unknown method") == std::string::npos);
    CHECK(e.str().find("-o") != std::string::npos);
  }
}

}  // namespace
}  // namespace zbpp
