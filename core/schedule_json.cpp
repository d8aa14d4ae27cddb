// Schedule file reading (see schedule_json.h): located errors for every wrong field.
#include "core/schedule_json.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/deps.h"  // is_post_validation_op
#include "core/json_text.h"
#include "core/validate.h"

namespace zbpp {

namespace {

struct FileReader {
  const std::string& file;
  std::vector<Diag>* diags;
  bool ok = true;

  void error(const std::string& pointer, const std::string& msg) {
    add_diag(diags, {file, pointer, -1, -1, "", msg});
    ok = false;
  }

  bool read_int(const nlohmann::json& obj, const char* key, const std::string& pointer, int* out, bool required) {
    if (!obj.contains(key)) {
      if (required) error(pointer, std::string("op is missing '") + key + "'");
      return !required;
    }
    const auto& v = obj[key];
    auto x = json_integer(v, -1, 1'000'000'000LL);
    if (!x) {
      error(pointer + "/" + key, "expected a non-negative integer, got " + json_excerpt(v));
      return false;
    }
    *out = static_cast<int>(*x);
    return true;
  }

  // obj[key] when it is a number in [lo, hi]; nothing when absent, and an error when of another type.
  std::optional<double> number(const nlohmann::json& obj, const char* key, const std::string& pointer,
                               double lo = -std::numeric_limits<double>::infinity(),
                               double hi = std::numeric_limits<double>::infinity()) {
    if (!obj.contains(key)) return std::nullopt;
    const auto& v = obj[key];
    if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi) {
      auto text = [](double x) {
        std::ostringstream o;
        o << x;
        return o.str();
      };
      std::string range = hi < std::numeric_limits<double>::infinity() ? " in " + text(lo) + ".." + text(hi)
                          : lo == 0                                      ? " >= 0"
                                                                         : "";
      error(pointer + "/" + key, "expected a number" + range + ", got " + json_excerpt(v));
      return std::nullopt;
    }
    return v.get<double>();
  }

  // obj[key] when it is one of `allowed`; nothing when absent, and an error when anything else.
  std::optional<std::string> one_of(const nlohmann::json& obj, const char* key, const std::string& pointer,
                                    const std::vector<std::string>& allowed) {
    if (!obj.contains(key)) return std::nullopt;
    const auto& v = obj[key];
    if (v.is_string() && std::find(allowed.begin(), allowed.end(), v.get<std::string>()) != allowed.end())
      return v.get<std::string>();
    std::string list;
    for (size_t i = 0; i < allowed.size(); ++i)
      list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + nlohmann::json(allowed[i]).dump();
    error(pointer + "/" + key, "expected " + list + ", got " + json_excerpt(v));
    return std::nullopt;
  }

  // An object's fields against the names it may have.
  bool only_fields(const nlohmann::json& obj, const std::string& pointer, const std::set<std::string>& fields) {
    bool fine = true;
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (!fields.count(it.key())) {
        error(pointer + "/" + it.key(), "unknown field '" + it.key() + "'");
        fine = false;
      }
    return fine;
  }

