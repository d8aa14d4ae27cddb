// Schedule file writing (see schedule_json.h): one op per line, figures exact.
#include <array>
#include <charconv>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/schedule_json.h"

namespace zbpp {

namespace {

// The op lines make up nearly all of a big file (56,508 ops, 3.3 MB at p=32, m=256): they are
// written with to_chars and fixed-size copies into a 64 KB buffer handed to the sink whenever it is
// full (an ostringstream took ten times as long, and holding the whole text costs fresh pages);
// a big file's later stages are made meanwhile on a second thread (kSplitFrom).
constexpr size_t kMaxOpLine = 96;  // 6 + 10 + 10 ("VALIDATE") + 4 * (13 + 11) + 3 < 96

template <size_t N>
char* put(char* at, const char (&text)[N]) {
  std::memcpy(at, text, N - 1);
  return at + N - 1;
}

template <size_t N>
char* put_field(char* at, const char (&name)[N], int v) {
  return std::to_chars(put(at, name), at + kMaxOpLine, v).ptr;
}

// `"NAME"` of every op type, padded so that one fixed-size copy writes it (and the length says
// how much of it counts).
struct QuotedName {
  char text[16];
  size_t size;
};
const QuotedName& quoted_name(OpType t) {
  static const auto names = [] {
    std::array<QuotedName, static_cast<size_t>(OpType::VALIDATE) + 1> out{};
    for (size_t i = 0; i < out.size(); ++i) {
      std::string quoted = "\"" + std::string(op_type_text(static_cast<OpType>(i))) + "\"";
      std::memcpy(out[i].text, quoted.data(), quoted.size());
      out[i].size = quoted.size();
    }
    return out;
  }();
  return names[static_cast<size_t>(t)];
}

char* put_op_line(char* at, const Op& op, bool last) {
  at = put(at, "      {\"type\": ");
  const QuotedName& name = quoted_name(op.type);
  std::memcpy(at, name.text, sizeof name.text);
  at += name.size;
  if (!is_optimizer_op(op.type)) {
    at = put_field(at, ", \"mb\": ", op.mb);
    at = put_field(at, ", \"chunk\": ", op.chunk);
  }
  if (op.peer >= 0) at = put_field(at, ", \"peer\": ", op.peer);
  if (op.slot >= 0) at = put_field(at, ", \"slot\": ", op.slot);
  return last ? put(at, "}\n") : put(at, "},\n");
}

// Stages [from, to) of the "stages" array; `room(n)` makes room for n more bytes at `at` (and
// may move it), false when it cannot.
template <class Room>
bool put_stages(const Schedule& s, size_t from, size_t to, char*& at, Room&& room) {
  for (size_t st = from; st < to; ++st) {
    if (!room(16)) return false;
    at = put(at, "    [\n");
    const auto& stage = s.stages[st];
    for (size_t i = 0; i < stage.size(); ++i) {
      if (!room(kMaxOpLine)) return false;
      at = put_op_line(at, stage[i], i + 1 == stage.size());
    }
    if (!room(16)) return false;
    at = st + 1 < s.stages.size() ? put(at, "    ],\n") : put(at, "    ]\n");
  }
  return true;
}

// From this many ops on, a second thread makes the text of the later stages while this one makes
// and hands on the earlier ones' (the text is about 60 bytes an op: the later half is held whole,
// 30 MB at a million ops, so past that the file is made by one thread).
constexpr size_t kSplitFrom = 1u << 14, kSplitUpTo = 1u << 20;

}  // namespace

bool write_schedule_json(const Schedule& s, const Problem& pr, const Timeline& t,
                         const std::function<bool(std::string_view)>& sink, const IterationTimeline* iterations,
                         const std::string& objective, Ticks wall_bound, const SolverReport* solver) {
  nlohmann::json peak = nlohmann::json::array();
  for (Mem m : t.peak_memory) peak.push_back(from_quanta(m));
  nlohmann::json placement = s.placement;
  std::ostringstream out;
  out << "{\n";
  out << "  \"format\": \"" << kFormat << "\",\n";
  out << "  \"version\": " << kVersion << ",\n";
  out << "  \"level\": " << nlohmann::json(level_name(s.level)).dump() << ",\n";
  out << "  \"method\": " << nlohmann::json(s.method).dump() << ",\n";
  if (s.level == kLevelLowered) out << "  \"optimizer\": " << nlohmann::json(optimizer_name(s.optimizer)).dump() << ",\n";
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
                        {"status", solver->status},         {"objective", from_quanta(solver->value)},
                        {"best_bound", solver->best_bound}, {"bound_source", solver->bound_source},
                        {"gap", solver->gap},               {"bubble_rate_bound", solver->bubble_rate_bound},
                        {"seconds", solver->seconds},       {"nodes", solver->nodes}};
    out << "  \"solver\": " << j.dump() << ",\n";
  }
  out << "  \"stages\": [\n";
  if (!sink(out.view())) return false;
  std::vector<char> buffer(64 * 1024);
  char* at = buffer.data();
  auto room = [&](size_t n) {  // false when the sink refuses what the buffer holds
    if (at + n <= buffer.data() + buffer.size()) return true;
    bool ok = sink(std::string_view(buffer.data(), static_cast<size_t>(at - buffer.data())));
    at = buffer.data();
    return ok;
  };
  size_t ops = 0;
  for (const auto& stage : s.stages) ops += stage.size();
  // Where the later stages start: about half the ops before it.
  size_t split = s.stages.size();
  if (ops >= kSplitFrom && ops <= kSplitUpTo) {
    size_t before = 0;
    for (split = 0; split < s.stages.size() && 2 * before < ops; ++split) before += s.stages[split].size();
  }
  std::unique_ptr<char[]> later;  // not zeroed: sized for the longest lines, its unused pages stay untouched
  size_t later_size = 0;
  struct Joined {  // the thread ends before what it writes into goes, whatever happens here
    std::thread thread;
    ~Joined() {
      if (thread.joinable()) thread.join();
    }
  } making;
  if (split < s.stages.size()) {
    size_t later_ops = 0;
    for (size_t st = split; st < s.stages.size(); ++st) later_ops += s.stages[st].size();
    later.reset(new char[later_ops * kMaxOpLine + 32 * (s.stages.size() - split)]);
    making.thread = std::thread([&] {
      char* end = later.get();
      put_stages(s, split, s.stages.size(), end, [](size_t) { return true; });
      later_size = static_cast<size_t>(end - later.get());
    });
  }
  const bool earlier = put_stages(s, 0, split, at, room);
  if (making.thread.joinable()) making.thread.join();
  if (!earlier) return false;
  if (later) {
    if (!sink(std::string_view(buffer.data(), static_cast<size_t>(at - buffer.data())))) return false;
    at = buffer.data();
    if (!sink(std::string_view(later.get(), later_size))) return false;
  }
  if (!room(16)) return false;
  at = put(at, "  ]\n}\n");
  return sink(std::string_view(buffer.data(), static_cast<size_t>(at - buffer.data())));
}

std::string schedule_to_json_text(const Schedule& s, const Problem& pr, const Timeline& t,
                                  const IterationTimeline* iterations, const std::string& objective, Ticks wall_bound,
                                  const SolverReport* solver) {
  std::string text;
  write_schedule_json(
      s, pr, t,
      [&text](std::string_view piece) {
        text += piece;
        return true;
      },
      iterations, objective, wall_bound, solver);
  return text;
}

}  // namespace zbpp
