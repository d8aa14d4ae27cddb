// Chrome/Perfetto trace writer (see trace.h).
#include "core/trace.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/json_text.h"

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

std::optional<MeasuredRun> measured_from_trace_text(const std::string& text, const std::string& file, int p,
                                                    std::vector<Diag>* diags) {
  auto j = parse_json_text(text, file, diags);
  if (!j) return std::nullopt;
  if (!j->is_object() || !j->contains("traceEvents") || !(*j)["traceEvents"].is_array()) {
    diags->push_back({file, "", -1, -1, "", "not a trace: expected {\"traceEvents\": [...]} as zbrun --trace writes"});
    return std::nullopt;
  }
  size_t before = diags->size();
  auto error = [&](const std::string& pointer, const std::string& msg) {
    add_diag(diags, {file, pointer, -1, -1, "", msg});
  };
  // 1e15 us is 30 years: anything beyond is not a measurement (and would not draw).
  constexpr double kMaxMicroseconds = 1e15;
  struct Event {
    long long index;
    std::pair<double, double> span;
    std::string name;
    bool operator<(const Event& o) const { return index < o.index; }
  };
  std::vector<std::vector<Event>> indexed(p);
  const auto& events = (*j)["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    const std::string at = "/traceEvents/" + std::to_string(i);
    if (!e.is_object()) continue;  // not an event of ours
    if (e.contains("ph") && !e["ph"].is_string()) {
      error(at + "/ph", "expected an event phase string like \"X\", got " + json_excerpt(e["ph"]));
      continue;
    }
    if (e.contains("pid") && !e["pid"].is_number_integer()) {
      error(at + "/pid", "expected an integer process id, got " + json_excerpt(e["pid"]));
      continue;
    }
    if (e.value("ph", "") != "X" || !e.contains("pid") || e["pid"] != 1) continue;  // not a measured op
    auto tid = e.contains("tid") ? json_integer(e["tid"], 0, p - 1) : std::nullopt;
    if (!tid) {
      error(at + (e.contains("tid") ? "/tid" : ""), "measured event for stage " +
                                                       (e.contains("tid") ? json_excerpt(e["tid"]) : "(no tid)") +
                                                       " does not fit this schedule (p = " + std::to_string(p) + ")");
      continue;
    }
    bool fine = true;
    auto micros = [&](const char* key) {
      const bool fits = e.contains(key) && e[key].is_number() && e[key].get<double>() >= 0 &&
                        e[key].get<double>() <= kMaxMicroseconds;
      if (fits) return e[key].get<double>();
      error(at + (e.contains(key) ? std::string("/") + key : ""),
            std::string(e.contains(key) ? "expected" : "missing '" + std::string(key) + "':") +
                " a number of microseconds 0..1e15" + (e.contains(key) ? ", got " + json_excerpt(e[key]) : ""));
      fine = false;
      return 0.0;
    };
    double start = micros("ts") / 1000.0, dur = micros("dur") / 1000.0;
    long long index = 0;
    if (e.contains("args")) {
      const auto& args = e["args"];
      if (!args.is_object()) {
        error(at + "/args", "expected an object, got " + json_excerpt(args));
        fine = false;
      } else if (args.contains("op_index")) {
        auto k = json_integer(args["op_index"], 0, 1'000'000'000LL);
        if (!k) {
          error(at + "/args/op_index", "expected an op index (an integer 0..1000000000), got " +
                                           json_excerpt(args["op_index"]));
          fine = false;
        }
        index = k.value_or(0);
      }
    }
    if (fine) indexed[*tid].push_back({index, {start, start + dur}, e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : ""});
  }
  if (diags->size() != before) return std::nullopt;
  MeasuredRun run;
  run.ops.resize(p);
  run.names.resize(p);
  for (int st = 0; st < p; ++st) {
    std::stable_sort(indexed[st].begin(), indexed[st].end());
    for (const Event& e : indexed[st]) run.ops[st].push_back(e.span), run.names[st].push_back(e.name);
  }
  return run;
}

std::string measured_mismatch(const MeasuredRun& run, const Schedule& compute) {
  for (int st = 0; st < compute.p && st < static_cast<int>(run.ops.size()); ++st) {
    const auto& ops = compute.stages[static_cast<size_t>(st)];
    const auto& names = run.names[static_cast<size_t>(st)];
    if (names.size() > ops.size())
      return "stage " + std::to_string(st) + " has " + std::to_string(names.size()) + " measured ops, but this schedule runs " +
             std::to_string(ops.size()) + " compute ops there";
    for (size_t k = 0; k < names.size(); ++k)
      if (!names[k].empty() && names[k] != op_short(ops[k]))
        return "stage " + std::to_string(st) + "'s op " + std::to_string(k) + " is " + shown_text(names[k]) +
               " in the trace but " + op_short(ops[k]) + " in this schedule";
  }
  return "";
}

}  // namespace zbpp
