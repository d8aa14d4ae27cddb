// libFuzzer harness: problem JSON -> ProblemInput -> Problem; small problems are then planned with
// every method except ilp/auto (time-bounded by CBC, not by the input), lowered, simulated and
// written, and the file must read back to the same schedule.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/problem.h"
#include "core/schedule_json.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "planner/pipeline.h"
#include "tests/fuzz/fuzz_util.h"

using namespace zbpp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<Diag> diags;
  auto j = parse_json_text(text, "fuzz.problem.json", &diags);
  if (!j) {
    fuzz::require(!diags.empty(), "JSON rejected without a diagnostic");
    return 0;
  }
  ProblemInput input;
  if (!problem_input_from_json(*j, "fuzz.problem.json", "", &input, &diags)) {
    fuzz::require(!diags.empty(), "problem rejected without a diagnostic");
    (void)format_diags(diags);
    return 0;
  }
  auto problem = build_problem(input, "fuzz.problem.json", &diags);
  if (!problem) {
    fuzz::require(!diags.empty(), "build_problem failed without a diagnostic");
    (void)format_diags(diags);
    return 0;
  }
  (void)problem_to_json(*problem).dump();
  // Planning cost grows with the op count: keep executions fast (and single-threaded).
  const long long p = problem->p, m = problem->m;
  if (p * m * problem->chunks > 1000) return 0;
  static const char* kMethods[] = {"1f1b", "1f1b-i", "zb-h1", "zb-h2", "heuristic", "zb-v",
                                   "dualpipe-v", "v-min", "v-half", "v-zb", "heuristic-v"};
  const std::string method = kMethods[size % std::size(kMethods)];
  // The searches on two chunks run their greedy over every budget up to 4p and 36 knobs, each
  // placing 6pm ops over p stages: p^3 m. At p=8, m=48 that took 35 s here under the fuzzer's
  // instrumentation (0.8 s in a release build), beyond its 10 s per input.
  const bool chunk_search = method == "heuristic-v" || (method == "heuristic" && problem->chunks > 1);
  if (chunk_search && p * p * p * m > 1024) return 0;
  auto planned = plan_schedule(*problem, method, &diags);
  if (!planned) {
    fuzz::require(!diags.empty(), "plan_schedule failed without a diagnostic");
    return 0;
  }
  // A planned schedule already validated: lowering and simulating it must succeed.
  fuzz::require(lower_planned(&*planned, &diags), "the lowered schedule does not validate", diags);
  auto timeline = simulate_timeline(planned->schedule, planned->problem, &diags);
  fuzz::require(timeline.has_value(), "a validated schedule does not simulate", diags);
  const std::string written = schedule_to_json_text(planned->schedule, planned->problem, *timeline);
  auto reread = parse_json_text(written, "written.json", &diags);
  fuzz::require(reread.has_value(), "zbplan wrote JSON it cannot parse", diags);
  auto file = schedule_from_json(*reread, "written.json", &diags);
  fuzz::require(file.has_value(), "zbplan wrote a schedule file it cannot read", diags);
  fuzz::require(file->schedule.stages == planned->schedule.stages, "the schedule file does not read back the same");
  diags = validate(file->schedule, file->problem, "written.json");
  fuzz::require(diags.empty(), "a written schedule does not validate when read back", diags);
  return 0;
}