  // The figures the file records (schema/schedule.schema.json), type-checked; compared later.
  RecordedFigures figures(const nlohmann::json& j) {
    RecordedFigures f;
    f.makespan = number(j, "makespan", "", 0);
    f.span = number(j, "span", "", 0);
    f.span_bubble_rate = number(j, "span_bubble_rate", "");
    f.wall_lower_bound = number(j, "wall_lower_bound", "", 0);
    if (j.contains("peak_memory")) {
      const auto& v = j["peak_memory"];
      if (!v.is_array()) error("/peak_memory", "expected a list of numbers, one per stage, got " + json_excerpt(v));
      else f.peak_memory.emplace();
      for (size_t st = 0; v.is_array() && st < v.size(); ++st) {
        if (!v[st].is_number())
          error("/peak_memory/" + std::to_string(st), "expected a number, got " + json_excerpt(v[st]));
        else f.peak_memory->push_back(v[st].get<double>());
      }
    }
    if (j.contains("iterations")) {
      const auto& v = j["iterations"];
      if (!v.is_object()) {
        error("/iterations", "expected an object {k, period, ...}, got " + json_excerpt(v));
      } else if (only_fields(v, "/iterations", {"k", "period", "period_bubble_rate", "wall", "wall_bubble_rate",
                                                 "state_latency", "allreduce_latency"})) {
        RecordedFigures::Iterations it;
        if (v.contains("k")) {
          // Bounded as --iterations is: validate simulates k iterations to check the record.
          if (auto k = json_integer(v["k"], 2, 100)) it.k = static_cast<int>(*k);
          else error("/iterations/k", "expected an integer 2..100, got " + json_excerpt(v["k"]));
        }
        it.period = number(v, "period", "/iterations", 0);
        it.period_bubble_rate = number(v, "period_bubble_rate", "/iterations");
        it.wall = number(v, "wall", "/iterations", 0);
        it.wall_bubble_rate = number(v, "wall_bubble_rate", "/iterations");
        it.state_latency = number(v, "state_latency", "/iterations", 0, 1e9);
        it.allreduce_latency = number(v, "allreduce_latency", "/iterations", 0, 1e9);
        f.iterations = it;
      }
    }
    if (j.contains("solver")) {
      const auto& v = j["solver"];
      if (!v.is_object()) {
        error("/solver", "expected an object {status, objective, best_bound, ...}, got " + json_excerpt(v));
        return f;
      }
      bool fine = only_fields(v, "/solver", {"cost", "status", "objective", "best_bound", "bound_source", "gap",
                                             "bubble_rate_bound", "seconds", "nodes"});
      for (const char* required : {"cost", "status", "objective", "best_bound", "gap", "seconds", "nodes"})
        if (!v.contains(required)) {
          error("/solver", std::string("missing required field '") + required + "'");
          fine = false;
        }
      if (!fine) return f;
      RecordedFigures::Solver sv;
      auto cost = one_of(v, "cost", "/solver", {"span", "makespan", "period", "wall"});
      auto status = one_of(v, "status", "/solver", solve_status_names());
      auto source = one_of(v, "bound_source", "/solver", bound_source_names());
      auto objective = number(v, "objective", "/solver", 0);
      auto best_bound = number(v, "best_bound", "/solver", 0);
      auto gap = number(v, "gap", "/solver", 0, 1);
      sv.bubble_rate_bound = number(v, "bubble_rate_bound", "/solver");
      number(v, "seconds", "/solver", 0);
      if (!json_integer(v["nodes"], 0, std::numeric_limits<long long>::max()))
        error("/solver/nodes", "expected a non-negative integer, got " + json_excerpt(v["nodes"]));
      if (!cost || !status || !objective || !best_bound || !gap) return f;
      for (Cost c : {Cost::kSpan, Cost::kMakespan, Cost::kPeriod, Cost::kWall})
        if (*cost == cost_name(c)) sv.measure = c;
      sv.status = *parse_solve_status(*status);  // one_of took one of their names
      if (source) sv.bound_source = parse_bound_source(*source);
      sv.value = *objective;
      sv.best_bound = *best_bound;
      sv.gap = *gap;
      f.solver = sv;
    }
    return f;
  }

  std::optional<Op> op(const nlohmann::json& v, const std::string& pointer) {
    static const std::set<std::string> fields = {"type", "mb", "chunk", "peer", "slot"};
    if (!v.is_object()) {
      error(pointer, "expected an op object like {\"type\": \"F\", \"mb\": 0, \"chunk\": 0}, got " + json_excerpt(v));
      return std::nullopt;
    }
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!fields.count(it.key())) {
        error(pointer + "/" + it.key(), "unknown op field '" + it.key() + "'");
        return std::nullopt;
      }
    if (!v.contains("type") || !v["type"].is_string()) {
      error(pointer + (v.contains("type") ? "/type" : ""), "op needs a string 'type' (F, B, W, BW, ...)");
      return std::nullopt;
    }
    auto type = parse_op_type(v["type"].get<std::string>());
    if (!type) {
      error(pointer + "/type", "unknown op type " + json_excerpt(v["type"]) +
                                   " (expected " + op_type_list() + ")");
      return std::nullopt;
    }
    Op op;
    op.type = *type;
    bool fine = read_int(v, "mb", pointer, &op.mb, !is_optimizer_op(*type));
    fine = read_int(v, "chunk", pointer, &op.chunk, false) && fine;
    fine = read_int(v, "peer", pointer, &op.peer, false) && fine;
    fine = read_int(v, "slot", pointer, &op.slot, false) && fine;
    if (!fine) return std::nullopt;
    return op;
  }
};

// The header of a schedule object: its type, its version, its fields known and present. False
// when the rest cannot be read.
bool check_header(const nlohmann::json& j, FileReader& r) {
  if (!j.is_object()) {
    r.error("/", "expected a schedule object, got " + std::string(j.type_name()));
    return false;
  }
  // A version 1 file is refused as a whole, with one message saying why and what to do.
  if (j.contains("version") && j["version"] == 1) {
    r.error("/version", "version 1 of the format is no longer read: its bubble_rate was the span's and its solver "
                        "cost \"period\" meant the span (version 2 names each figure by what it measures); plan "
                        "the schedule again with zbplan plan, or, for a file written by hand, set \"version\": 2 "
                        "and drop its recorded figures");
    return false;
  }
  static const std::set<std::string> known = {"$schema", "comment", "format", "version", "level", "method",
                                              "p", "m", "chunks", "placement", "problem", "makespan", "span",
                                              "span_bubble_rate", "peak_memory", "optimizer", "iterations",
                                              "objective", "wall_lower_bound", "stages", "solver", "partition"};
  // What became of version 1's name, for a file that does not say its version.
  const std::string regenerate = ": plan the schedule again with zbplan plan, or drop the figure (every figure is "
                                 "recomputed on read)";
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "bubble_rate")
      r.error("/bubble_rate", "unknown field 'bubble_rate': version 2 of the format calls it span_bubble_rate (the "
                              "period's and the wall clock's are in /iterations)" + regenerate);
    else if (!known.count(it.key()))
      r.error("/" + it.key(), "unknown field '" + it.key() + "'");
  }
  for (const char* required : {"p", "m", "placement", "problem", "stages"})
    if (!j.contains(required)) r.error("/", std::string("missing required field '") + required + "'");
  if (!r.ok) return false;
  if (j.contains("format") && j["format"] != kFormat)
    r.error("/format", "expected \"" + std::string(kFormat) + "\", got " + json_excerpt(j["format"]));
  if (j.contains("version") && j["version"] != kVersion)
    r.error("/version", "this zbplan reads version " + std::to_string(kVersion) + ", the file has " + json_excerpt(j["version"]));
  return true;
}

