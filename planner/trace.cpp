// Chrome/Perfetto trace writer (see trace.h).
#include "planner/trace.h"

#include <nlohmann/json.hpp>

namespace zbpp {

namespace {
double ticks_to_us(Ticks t) { return static_cast<double>(t) / 1000.0; }
}  // namespace

nlohmann::json timeline_trace_events(const Schedule& s, const Timeline& t, int pid, const std::string& process_name) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", process_name}}}});
  for (int st = 0; st < s.p; ++st) {
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", st},
                      {"args", {{"name", "stage " + std::to_string(st)}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", st}, {"args", {{"sort_index", st}}}});
    for (size_t i = 0; i < s.stages[st].size(); ++i) {
      const Op& op = s.stages[st][i];
      const OpTiming& when = t.ops[st][i];
      events.push_back({{"ph", "X"},
                        {"name", op_short(op)},
                        {"cat", op_type_name(op.type)},
                        {"pid", pid},
                        {"tid", st},
                        {"ts", ticks_to_us(when.start)},
                        {"dur", ticks_to_us(when.end - when.start)},
                        {"args", {{"mb", op.mb}, {"chunk", op.chunk}, {"op_index", i}}}});
    }
  }
  return events;
}

nlohmann::json timeline_trace(const Schedule& s, const Timeline& t) {
  return {{"traceEvents", timeline_trace_events(s, t, 0, "planned (" + s.method + ")")}, {"displayTimeUnit", "ms"}};
}

}  // namespace zbpp
