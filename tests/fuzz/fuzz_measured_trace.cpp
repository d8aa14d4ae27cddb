// libFuzzer harness: the trace reader of `zbplan show --measured` (a zbrun --trace file), then the
// SVG drawn with what it read. Every rejection must say why, at a place; nothing may throw.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/simulate.h"
#include "core/trace.h"
#include "io/render_svg.h"
#include "planner/gen_baseline.h"
#include "tests/fuzz/fuzz_util.h"

using namespace zbpp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The plan the trace is drawn under: 1F1B on 4 stages, made once.
  static const auto fixture = [] {
    ProblemInput in;
    in.p = 4;
    in.m = 4;
    std::vector<Diag> diags;
    Problem pr = *build_problem(in, "", &diags);
    Schedule s = generate_1f1b(pr);
    Timeline t = *simulate_timeline(s, pr, &diags);
    return std::make_tuple(pr, s, t);
  }();
  const auto& [problem, schedule, timeline] = fixture;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<Diag> diags;
  auto run = measured_from_trace_text(text, "trace.json", problem.p, &diags);
  if (!run) {
    fuzz::require(!diags.empty(), "trace rejected without a diagnostic");
    for (const Diag& d : diags)
      fuzz::require(d.more > 0 || d.file.rfind("trace.json", 0) == 0, "a diagnostic does not name the file", diags);
    (void)format_diags(diags);
    return 0;
  }
  fuzz::require(static_cast<int>(run->ops.size()) == problem.p, "a trace read for the wrong number of stages");
  RenderOptions options;
  options.measured = &*run;
  const std::string svg = render_svg(schedule, problem, timeline, options);
  fuzz::require(svg.find("inf\"") == std::string::npos && svg.find("nan\"") == std::string::npos,
                "the drawing holds a coordinate that is not a number");
  return 0;
}