// "placement": for each stage, its chunks' virtual stages.
void read_placement(const nlohmann::json& j, FileReader& r, Schedule* s) {
  const auto& placement = j["placement"];
  if (!placement.is_array()) {
    r.error("/placement", "expected a list, for each stage, of its chunks' virtual stages, got " + json_excerpt(placement));
  } else {
    for (size_t st = 0; st < placement.size(); ++st) {
      std::string ptr = "/placement/" + std::to_string(st);
      std::vector<int> row;
      if (!placement[st].is_array()) {
        r.error(ptr, "expected a list of virtual stages, got " + json_excerpt(placement[st]));
        continue;
      }
      for (size_t c = 0; c < placement[st].size(); ++c) {
        const auto& v = placement[st][c];
        if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 1'000'000)
          r.error(ptr + "/" + std::to_string(c), "expected a virtual stage (an integer 0..1000000), got " + json_excerpt(v));
        else row.push_back(v.get<int>());
      }
      s->placement.push_back(row);
    }
  }
}

// A schedule's ops as the parser meets them (json_text.h's ElementSink): the file's bulk becomes
// Ops at once, not a DOM node each. Each stage keeps its ops' errors, which read_stages reports
// in the order it reports a DOM's.
struct StreamedOps {
  std::vector<std::vector<Op>> stages;
  std::vector<std::vector<Diag>> diags;

  ElementSink sink(const std::string& file) {
    return {"stages", 2, [this, &file](const nlohmann::json& element, const std::vector<size_t>& at) {
              const size_t st = at[0];
              if (stages.size() <= st) {
                stages.resize(st + 1);
                diags.resize(st + 1);
              }
              FileReader r{file, &diags[st]};
              if (auto op = r.op(element, "/stages/" + std::to_string(st) + "/" + std::to_string(at[1])))
                stages[st].push_back(*op);
            }};
  }
};

// "stages": each stage's ops, from the DOM or, where the parser streamed them, from `streamed`.
// False when it is not a list.
bool read_stages(const nlohmann::json& j, FileReader& r, StreamedOps* streamed, Schedule* s) {
  const auto& stages = j["stages"];
  if (!stages.is_array()) {
    r.error("/stages", "expected a list of per-stage op lists, got " + std::string(stages.type_name()));
    return false;
  }
  for (size_t st = 0; st < stages.size(); ++st) {
    std::string ptr = "/stages/" + std::to_string(st);
    if (!stages[st].is_array()) {
      r.error(ptr, "expected a list of ops, got " + std::string(stages[st].type_name()));
      continue;
    }
    std::vector<Op> ops;
    if (streamed && st < streamed->stages.size()) {
      ops = std::move(streamed->stages[st]);
      for (Diag& d : streamed->diags[st]) {
        add_diag(r.diags, std::move(d));
        r.ok = false;
      }
    }
    ops.reserve(ops.size() + stages[st].size());
    for (size_t i = 0; i < stages[st].size(); ++i) {
      auto op = r.op(stages[st][i], ptr + "/" + std::to_string(i));
      if (op) ops.push_back(*op);
    }
    s->stages.push_back(std::move(ops));
  }
  return true;
}

