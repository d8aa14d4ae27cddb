// What zbplan prints and writes: a schedule's figures, located errors (exit 1), output files.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "core/diag.h"
#include "core/simulate.h"
#include "core/simulate_iterations.h"

namespace zbpp::zbplan {

constexpr int kExitInvalid = kExitFailed;

/// The figures `simulate` prints and `plan` summarises: one iteration of compute ops. Every bubble
/// rate printed names the figure it is of: (figure - busy) / figure.
void print_figures(std::ostream& out, const Schedule& s, const Problem& pr, const Timeline& t);

/// The lowered schedule's iterations back to back (the optimizer's ops included), printed under
/// the single-iteration figures.
void print_iterations(std::ostream& out, const Schedule& s, const IterationTimeline& it);

/// What the plan minimised and its figure: the period or the wall with the optimizer, or for a
/// compute-only file the span or the makespan that stood for it; then the makespan against the
/// ramp bound (what no schedule of this placement goes below).
void print_objective(std::ostream& out, std::optional<Objective> objective, const Schedule& s, const Problem& pr,
                     const Timeline& t, const IterationTimeline* it);

/// Every output goes through write_file_replacing: a failed write leaves the old file as it was.
bool write_file(const std::string& path, const std::string& text, std::ostream& err);

/// Prints the diagnostics, at most 50: a badly broken file should not bury the first error.
/// Returns kExitInvalid.
int fail(std::ostream& err, const std::vector<Diag>& diags);

}  // namespace zbpp::zbplan
