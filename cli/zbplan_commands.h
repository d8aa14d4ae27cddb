// zbplan's subcommands, each a function of its parsed flags: plan and import make a schedule
// file (zbplan_plan.cpp); simulate, validate, show and export read one (zbplan_inspect.cpp).
// Each returns the exit code.
#pragma once

#include <ostream>
#include <string>

#include "cli/zbplan_flags.h"
#include "planner/pipeline.h"

namespace zbpp::zbplan {

// A picture's kind is its name's extension (show, and its -o check).
inline bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

int cmd_plan(const std::string& method, const ProblemFlags& flags, const IterationFlags& iteration_flags,
             const std::string& output, bool compute_only, const PlanOptions& options, std::ostream& out,
             std::ostream& err);
int cmd_methods(std::ostream& out);
int cmd_import(const std::string& path, const ProblemFlags& flags, const IterationFlags& iteration_flags,
               const std::string& output, bool compute_only, bool per_chunk, std::ostream& out, std::ostream& err);
int cmd_simulate(const std::string& path, const std::string& trace_path, const IterationFlags& iteration_flags,
                 std::ostream& out, std::ostream& err);
int cmd_validate(const std::string& path, std::ostream& out, std::ostream& err);
int cmd_show(const std::string& path, const std::string& output, int width, const std::string& measured_path,
             const IterationFlags& iteration_flags, bool show_iterations, std::ostream& out, std::ostream& err);
int cmd_export(const std::string& path, const std::string& format, const std::string& output, std::ostream& out,
               std::ostream& err);

}  // namespace zbpp::zbplan