// Without "optimizer" a file is read as "sync"; one holding post-validation's ops says so here,
// rather than each op being called out of place under an optimizer the file never named.
bool names_its_optimizer(const nlohmann::json& j, FileReader& r, const Schedule& s) {
  if (!j.contains("optimizer"))
    for (const auto& ops : s.stages)
      if (auto at = std::find_if(ops.begin(), ops.end(), [](const Op& op) { return is_post_validation_op(op.type) || op.type == OpType::SEND_STATE || op.type == OpType::RECV_STATE; });
          at != ops.end()) {
        r.error("/", "missing field 'optimizer': the file has post-validation's ops (" + op_type_name(at->type) +
                         "), so it is \"post-validation\"; add \"optimizer\": \"post-validation\" (without it, a "
                         "file is read as \"sync\")");
        return false;
      }
  return true;
}

std::optional<ScheduleFile> read_schedule(const nlohmann::json& j, const std::string& file, StreamedOps* streamed,
                                          std::vector<Diag>* diags) {
  FileReader r{file, diags};
  size_t diags_before = diags->size();
  if (!check_header(j, r)) return std::nullopt;

  ScheduleFile out;
  Schedule& s = out.schedule;
  ProblemInput input;
  problem_input_from_json(j["problem"], file, "/problem", &input, diags);
  if (diags->size() > diags_before) r.ok = false;
  r.read_int(j, "p", "", &s.p, true);
  r.read_int(j, "m", "", &s.m, true);
  r.read_int(j, "chunks", "", &s.chunks, false);
  if (j.contains("level")) {
    auto level = j["level"].is_string() ? parse_level(j["level"].get<std::string>()) : std::nullopt;
    if (level) s.level = *level;
    else r.error("/level", "expected \"compute\" or \"lowered\", got " + json_excerpt(j["level"]));
  }
  for (const char* key : {"method", "comment", "$schema"})
    if (j.contains(key) && !j[key].is_string())
      r.error(std::string("/") + key, "expected a string, got " + json_excerpt(j[key]));
  if (j.contains("method") && j["method"].is_string()) s.method = j["method"].get<std::string>();
  out.recorded = r.figures(j);
  if (j.contains("partition")) {
    out.partition = partition_record_from_json(j["partition"], file, "/partition", diags);
    if (!out.partition) r.ok = false;
  }
  if (j.contains("optimizer")) {
    const auto& o = j["optimizer"];
    auto optimizer = o.is_string() ? parse_optimizer(o.get<std::string>()) : std::nullopt;
    if (optimizer) s.optimizer = *optimizer;
    else r.error("/optimizer", std::string("expected \"") + optimizer_name(Optimizer::kSync) + "\" or \"" +
                                   optimizer_name(Optimizer::kPostValidation) + "\", got " + json_excerpt(o));
  }
  if (j.contains("objective")) {
    const auto& o = j["objective"];
    if (o == "period" || o == "wall") out.objective = o == "wall" ? Objective::kWall : Objective::kPeriod;
    else r.error("/objective", "expected \"period\" or \"wall\", got " + json_excerpt(o));
  }
  read_placement(j, r, &s);
  if (!read_stages(j, r, streamed, &s)) return std::nullopt;
  if (r.ok && !names_its_optimizer(j, r, s)) return std::nullopt;
  if (!r.ok) return std::nullopt;

  auto problem = build_problem(input, file, diags);
  if (!problem) return std::nullopt;
  out.problem = *problem;
  // A schedule fixes the placement; the problem inherits it so simulate and validate agree.
  if (out.problem.placement.empty()) {
    out.problem.placement = s.placement;
  } else if (out.problem.placement != s.placement) {
    r.error("/problem/placement", "differs from the schedule's /placement");
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<ScheduleFile> schedule_from_json(const nlohmann::json& j, const std::string& file, std::vector<Diag>* diags) {
  return read_schedule(j, file, nullptr, diags);
}

std::optional<ScheduleFile> schedule_from_text(const std::string& text, const std::string& file, std::vector<Diag>* diags) {
  StreamedOps streamed;
  const ElementSink sink = streamed.sink(file);
  auto j = parse_json_text(text, file, diags, &sink);
  if (!j) return std::nullopt;
  return read_schedule(*j, file, &streamed, diags);
}

std::optional<ScheduleFile> load_schedule_file(const std::string& path, std::vector<Diag>* diags, std::string* text) {
  std::string own;  // the text, freed on return unless the caller keeps it
  std::string& t = text ? *text : own;
  if (!read_text_file(path, &t, diags)) return std::nullopt;
  return schedule_from_text(t, path, diags);
}

}  // namespace zbpp
