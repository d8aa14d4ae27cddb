// The schedule file (schema/schedule.schema.json): reading with located errors, and writing in a
// diff-friendly layout (one op per line). This is the only reader, shared by zbplan and zbrun.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "planner/bounds.h"
#include "planner/diag.h"
#include "planner/ir.h"
#include "planner/problem.h"
#include "planner/simulate.h"
#include "planner/simulate_iterations.h"

namespace zbpp {

/// A loaded schedule file: the schedule and the problem it was planned for.
struct ScheduleFile {
  Schedule schedule;
  Problem problem;
  std::string objective;  ///< what the planner minimised, "period" or "wall"; empty when not recorded
};

/// Parses JSON text; a syntax error becomes `file:line:col: message` followed by the line and a caret.
std::optional<nlohmann::json> parse_json_text(const std::string& text, const std::string& file, std::vector<Diag>* diags);
/// Reads a whole file as text; false with a diagnostic when it cannot be read.
bool read_text_file(const std::string& path, std::string* text, std::vector<Diag>* diags);

/// Reads a schedule from parsed JSON. Every wrong field is reported with its JSON pointer.
std::optional<ScheduleFile> schedule_from_json(const nlohmann::json& j, const std::string& file, std::vector<Diag>* diags);
/// Reads and parses a schedule file from disk; `text`, when given, receives the file's text.
std::optional<ScheduleFile> load_schedule_file(const std::string& path, std::vector<Diag>* diags,
                                               std::string* text = nullptr);
/// Reads a problem file from disk (schema/problem.schema.json) into a ProblemInput.
bool load_problem_file(const std::string& path, ProblemInput* out, std::vector<Diag>* diags);

/// The file's text: header fields, the problem, the simulated figures (and, for a lowered
/// schedule, those of several iterations back to back) and one op per line.
/// `objective` and `wall_bound` (when >= 0) record what the planner minimised and the ramp bound;
/// `solver`, the plan's certified bound on its cost (span or wall clock) and its gap ("solver").
std::string schedule_to_json_text(const Schedule& schedule, const Problem& problem, const Timeline& timeline,
                                  const IterationTimeline* iterations = nullptr, const std::string& objective = "",
                                  Ticks wall_bound = -1, const SolverReport* solver = nullptr);

}  // namespace zbpp
