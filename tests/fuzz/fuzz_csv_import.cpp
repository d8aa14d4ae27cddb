// libFuzzer harness: PyTorch pipelining CSV -> import_pytorch_csv -> the problem `zbplan import`
// builds (the CSV's shape, placeholder times) -> validate_but_message_order. A CSV the importer
// accepts must export back to the same schedule; one that also validates must simulate, and once
// its communication cells pass check_message_cells and its messages check_message_order it must
// lower (both optimizers) to a schedule that validates and simulates for several iterations, as
// `zbplan import` does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/problem.h"
#include "core/simulate.h"
#include "core/simulate_iterations.h"
#include "core/validate.h"
#include "io/export_csv.h"
#include "io/import_csv.h"
#include "planner/pipeline.h"
#include "tests/fuzz/fuzz_util.h"

using namespace zbpp;

namespace {

// Lowered with `optimizer`, the schedule must validate and run several iterations back to back.
void require_lowers(const Schedule& imported, const Problem& problem, Optimizer optimizer) {
  std::vector<Diag> diags;
  PlanResult planned{imported, problem, {}, {}, std::nullopt};
  fuzz::require(lower_planned(&planned, &diags, {optimizer, PostValidationAt::kFirstBackward}),
                "an imported schedule that validates does not lower", diags);
  fuzz::require(simulate_timeline(planned.schedule, planned.problem, &diags).has_value(),
                "a lowered imported schedule does not simulate", diags);
  fuzz::require(simulate_iterations(planned.schedule, planned.problem, {}, &diags).has_value(),
                "a lowered imported schedule deadlocks over several iterations", diags);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<Diag> diags;
  auto read = import_pytorch_csv(text, "fuzz.csv", &diags);
  if (!read) {
    fuzz::require(!diags.empty(), "CSV rejected without a diagnostic");
    (void)format_diags(diags);
    return 0;
  }
  const Schedule* imported = &read->schedule;
  auto again = import_pytorch_csv(export_pytorch_csv(*imported), "exported.csv", &diags);
  fuzz::require(again.has_value(), "an imported schedule exports to a CSV that does not import", diags);
  fuzz::require(again->schedule.stages == imported->stages && again->schedule.placement == imported->placement,
                "an imported schedule does not export and import back the same");
  ProblemInput input;  // what zbplan import builds when no times are given
  input.p = imported->p;
  input.m = imported->m;
  input.chunks = imported->chunks;
  input.placement = imported->placement;
  auto problem = build_problem(input, "fuzz.csv", &diags);
  if (!problem) {
    fuzz::require(!diags.empty(), "the CSV's shape was rejected without a diagnostic");
    (void)format_diags(diags);
    return 0;
  }
  diags = validate_but_message_order(*imported, *problem, "fuzz.csv");  // as zbplan import, which names cells
  (void)format_diags(diags);
  if (!diags.empty()) return 0;
  fuzz::require(simulate_timeline(*imported, *problem, &diags).has_value(), "a validated import does not simulate",
                diags);
  // zbplan import stops at these too.
  if (!check_message_cells(*read, "fuzz.csv", &diags) || !check_message_order(*read, "fuzz.csv", &diags)) {
    fuzz::require(!diags.empty(), "communication cells or message order rejected without a diagnostic");
    (void)format_diags(diags);
    return 0;
  }
  require_lowers(*imported, *problem, Optimizer::kSync);
  require_lowers(*imported, *problem, Optimizer::kPostValidation);
  return 0;
}
