// Chrome/Perfetto traces: a predicted timeline written as one row (thread) per stage, one slice per
// op, and the measured spans zbrun writes read back. Open one at ui.perfetto.dev or chrome://tracing.
// Times are written in microseconds assuming the problem's time unit is milliseconds (1 tick = 1 ns).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/diag.h"
#include "core/ir.h"
#include "core/simulate.h"

namespace zbpp {

/// A measured run to draw under the plan, like the paper's Figure 6: per stage, the measured
/// start and end (in the problem's time unit) of each compute op, in the stage's compute order.
struct MeasuredRun {
  std::vector<std::vector<std::pair<double, double>>> ops;
  std::vector<std::vector<std::string>> names;  ///< per stage, as ops: each event's name ("F3"), "" where none
};

/// Whether a measured run is of `compute` (a schedule's compute ops, as zbrun --trace writes them):
/// no more ops on any stage, each named as the schedule's op at its place (a trace cut short, or
/// events without names, are drawn as far as they go). "" when it is, else where it is not.
std::string measured_mismatch(const MeasuredRun& run, const Schedule& compute);

/// Trace events for `timeline` under process `pid` named `process_name` (e.g. "planned").
nlohmann::json timeline_trace_events(const Schedule& schedule, const Timeline& timeline, int pid,
                                     const std::string& process_name);
/// A whole trace document holding one timeline.
nlohmann::json timeline_trace(const Schedule& schedule, const Timeline& timeline);

/// Reads the measured spans of a zbrun --trace file (process 1, "measured": one "X" event per op,
/// tid = stage, ts and dur in microseconds) for a schedule of `p` stages: per stage in compute
/// order (args.op_index), in milliseconds. Every field of the wrong type or out of range is a
/// located error (file and JSON pointer); events of other processes are skipped.
std::optional<MeasuredRun> measured_from_trace_text(const std::string& text, const std::string& file, int p,
                                                    std::vector<Diag>* diags);

}  // namespace zbpp
