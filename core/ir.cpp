// Names, short forms and placement maps of the schedule IR (see ir.h).
#include "core/ir.h"

#include <ostream>

#include <array>
#include <cctype>
#include <sstream>

namespace zbpp {

namespace {
constexpr std::array<std::pair<OpType, const char*>, 14> kNames = {{
    {OpType::F, "F"},
    {OpType::B, "B"},
    {OpType::W, "W"},
    {OpType::BW, "BW"},
    {OpType::SEND_F, "SEND_F"},
    {OpType::RECV_F, "RECV_F"},
    {OpType::SEND_B, "SEND_B"},
    {OpType::RECV_B, "RECV_B"},
    {OpType::OPT_STEP, "OPT_STEP"},
    {OpType::SEND_STATE, "SEND_STATE"},
    {OpType::RECV_STATE, "RECV_STATE"},
    {OpType::SEND_VALID, "SEND_VALID"},
    {OpType::RECV_VALID, "RECV_VALID"},
    {OpType::VALIDATE, "VALIDATE"},
}};
}  // namespace

std::string_view op_type_text(OpType t) {
  for (const auto& [type, name] : kNames)
    if (type == t) return name;
  return "?";
}

std::string op_type_name(OpType t) { return std::string(op_type_text(t)); }

std::string op_type_list() {
  std::string out;
  for (size_t i = 0; i < kNames.size(); ++i) out += (i == 0 ? "" : i + 1 == kNames.size() ? " or " : ", ") + std::string(kNames[i].second);
  return out;
}

std::optional<OpType> parse_op_type(std::string_view name) {
  for (const auto& [type, n] : kNames)
    if (name == n) return type;
  return std::nullopt;
}

std::string op_short(const Op& op) {
  std::string out = op_type_name(op.type);
  if (is_optimizer_op(op.type)) return out;
  out += std::to_string(op.mb);
  if (op.chunk != 0) out += ":" + std::to_string(op.chunk);
  return out;
}

std::optional<Op> parse_op(std::string_view text, std::string* err) {
  size_t i = 0;
  while (i < text.size() && (std::isupper(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
  auto type = parse_op_type(text.substr(0, i));
  if (!type) {
    *err = "unknown op '" + std::string(text) + "' (expected " + op_type_list() + ")";
    return std::nullopt;
  }
  Op op;
  op.type = *type;
  if (is_optimizer_op(*type) && i == text.size()) return op;
  auto read_int = [&](int* out) {
    size_t start = i;
    long long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 9) v = v * 10 + (text[i++] - '0');
    *out = static_cast<int>(v);
    return i > start;
  };
  if (!read_int(&op.mb)) {
    *err = "op '" + std::string(text) + "' needs a microbatch number, e.g. F0";
    return std::nullopt;
  }
  if (i < text.size() && text[i] == ':') {
    ++i;
    if (!read_int(&op.chunk)) {
      *err = "op '" + std::string(text) + "' needs a chunk number after ':'";
      return std::nullopt;
    }
  }
  if (i != text.size()) {
    *err = "unexpected text after op in '" + std::string(text) + "'";
    return std::nullopt;
  }
  return op;
}

std::optional<std::vector<Op>> parse_ops(std::string_view text, std::string* err) {
  std::vector<Op> ops;
  std::istringstream in{std::string(text)};
  std::string word;
  while (in >> word) {
    auto op = parse_op(word, err);
    if (!op) return std::nullopt;
    ops.push_back(*op);
  }
  return ops;
}

VirtualStageMap::VirtualStageMap(const std::vector<std::vector<int>>& placement_in) : placement(placement_in) {
  int v = 0;
  for (const auto& row : placement) v += static_cast<int>(row.size());
  stage_of.assign(v, -1);
  chunk_of.assign(v, -1);
  for (int s = 0; s < static_cast<int>(placement.size()); ++s)
    for (int c = 0; c < static_cast<int>(placement[s].size()); ++c) {
      int vs = placement[s][c];
      if (vs >= 0 && vs < v) {
        stage_of[vs] = s;
        chunk_of[vs] = c;
      }
    }
}

Schedule Schedule::without_ops() const {
  Schedule out;
  out.p = p;
  out.m = m;
  out.chunks = chunks;
  out.placement = placement;
  out.level = level;
  out.method = method;
  out.optimizer = optimizer;  // a field added to Schedule must be copied here too
  out.stages.resize(stages.size());
  return out;
}

std::optional<Schedule> schedule_from_strings(const std::vector<std::string>& stages, int m, int chunks,
                                              const std::vector<std::vector<int>>& placement, std::string* err) {
  Schedule s;
  s.p = static_cast<int>(stages.size());
  s.m = m;
  s.chunks = chunks;
  s.placement = placement;
  s.method = "inline";
  for (const auto& text : stages) {
    auto ops = parse_ops(text, err);
    if (!ops) return std::nullopt;
    s.stages.push_back(*ops);
  }
  return s;
}

const char* level_name(Level level) { return level == Level::kLowered ? "lowered" : "compute"; }

std::optional<Level> parse_level(std::string_view name) {
  if (name == "compute") return Level::kCompute;
  if (name == "lowered") return Level::kLowered;
  return std::nullopt;
}

const char* optimizer_name(Optimizer optimizer) {
  return optimizer == Optimizer::kPostValidation ? "post-validation" : "sync";
}

std::optional<Optimizer> parse_optimizer(std::string_view name) {
  if (name == "sync") return Optimizer::kSync;
  if (name == "post-validation") return Optimizer::kPostValidation;
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& out, Level level) { return out << level_name(level); }
std::ostream& operator<<(std::ostream& out, Optimizer optimizer) { return out << optimizer_name(optimizer); }

}  // namespace zbpp
