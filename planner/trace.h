// Chrome/Perfetto trace of a predicted timeline: one row (thread) per stage, one slice per op.
// Open it at ui.perfetto.dev or chrome://tracing. Times are written in microseconds assuming
// the problem's time unit is milliseconds (1 tick = 1 ns).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "planner/ir.h"
#include "planner/simulate.h"

namespace zbpp {

/// Trace events for `timeline` under process `pid` named `process_name` (e.g. "planned").
nlohmann::json timeline_trace_events(const Schedule& schedule, const Timeline& timeline, int pid,
                                     const std::string& process_name);
/// A whole trace document holding one timeline.
nlohmann::json timeline_trace(const Schedule& schedule, const Timeline& timeline);

}  // namespace zbpp
