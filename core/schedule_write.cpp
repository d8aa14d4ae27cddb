// Schedule file writing (see schedule_json.h): one op per line, figures exact.
#include <array>
#include <charconv>
#include <cstring>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/schedule_json.h"

namespace zbpp {

namespace {

// The op lines make up nearly all of a big file (56,508 ops, 3.3 MB at p=32, m=256): they are
// written with fixed-size copies and a digit table into a 256 KB buffer handed to the sink whenever
// it is full (an ostringstream took ten times as long, and holding the whole text costs fresh pages;
// smaller pieces cost more writes, and a second thread writing them cost more than it saved).
// The longest line start (SEND_F's, 31 bytes; its fixed copy writes 48) and four 11-character
// numbers with their names and the end: 31 + 11 + 11 + 11 + 10 + 11 + 10 + 11 + 3 = 109.
constexpr size_t kMaxOpLine = 112;

template <size_t N>
char* put(char* at, const char (&text)[N]) {
  std::memcpy(at, text, N - 1);
  return at + N - 1;
}

// An int in decimal; ops' numbers are small, so up to three digits skip to_chars.
[[gnu::always_inline]] inline char* put_int(char* at, int v) {
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  if (static_cast<unsigned>(v) < 10) {
    *at = static_cast<char>('0' + v);
    return at + 1;
  }
  if (static_cast<unsigned>(v) < 100) {
    std::memcpy(at, kPairs + 2 * v, 2);
    return at + 2;
  }
  if (static_cast<unsigned>(v) < 1000) {
    *at = static_cast<char>('0' + v / 100);
    std::memcpy(at + 1, kPairs + 2 * (v % 100), 2);
    return at + 3;
  }
  return std::to_chars(at, at + 12, v).ptr;
}

// The start of each op type's line, `      {"type": "NAME"` and, for ops with a microbatch,
// `, "mb": `, padded so that one fixed-size copy writes it (the length says how much counts).
struct LineStart {
  char text[48];
  size_t size;
};
using LineStarts = std::array<LineStart, static_cast<size_t>(OpType::VALIDATE) + 1>;
const LineStarts& line_starts() {
  static const auto starts = [] {
    LineStarts out{};
    for (size_t i = 0; i < out.size(); ++i) {
      const auto type = static_cast<OpType>(i);
      std::string start = "      {\"type\": \"" + std::string(op_type_text(type)) + "\"";
      if (!is_optimizer_op(type)) start += ", \"mb\": ";
      std::memcpy(out[i].text, start.data(), start.size());
      out[i].size = start.size();
    }
    return out;
  }();
  return starts;
}

char* put_op_line(char* at, const Op& op, bool last, const LineStarts& starts) {
  const LineStart& start = starts[static_cast<size_t>(op.type)];
  std::memcpy(at, start.text, sizeof start.text);
  at += start.size;
  if (!is_optimizer_op(op.type)) {
    at = put_int(at, op.mb);
    at = put_int(put(at, ", \"chunk\": "), op.chunk);
  }
  if (op.peer >= 0) at = put_int(put(at, ", \"peer\": "), op.peer);
  if (op.slot >= 0) at = put_int(put(at, ", \"slot\": "), op.slot);
  return last ? put(at, "}\n") : put(at, "},\n");
}

}  // namespace

bool write_schedule_json(const Schedule& s, const Problem& pr, const Timeline& t,
                         const std::function<bool(std::string_view)>& sink, const IterationTimeline* iterations,
                         const std::string& objective, Ticks wall_bound, const SolverReport* solver,
                         const PartitionRecord* partition) {
  nlohmann::json peak = nlohmann::json::array();
  for (Mem m : t.peak_memory) peak.push_back(from_quanta(m));
  nlohmann::json placement = s.placement;
  std::ostringstream out;
  out << "{\n";
  out << "  \"format\": \"" << kFormat << "\",\n";
  out << "  \"version\": " << kVersion << ",\n";
  out << "  \"level\": " << nlohmann::json(level_name(s.level)).dump() << ",\n";
  out << "  \"method\": " << nlohmann::json(s.method).dump() << ",\n";
  if (s.level == Level::kLowered) out << "  \"optimizer\": " << nlohmann::json(optimizer_name(s.optimizer)).dump() << ",\n";
  out << "  \"p\": " << s.p << ",\n";
  out << "  \"m\": " << s.m << ",\n";
  out << "  \"chunks\": " << s.chunks << ",\n";
  out << "  \"placement\": " << placement.dump() << ",\n";
  out << "  \"problem\": " << problem_to_json(pr).dump() << ",\n";
  out << "  \"makespan\": " << nlohmann::json(from_quanta(t.makespan)).dump() << ",\n";
  out << "  \"span\": " << nlohmann::json(from_quanta(t.span)).dump() << ",\n";
  out << "  \"span_bubble_rate\": " << nlohmann::json(t.span_bubble_rate).dump() << ",\n";
  out << "  \"peak_memory\": " << peak.dump() << ",\n";
  if (!objective.empty()) out << "  \"objective\": " << nlohmann::json(objective).dump() << ",\n";
  if (wall_bound >= 0) out << "  \"wall_lower_bound\": " << nlohmann::json(from_quanta(wall_bound)).dump() << ",\n";
  if (iterations) {
    nlohmann::json it = {{"k", iterations->iterations},
                         {"period", from_quanta(iterations->period)},
                         {"period_bubble_rate", iterations->period_bubble_rate},
                         {"wall", from_quanta(iterations->wall)},
                         {"wall_bubble_rate", iterations->wall_bubble_rate},
                         {"state_latency", from_quanta(iterations->state_latency)},
                         {"allreduce_latency", from_quanta(iterations->allreduce_latency)}};
    out << "  \"iterations\": " << it.dump() << ",\n";
  }
  if (solver) {
    nlohmann::json j = {{"cost", cost_name(solver->measure)},
                        {"status", solve_status_name(solver->status.value_or(SolveStatus::kNotRun))},
                        {"objective", from_quanta(solver->value)},
                        {"best_bound", solver->best_bound}, {"bound_source", bound_source_name(solver->bound_source)},
                        {"gap", solver->gap},               {"bubble_rate_bound", solver->bubble_rate_bound},
                        {"seconds", solver->seconds},       {"nodes", solver->nodes}};
    out << "  \"solver\": " << j.dump() << ",\n";
  }
  if (partition) {
    const Ticks bound = partition_bound(partition->costs, pr);
    out << "  \"partition\": "
        << partition_record_to_json(*partition, bound, solver ? solver->value : t.span).dump()
        << ",\n";
  }
  out << "  \"stages\": [\n";
  if (!sink(out.view())) return false;
  // Not zeroed: a small file touches only the pages it fills.
  constexpr size_t kBuffer = 256 * 1024;
  const auto buffer = std::make_unique_for_overwrite<char[]>(kBuffer);
  char* at = buffer.get();
  auto room = [&](size_t n) {  // false when the sink refuses what the buffer holds
    if (at + n <= buffer.get() + kBuffer) return true;
    bool ok = sink(std::string_view(buffer.get(), static_cast<size_t>(at - buffer.get())));
    at = buffer.get();
    return ok;
  };
  const LineStarts& starts = line_starts();
  for (size_t st = 0; st < s.stages.size(); ++st) {
    if (!room(16)) return false;
    at = put(at, "    [\n");
    const auto& stage = s.stages[st];
    for (size_t i = 0; i < stage.size(); ++i) {
      if (!room(kMaxOpLine)) return false;
      at = put_op_line(at, stage[i], i + 1 == stage.size(), starts);
    }
    if (!room(16)) return false;
    at = st + 1 < s.stages.size() ? put(at, "    ],\n") : put(at, "    ]\n");
  }
  if (!room(16)) return false;
  at = put(at, "  ]\n}\n");
  return sink(std::string_view(buffer.get(), static_cast<size_t>(at - buffer.get())));
}

std::string schedule_to_json_text(const Schedule& s, const Problem& pr, const Timeline& t,
                                  const IterationTimeline* iterations, const std::string& objective, Ticks wall_bound,
                                  const SolverReport* solver, const PartitionRecord* partition) {
  std::string text;
  write_schedule_json(
      s, pr, t,
      [&text](std::string_view piece) {
        text += piece;
        return true;
      },
      iterations, objective, wall_bound, solver, partition);
  return text;
}

}  // namespace zbpp
