// The schedule file (schema/schedule.schema.json): reading with located errors (schedule_json.cpp),
// the checks every reader makes before trusting one (schedule_check.cpp), and writing in a
// diff-friendly layout, one op per line (schedule_write.cpp). This is the only reader, shared by
// zbplan and zbrun.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/bounds.h"
#include "core/diag.h"
#include "core/ir.h"
#include "core/json_text.h"  // every schedule reader reads text first
#include "core/partition.h"
#include "core/problem.h"
#include "core/simulate.h"
#include "core/simulate_iterations.h"

namespace zbpp {

/// The figures a file records about itself, as written (type-checked against the schema on load).
/// None is trusted: check_recorded_figures recomputes each one present.
struct RecordedFigures {
  std::optional<double> makespan, span, span_bubble_rate, wall_lower_bound;
  std::optional<std::vector<double>> peak_memory;
  struct Iterations {
    std::optional<int> k;
    std::optional<double> period, period_bubble_rate, wall, wall_bubble_rate, state_latency, allreduce_latency;
  };
  std::optional<Iterations> iterations;
  struct Solver {
    Cost measure = Cost::kSpan;  ///< "cost": what value and best_bound measure (simulate.h)
    SolveStatus status = SolveStatus::kNotRun;
    std::optional<BoundSource> bound_source;
    double value = 0, best_bound = 0, gap = 0;  ///< value: "objective", the schedule's cost
    std::optional<double> bubble_rate_bound;
  };
  std::optional<Solver> solver;
};

/// What a schedule file says it is ("format", "version"). Version 2 (issue 20): one name per
/// quantity. bubble_rate became span_bubble_rate; the solver's cost names what it measures (span,
/// makespan, period or wall), where version 1's "period" meant the span.
inline constexpr const char* kFormat = "zbpp-schedule";
inline constexpr int kVersion = 2;

/// A loaded schedule file: the schedule and the problem it was planned for.
struct ScheduleFile {
  Schedule schedule;
  Problem problem;
  std::optional<Objective> objective;  ///< what the planner minimised; none when not recorded
  RecordedFigures recorded;
  std::optional<PartitionRecord> partition;  ///< the layers per stage, when planned from layer costs
};

/// Reads a schedule from parsed JSON. Every wrong field is reported with its JSON pointer.
std::optional<ScheduleFile> schedule_from_json(const nlohmann::json& j, const std::string& file, std::vector<Diag>* diags);
/// Recomputes every figure `file.recorded` holds from the schedule (`timeline` is its simulation)
/// and reports each that disagrees at its JSON pointer: "/span: recorded 1310.405, recomputed 1290.1".
/// Times and memory must round to the same 1e-6 quantum the simulator counts in (the writer prints
/// them exactly); rates and the solver's gap must agree to 1e-9.
std::vector<Diag> check_recorded_figures(const ScheduleFile& file, const Timeline& timeline, const std::string& path);
/// What every reader checks before trusting a loaded file (zbplan validate/simulate/show, zbrun):
/// the schedule is valid, it replays, and each figure it records equals the recomputed one.
/// Returns the planned timeline, or nothing with the errors in *diags.
std::optional<Timeline> check_schedule_file(const ScheduleFile& file, const std::string& path, std::vector<Diag>* diags);
/// A schedule file's text read as load_schedule_file reads it: the ops streamed from the parser
/// (json_text.h's ElementSink) rather than held as a DOM. The same schedule and the same
/// diagnostics, in the same order, as parse_json_text + schedule_from_json (fuzz_schedule checks).
std::optional<ScheduleFile> schedule_from_text(const std::string& text, const std::string& file, std::vector<Diag>* diags);
/// Reads and parses a schedule file from disk; `text`, when given, receives the file's text.
std::optional<ScheduleFile> load_schedule_file(const std::string& path, std::vector<Diag>* diags,
                                               std::string* text = nullptr);

/// The file's text: header fields, the problem, the simulated figures (and, for a lowered
/// schedule, those of several iterations back to back) and one op per line.
/// `objective` and `wall_bound` (when >= 0) record what the planner minimised and the ramp bound;
/// `solver`, the plan's certified bound on its cost and its gap ("solver"); `partition`, the layers
/// each stage runs when planned from layer costs (its bound is recomputed, its gap taken against the
/// solver's cost, or the span without one).
std::string schedule_to_json_text(const Schedule& schedule, const Problem& problem, const Timeline& timeline,
                                  const IterationTimeline* iterations = nullptr, const std::string& objective = "",
                                  Ticks wall_bound = -1, const SolverReport* solver = nullptr,
                                  const PartitionRecord* partition = nullptr);
/// The same text handed to `sink` in pieces of up to 64 KB, never held whole (zbplan writes it to
/// the file as it goes); stops and returns false as soon as the sink does.
bool write_schedule_json(const Schedule& schedule, const Problem& problem, const Timeline& timeline,
                         const std::function<bool(std::string_view)>& sink, const IterationTimeline* iterations = nullptr,
                         const std::string& objective = "", Ticks wall_bound = -1, const SolverReport* solver = nullptr,
                         const PartitionRecord* partition = nullptr);

}  // namespace zbpp
