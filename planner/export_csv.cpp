// PyTorch schedule CSV export and import (see export_csv.h).
#include "planner/export_csv.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>
#include <set>
#include <sstream>

#include "planner/deps.h"
#include "planner/problem.h"

namespace zbpp {

namespace {

// Our op type <-> PyTorch's computation type letter.
const char* pytorch_name(OpType t) {
  switch (t) {
    case OpType::F: return "F";
    case OpType::B: return "I";
    case OpType::W: return "W";
    case OpType::BW: return "B";
    default: return nullptr;
  }
}

std::optional<OpType> from_pytorch(const std::string& name) {
  if (name == "F") return OpType::F;
  if (name == "I") return OpType::B;
  if (name == "W") return OpType::W;
  if (name == "B") return OpType::BW;
  return std::nullopt;
}

// A cell as error messages quote it: at most 20 characters, control bytes as '?', so a
// megabyte-long or binary cell cannot flood the terminal.
std::string quoted_cell(const std::string& cell) {
  constexpr size_t kShown = 20;
  std::string out = cell.substr(0, kShown);
  for (char& c : out)
    if (std::iscntrl(static_cast<unsigned char>(c))) c = '?';
  if (cell.size() > kShown) out += "... (" + std::to_string(cell.size()) + " characters)";
  return out;
}

}  // namespace

std::string export_pytorch_csv(const Schedule& s) {
  std::ostringstream out;
  for (int st = 0; st < s.p; ++st) {
    bool first = true;
    for (const Op& op : s.stages[st]) {
      const char* name = pytorch_name(op.type);
      if (!name) continue;
      out << (first ? "" : ",") << s.placement[st][op.chunk] << name << op.mb;
      first = false;
    }
    out << "\n";
  }
  return out.str();
}

std::optional<Schedule> import_pytorch_csv(const std::string& text, const std::string& file, std::vector<Diag>* diags) {
  struct Cell {
    int vs, mb;
    OpType type;
    int row, at;  ///< where it is, for messages
    std::string text;
  };
  auto cell_place = [&](int row, int at, const std::string& cell) {
    return "row " + std::to_string(row) + ", cell " + std::to_string(at) + " ('" + quoted_cell(cell) + "')";
  };
  std::vector<std::vector<Cell>> rows;
  // Spreadsheets save CSV with a UTF-8 byte order mark and CRLF line ends: neither is data.
  const std::string bom = "\xEF\xBB\xBF";
  std::istringstream in(text.compare(0, bom.size(), bom) == 0 ? text.substr(bom.size()) : text);
  std::string line;
  int row = 0;
  bool ok = true;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<Cell> cells;
    std::stringstream fields(line);
    std::string cell;
    int index = 0;
    while (std::getline(fields, cell, ',')) {
      const int at = index++;
      if (cell.empty() || cell == "None") continue;  // PyTorch writes idle steps this way
      size_t i = 0;
      while (i < cell.size() && std::isdigit(static_cast<unsigned char>(cell[i]))) ++i;
      size_t j = i;
      while (j < cell.size() && std::isalpha(static_cast<unsigned char>(cell[j]))) ++j;
      auto type = from_pytorch(cell.substr(i, j - i));
      bool digits_after = j < cell.size() && std::all_of(cell.begin() + j, cell.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      if (i == 0 || !type || !digits_after || i > 6 || cell.size() - j > 7) {
        diags->push_back({file, "", -1, -1, "", cell_place(row, at, cell) + ": expected <stage><F|I|W|B><microbatch>, e.g. 0F3"});
        ok = false;
        continue;
      }
      const int mb = std::stoi(cell.substr(j));
      if (mb >= kMaxMicrobatches) {
        diags->push_back({file, "", -1, -1, "", cell_place(row, at, cell) + ": microbatch " + std::to_string(mb) +
                                                  " is beyond the " + std::to_string(kMaxMicrobatches) +
                                                  " microbatches a problem may have (0.." +
                                                  std::to_string(kMaxMicrobatches - 1) + ")"});
        ok = false;
        continue;
      }
      cells.push_back({std::stoi(cell.substr(0, i)), mb, *type, row, at, cell});
    }
    rows.push_back(std::move(cells));
    ++row;
  }
  while (!rows.empty() && rows.back().empty()) rows.pop_back();
  if (!ok) return std::nullopt;
  if (rows.empty()) {
    diags->push_back({file, "", -1, -1, "", "no rows: expected one row of actions per rank"});
    return std::nullopt;
  }
  Schedule s;
  s.p = static_cast<int>(rows.size());
  s.method = "pytorch-csv";
  int max_mb = -1;
  std::set<int> seen_vs;
  for (int r = 0; r < s.p; ++r) {
    std::set<int> mine;
    for (const Cell& c : rows[r]) {
      mine.insert(c.vs);
      max_mb = std::max(max_mb, c.mb);
    }
    for (int vs : mine)
      if (!seen_vs.insert(vs).second) {
        diags->push_back({file, "", -1, -1, "", "row " + std::to_string(r) + ": stage " + std::to_string(vs) +
                                                  " also appears on another rank; each stage must belong to one rank"});
        return std::nullopt;
      }
    s.placement.push_back(std::vector<int>(mine.begin(), mine.end()));
  }
  s.chunks = static_cast<int>(s.placement[0].size());
  // Every stage a cell names must be one of the rows' stages: p rows of `chunks` stages each (as
  // row 0 has; checked first, so a stray index is named by its cell, not by its row's count).
  const int stages = s.p * s.chunks;
  for (const auto& cells : rows)
    for (const Cell& c : cells)
      if (c.vs >= stages) {
        diags->push_back({file, "", -1, -1, "", cell_place(c.row, c.at, c.text) + ": stage " + std::to_string(c.vs) +
                                                  " does not exist: " + std::to_string(s.p) + " row(s) of " +
                                                  std::to_string(s.chunks) + " stage(s) each make stages 0.." +
                                                  std::to_string(stages - 1)});
        return std::nullopt;
      }
  for (int r = 0; r < s.p; ++r)
    if (static_cast<int>(s.placement[r].size()) != s.chunks || s.chunks == 0) {
      diags->push_back({file, "", -1, -1, "", "row " + std::to_string(r) + " runs " +
                                                std::to_string(s.placement[r].size()) + " stage(s), row 0 runs " +
                                                std::to_string(s.chunks) + ": every rank needs the same number"});
      return std::nullopt;
    }
  s.m = max_mb + 1;
  s.stages.resize(s.p);
  for (int r = 0; r < s.p; ++r)
    for (const Cell& c : rows[r]) {
      int chunk = static_cast<int>(std::find(s.placement[r].begin(), s.placement[r].end(), c.vs) - s.placement[r].begin());
      s.stages[r].push_back({c.type, c.mb, chunk});
    }
  return s;
}

namespace {

// One message between two ranks: whose product (virtual stage, microbatch) and the action on the
// rank that sends or receives it.
struct Message {
  int vs, mb, stage, index;
};

// An action as the CSV spells it: "1I0" for our B of virtual stage 1, microbatch 0.
std::string csv_action(const Schedule& s, int stage, int index) {
  const Op& op = s.stages[stage][index];
  return std::to_string(s.placement[stage][op.chunk]) + pytorch_name(op.type) + std::to_string(op.mb);
}

}  // namespace

bool check_message_order(const Schedule& s, const std::string& file, std::vector<Diag>* diags) {
  // As lowering places them: a SEND right after the op that makes the output, a RECV right
  // before the op that needs it. Keyed by (kind, from rank, to rank).
  VirtualStageMap map(s.placement);
  const int last = map.virtual_stages() - 1;
  std::map<std::tuple<int, int, int>, std::vector<Message>> sent, received;
  for (int st = 0; st < s.p; ++st)
    for (int i = 0; i < static_cast<int>(s.stages[st].size()); ++i) {
      const Op& op = s.stages[st][i];
      const int vs = map.vs(st, op.chunk);
      if (op.type == OpType::F && vs < last && map.stage_of[vs + 1] != st)
        sent[{0, st, map.stage_of[vs + 1]}].push_back({vs, op.mb, st, i});
      if ((op.type == OpType::B || op.type == OpType::BW) && vs > 0 && map.stage_of[vs - 1] != st)
        sent[{1, st, map.stage_of[vs - 1]}].push_back({vs, op.mb, st, i});
      auto dep = dependency_of(op, st, map);
      if (!dep || !dep->remote || op.type == OpType::W) continue;
      const int kind = dep->what == Product::Forward ? 0 : 1;
      received[{kind, map.stage_of[dep->vs], st}].push_back({dep->vs, dep->mb, st, i});
    }
  for (const auto& [channel, in] : received) {
    const auto& out = sent[channel];
    for (size_t n = 0; n < in.size() && n < out.size(); ++n) {
      if (in[n].vs == out[n].vs && in[n].mb == out[n].mb) continue;
      const char* what = std::get<0>(channel) == 0 ? "activation" : "gradient";
      diags->push_back({file, "", -1, -1, "",
                        "row " + std::to_string(in[n].stage) + ": " + csv_action(s, in[n].stage, in[n].index) +
                            " needs stage " + std::to_string(in[n].vs) + "'s " + what + " of microbatch " +
                            std::to_string(in[n].mb) + " from row " + std::to_string(out[n].stage) +
                            ", which sends " + csv_action(s, out[n].stage, out[n].index) +
                            "'s first: messages between two ranks arrive in the order they are sent"});
      return false;
    }
  }
  return true;
}

}  // namespace zbpp
