// PyTorch schedule CSV import (see import_csv.h).
#include "io/import_csv.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/deps.h"
#include "core/message_order.h"
#include "core/problem.h"
#include "io/pytorch_actions.h"
#include "planner/lower.h"

namespace zbpp {

using pytorch::ActionKind;
using pytorch::ActionType;
using pytorch::kActionTypes;

namespace {

constexpr const char* kAccepted =
    "expected <stage><type><microbatch> like 0F3 (type F, I, B, W, SEND_F, RECV_F, SEND_B or RECV_B; REDUCE_GRAD, "
    "UNSHARD and RESHARD take no microbatch), a pair like (0F3;7B1)OVERLAP_F_B, or an empty cell";

// One action of a cell.
struct Action {
  ActionKind kind = ActionKind::kCompute;
  OpType type = OpType::F;
  int vs = 0;
  int mb = -1;  ///< -1: the cell names none
};

// A cell as error messages quote it: at most 40 characters, control bytes as '?', so a
// megabyte-long or binary cell cannot flood the terminal.
std::string quoted_cell(const std::string& cell) {
  constexpr size_t kShown = 40;
  std::string out = cell.substr(0, kShown);
  for (char& c : out)
    if (std::iscntrl(static_cast<unsigned char>(c))) c = '?';
  if (cell.size() > kShown) out += "... (" + std::to_string(cell.size()) + " characters)";
  return out;
}

// Where a row or a cell is: rows and columns count from 1 as an editor or a spreadsheet shows
// them, ranks and steps from 0 as PyTorch numbers them.
std::string at_row(int rank) { return "row " + std::to_string(rank + 1) + " (rank " + std::to_string(rank) + ")"; }
std::string at_cell(int rank, int step, const std::string& cell) {
  return at_row(rank) + ", column " + std::to_string(step + 1) + " (step " + std::to_string(step) + "), cell '" +
         quoted_cell(cell) + "'";
}

// Python's str.strip(), which PyTorch applies to each cell (ASCII whitespace; Python also strips
// Unicode spaces, which no CSV PyTorch writes holds).
std::string strip(const std::string& s) {
  auto space = [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == ' ' || (u >= '\t' && u <= '\r') || (u >= 0x1c && u <= 0x1f);
  };
  size_t begin = 0, end = s.size();
  while (begin < end && space(s[begin])) ++begin;
  while (end > begin && space(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

// The records of a CSV as Python's csv.reader (which PyTorch's _load_csv uses) reads them: fields
// split at ',' and records at \n, \r\n or \r (an empty line is a record without fields); a field
// that starts with '"' is quoted: "" in it is one quote, and it may hold commas and line ends;
// characters after its closing quote join it, and a quote left open runs to the end of the text.
std::vector<std::vector<std::string>> read_records(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  enum { kStartRecord, kStartField, kInField, kInQuoted, kQuoteInQuoted } state = kStartRecord;
  auto end_field = [&] {
    record.push_back(std::move(field));
    field.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '\n' || c == '\r') && state != kInQuoted) {
      if (state != kStartRecord) end_field();
      records.push_back(std::move(record));
      record.clear();
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      state = kStartRecord;
      continue;
    }
    switch (state) {
      case kStartRecord:
      case kStartField:
        if (c == '"') state = kInQuoted;
        else if (c == ',') end_field(), state = kStartField;
        else field += c, state = kInField;
        break;
      case kInField:
        if (c == ',') end_field(), state = kStartField;
        else field += c;
        break;
      case kInQuoted:
        if (c == '"') state = kQuoteInQuoted;
        else field += c;
        break;
      case kQuoteInQuoted:
        if (c == '"') field += c, state = kInQuoted;
        else if (c == ',') end_field(), state = kStartField;
        else field += c, state = kInField;
        break;
    }
  }
  if (state != kStartRecord) {
    end_field();
    records.push_back(std::move(record));
  }
  return records;
}

bool all_digits(const std::string& s, size_t from, size_t to) {
  return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(from), s.begin() + static_cast<std::ptrdiff_t>(to),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// One action "<stage><type>[<microbatch>]", stripped. PyTorch ignores what follows a match
// ("0F3x" reads as 0F3); that is refused here, as a file that holds it is not one PyTorch wrote.
bool parse_action(const std::string& s, Action* out, std::string* why) {
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  const ActionType* type = nullptr;
  if (digits > 0)
    for (const auto& t : kActionTypes)
      if (s.compare(digits, std::strlen(t.name), t.name) == 0) {
        type = &t;
        break;
      }
  if (!type) {
    *why = kAccepted;
    return false;
  }
  const size_t mb_at = digits + std::strlen(type->name);
  if (!all_digits(s, mb_at, s.size())) {
    *why = kAccepted;
    return false;
  }
  if (digits > 9 || s.size() - mb_at > 9) {
    *why = std::string("the ") + (digits > 9 ? "stage" : "microbatch") + " number is too long; " + kAccepted;
    return false;
  }
  const bool needs_mb = type->kind == ActionKind::kCompute || type->kind == ActionKind::kMessage;
  if (needs_mb && mb_at == s.size()) {
    *why = std::string(type->name) + " needs a microbatch, as in 0" + type->name + "3";
    return false;
  }
  *out = {type->kind, type->type, std::stoi(s.substr(0, digits)), mb_at == s.size() ? -1 : std::stoi(s.substr(mb_at))};
  if (out->mb >= kMaxMicrobatches) {
    *why = "microbatch " + std::to_string(out->mb) + " is beyond the " + std::to_string(kMaxMicrobatches) +
           " microbatches a problem may have (0.." + std::to_string(kMaxMicrobatches - 1) + ")";
    return false;
  }
  return true;
}

// A cell: nothing (an idle step), one action, or PyTorch's "(a;b)OVERLAP_F_B", whose actions run
// one after the other here. Parsed as _Action.from_str does, from the first ')' on.
bool parse_cell(const std::string& cell, std::vector<Action>* out, std::string* why) {
  const std::string s = strip(cell);
  if (s.empty() || s == "None") return true;  // "None": how Python prints an idle step
  const size_t close = s.find(')');
  if (s[0] != '(' || close == std::string::npos) {
    out->emplace_back();
    return parse_action(s, &out->back(), why);
  }
  if (s.compare(close + 1, std::string::npos, "OVERLAP_F_B") != 0) {
    *why = "only OVERLAP_F_B groups actions in parentheses, as in (0F3;7B1)OVERLAP_F_B";
    return false;
  }
  std::stringstream inner(s.substr(1, close - 1));
  for (std::string part; std::getline(inner, part, ';');) {
    part = strip(part);
    if (part.empty()) continue;
    Action a;
    if (!parse_action(part, &a, why)) {
      *why = "'" + quoted_cell(part) + "' in the pair: " + *why;
      return false;
    }
    if (a.kind != ActionKind::kCompute) {
      *why = "OVERLAP_F_B pairs compute actions (F, I, B, W); '" + quoted_cell(part) + "' is not one";
      return false;
    }
    out->push_back(a);
  }
  if (out->empty()) {
    *why = "OVERLAP_F_B holds no action; expected a pair like (0F3;7B1)OVERLAP_F_B";
    return false;
  }
  return true;
}

// "1 REDUCE_GRAD cell", "3 UNSHARD cells".
std::string cells_of(int n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? " cell" : " cells");
}

}  // namespace

namespace {

// One action of a row, and the step (column) it was read from.
struct Placed {
  Action action;
  int step;
};

// Errors of one CSV, said against its name.
struct CsvErrors {
  const std::string& file;
  std::vector<Diag>* diags;
  void operator()(const std::string& message) const { add_diag(diags, {file, "", -1, -1, "", message}); }
};

// The cells of `text` (in->cells) and the actions of each row; trailing idle rows dropped. False
// when a cell does not parse (each said) or no row is left.
bool read_rows(const std::string& text, CsvImport* in, std::vector<std::vector<Placed>>* rows, int* overlaps,
               const CsvErrors& error) {
  // Spreadsheets save CSV with a UTF-8 byte order mark: it is not data.
  const std::string bom = "\xEF\xBB\xBF";
  in->cells = read_records(text.compare(0, bom.size(), bom) == 0 ? text.substr(bom.size()) : text);
  rows->assign(in->cells.size(), {});
  bool ok = true;
  for (size_t r = 0; r < in->cells.size(); ++r)
    for (size_t c = 0; c < in->cells[r].size(); ++c) {
      std::vector<Action> actions;
      std::string why;
      if (!parse_cell(in->cells[r][c], &actions, &why)) {
        error(at_cell(static_cast<int>(r), static_cast<int>(c), in->cells[r][c]) + ": " + why);
        ok = false;
        continue;
      }
      *overlaps += actions.size() > 1;
      for (const Action& a : actions) (*rows)[r].push_back({a, static_cast<int>(c)});
    }
  // Rows of idle steps at the end (a trailing blank line) are no ranks.
  while (!rows->empty() && rows->back().empty()) {
    rows->pop_back();
    in->cells.pop_back();
  }
  if (!ok) return false;
  if (rows->empty()) {
    error("no rows: expected one row of actions per rank");
    return false;
  }
  return true;
}

// The schedule's ranks and placement: each rank runs the stages its F/I/B/W actions name (PyTorch
// infers the stage-to-rank mapping the same way); its other actions must name one of them, and
// every rank runs as many stages as rank 0.
bool place_stages(const std::vector<std::vector<Placed>>& rows, CsvImport* in, const CsvErrors& error) {
  Schedule& s = in->schedule;
  std::map<int, int> rank_of;
  for (int r = 0; r < s.p; ++r) {
    std::set<int> mine;
    for (const Placed& at : rows[r]) {
      if (at.action.kind != ActionKind::kCompute) continue;
      auto [it, fresh] = rank_of.emplace(at.action.vs, r);
      if (!fresh && it->second != r) {
        error(at_cell(r, at.step, in->cells[r][at.step]) + ": stage " + std::to_string(at.action.vs) +
              " is also on rank " + std::to_string(it->second) + " (row " + std::to_string(it->second + 1) +
              "); each stage must belong to one rank");
        return false;
      }
      mine.insert(at.action.vs);
    }
    if (mine.empty()) {
      error(at_row(r) + " has no F, I, B or W action; every rank runs a stage" +
            (rows[r].empty() ? " (a blank line is a rank too)" : ""));
      return false;
    }
    s.placement.push_back(std::vector<int>(mine.begin(), mine.end()));
  }
  for (int r = 0; r < s.p; ++r)
    for (const Placed& at : rows[r])
      if (at.action.kind != ActionKind::kCompute && !std::count(s.placement[r].begin(), s.placement[r].end(), at.action.vs)) {
        auto it = rank_of.find(at.action.vs);
        error(at_cell(r, at.step, in->cells[r][at.step]) + ": stage " + std::to_string(at.action.vs) +
              (it == rank_of.end() ? " has no F, I, B or W action on any rank"
                                   : " runs on rank " + std::to_string(it->second) + " (row " +
                                         std::to_string(it->second + 1) + "), not on this one"));
        return false;
      }
  s.chunks = static_cast<int>(s.placement[0].size());
  // Every stage a cell names must be one of the rows' stages: p rows of `chunks` stages each (as
  // row 1 has; checked first, so a stray index is named by its cell, not by its row's count).
  const int stages = s.p * s.chunks;
  for (int r = 0; r < s.p; ++r)
    for (const Placed& at : rows[r])
      if (at.action.vs >= stages) {
        error(at_cell(r, at.step, in->cells[r][at.step]) + ": stage " + std::to_string(at.action.vs) +
              " does not exist: " + std::to_string(s.p) + " row(s) of " + std::to_string(s.chunks) +
              " stage(s) each make stages 0.." + std::to_string(stages - 1));
        return false;
      }
  for (int r = 0; r < s.p; ++r)
    if (static_cast<int>(s.placement[r].size()) != s.chunks) {
      error(at_row(r) + " runs " + std::to_string(s.placement[r].size()) + " stage(s), row 1 (rank 0) runs " +
            std::to_string(s.chunks) + ": every rank needs the same number");
      return false;
    }
  return true;
}

// What a CSV held besides ops and messages, for the notes.
struct Ignored {
  int reduce_grads = 0, unshards = 0, reshards = 0;
};

// The compute ops and the messages of each rank; the rest is counted, and a REDUCE_GRAD must come
// after the last backward of its stage on its rank, as PyTorch places it.
bool collect_ops(const std::vector<std::vector<Placed>>& rows, CsvImport* in, Ignored* ignored, const CsvErrors& error) {
  Schedule& s = in->schedule;
  s.stages.resize(s.p);
  in->step_of.resize(s.p);
  int max_mb = -1;
  for (int r = 0; r < s.p; ++r) {
    std::map<int, int> last_backward, reduced;  // stage -> step
    for (const Placed& at : rows[r]) {
      const Action& a = at.action;
      const int chunk = static_cast<int>(std::find(s.placement[r].begin(), s.placement[r].end(), a.vs) -
                                         s.placement[r].begin());
      switch (a.kind) {
        case ActionKind::kCompute:
          s.stages[r].push_back({a.type, a.mb, chunk});
          in->step_of[r].push_back(at.step);
          max_mb = std::max(max_mb, a.mb);
          if (a.type == OpType::W || a.type == OpType::BW) last_backward[a.vs] = at.step;
          break;
        case ActionKind::kMessage: in->messages.push_back({r, at.step, a.type, a.vs, a.mb}); break;
        case ActionKind::kReduceGrad:
          ++ignored->reduce_grads;
          if (auto [it, fresh] = reduced.emplace(a.vs, at.step); !fresh) {
            error(at_cell(r, at.step, in->cells[r][at.step]) + ": stage " + std::to_string(a.vs) +
                  " reduces its gradients a second time (first at column " + std::to_string(it->second + 1) + ")");
            return false;
          }
          break;
        case ActionKind::kUnshard: ++ignored->unshards; break;
        case ActionKind::kReshard: ++ignored->reshards; break;
      }
    }
    for (const auto& [vs, step] : reduced)
      if (auto it = last_backward.find(vs); it != last_backward.end() && it->second > step) {
        error(at_cell(r, step, in->cells[r][step]) + ": stage " + std::to_string(vs) +
              " reduces its gradients before its last backward, '" + quoted_cell(in->cells[r][it->second]) +
              "' at column " + std::to_string(it->second + 1) + ": PyTorch would reduce a partial gradient");
        return false;
      }
  }
  s.m = max_mb + 1;  // >= 1: every row that is kept runs a stage
  return true;
}

}  // namespace

std::optional<CsvImport> import_pytorch_csv(const std::string& text, const std::string& file,
                                            std::vector<Diag>* diags) {
  const CsvErrors error{file, diags};
  CsvImport in;
  std::vector<std::vector<Placed>> rows;
  int overlaps = 0;
  if (!read_rows(text, &in, &rows, &overlaps, error)) return std::nullopt;
  in.schedule.p = static_cast<int>(rows.size());
  in.schedule.method = "pytorch-csv";
  Ignored ignored;
  if (!place_stages(rows, &in, error) || !collect_ops(rows, &in, &ignored, error)) return std::nullopt;
  if (overlaps > 0)
    in.notes.push_back("import: " + cells_of(overlaps, "OVERLAP_F_B") +
                       ": each runs its actions one after the other (PyTorch overlaps them; this model runs one op "
                       "at a time)");
  if (ignored.reduce_grads > 0)
    in.notes.push_back("import: ignored " + cells_of(ignored.reduce_grads, "REDUCE_GRAD") +
                       " (PyTorch's gradient reduction; zbrun's optimizer step reduces gradients itself)");
  if (ignored.unshards + ignored.reshards > 0)
    in.notes.push_back("import: ignored " + cells_of(ignored.unshards, "UNSHARD") + " and " +
                       cells_of(ignored.reshards, "RESHARD") + " (FSDP's weight gathering; zbrun keeps every stage's weights whole)");
  return in;
}

namespace {

// An op as the CSV spells it ("1I0": our B of virtual stage 1, microbatch 0), and where it was read.
std::string csv_action(const CsvImport& in, int stage, int index) {
  const Schedule& s = in.schedule;
  const Op& op = s.stages[stage][index];
  return std::to_string(s.placement[stage][op.chunk]) + pytorch::action_name(op.type) + std::to_string(op.mb);
}
std::string op_cell(const CsvImport& in, int stage, int index) {
  const int step = in.step_of[stage][index];
  return at_cell(stage, step, in.cells[stage][step]);
}

}  // namespace

bool check_message_order(const CsvImport& in, const std::string& file, std::vector<Diag>* diags) {
  const auto crossings = find_message_crossings(in.schedule);
  if (crossings.empty()) return true;
  // One finding, as this check has always named it: the first crossing by kind, then ranks.
  const MessageCrossing& c = *std::min_element(
      crossings.begin(), crossings.end(), [](const MessageCrossing& a, const MessageCrossing& b) {
        return std::tuple(a.what, a.from, a.to) < std::tuple(b.what, b.from, b.to);
      });
  const int mb = in.schedule.stages[c.to][c.receiver_op].mb;
  add_diag(diags, {file, "", -1, -1, "",
                   op_cell(in, c.to, c.receiver_op) + ": " + csv_action(in, c.to, c.receiver_op) + " needs stage " +
                       std::to_string(c.needed_from_vs) + "'s " +
                       (c.what == Product::Forward ? "activation" : "gradient") + " of microbatch " +
                       std::to_string(mb) + " from rank " + std::to_string(c.from) + ", which sends " +
                       csv_action(in, c.from, c.sender_op) + "'s first (column " +
                       std::to_string(in.step_of[c.from][c.sender_op] + 1) +
                       "): messages between two ranks arrive in the order they are sent"});
  return false;
}

bool check_message_cells(const CsvImport& in, const std::string& file, std::vector<Diag>* diags) {
  if (in.messages.empty()) return true;
  const Schedule& s = in.schedule;
  VirtualStageMap map(s.placement);
  const int last = map.virtual_stages() - 1;
  auto error = [&](const std::string& message) {
    add_diag(diags, {file, "", -1, -1, "", message});
    return false;
  };
  using Key = std::tuple<int, OpType, int, int>;  // rank, message, stage, microbatch
  auto name = [](const Key& k) {
    return std::to_string(std::get<2>(k)) + pytorch::action_name(std::get<1>(k)) + std::to_string(std::get<3>(k));
  };
  // The messages our lowering sends, with the op each goes with.
  std::map<Key, int> expected;  // -> op index in the compute schedule
  const Schedule lowered = lower_comms(s);
  for (int st = 0; st < s.p; ++st) {
    int compute = 0;
    for (const Op& op : lowered.stages[st]) {
      if (is_compute(op.type)) ++compute;
      if (!is_tensor_message(op.type)) continue;
      // A SEND follows the op that makes what it sends; a RECV precedes the op that needs it.
      const bool send = is_send(op.type);
      expected[{st, op.type, map.vs(st, op.chunk), op.mb}] = send ? compute - 1 : compute;
    }
  }
  // Which rank a message goes to or comes from.
  auto peer = [&](const CsvImport::Message& m) { return map.stage_of[message_peer_vs(m.type, m.vs)]; };
  std::map<Key, int> seen;  // -> step
  std::map<std::pair<int, int>, std::vector<const CsvImport::Message*>> sends, receives;  // (from, to)
  for (const CsvImport::Message& m : in.messages) {
    const Key key{m.rank, m.type, m.vs, m.mb};
    const std::string where = at_cell(m.rank, m.step, in.cells[m.rank][m.step]);
    auto it = expected.find(key);
    if (it == expected.end() || seen.count(key)) {
      const int other = message_peer_vs(m.type, m.vs);
      std::string why;
      if (seen.count(key)) why = "it repeats column " + std::to_string(seen[key] + 1);
      else if (other < 0 || other > last)
        why = "stage " + std::to_string(m.vs) + " is the " + (other < 0 ? "first" : "last") + " stage: there is no stage " +
              std::to_string(other) + " to " + (is_send(m.type) ? "send to" : "receive from");
      else if (map.stage_of[other] == m.rank)
        why = "stages " + std::to_string(std::min(m.vs, other)) + " and " + std::to_string(std::max(m.vs, other)) +
              " are both on this rank, which passes the tensor on without a message";
      else why = "microbatch " + std::to_string(m.mb) + " does not exist (m = " + std::to_string(s.m) + ")";
      return error(where + ": no such message in the lowered schedule: " + why);
    }
    seen[key] = m.step;
    const int op = it->second, op_step = in.step_of[m.rank][op];
    if (is_send(m.type) && op_step > m.step)
      return error(where + ": comes before " + csv_action(in, m.rank, op) + " (column " + std::to_string(op_step + 1) +
                   "), which makes what it sends");
    if (is_recv(m.type) && op_step < m.step)
      return error(where + ": comes after " + csv_action(in, m.rank, op) + " (column " + std::to_string(op_step + 1) +
                   "), which needs what it receives");
    if (is_send(m.type)) sends[{m.rank, peer(m)}].push_back(&m);
    else receives[{peer(m), m.rank}].push_back(&m);
  }
  for (const auto& [key, op] : expected)
    if (!seen.count(key))
      return error(at_row(std::get<0>(key)) + ": no " + name(key) + " cell " +
                   (is_send(std::get<1>(key)) ? "after " : "before ") + csv_action(in, std::get<0>(key), op) +
                   " (column " + std::to_string(in.step_of[std::get<0>(key)][op] + 1) +
                   "): a CSV with communication cells needs every message the schedule sends");
  // PyTorch pairs the receives from a rank with that rank's sends in the order they are posted.
  for (const auto& [ranks, got] : receives) {
    const auto& out = sends[ranks];
    for (size_t n = 0; n < got.size(); ++n) {
      const CsvImport::Message &r = *got[n], &sent = *out[n];  // as many as sent: every message is there
      if (message_peer_vs(r.type, r.vs) == sent.vs && r.mb == sent.mb &&
          message_product(r.type) == message_product(sent.type))
        continue;
      return error(at_cell(r.rank, r.step, in.cells[r.rank][r.step]) + ": receive " + std::to_string(n + 1) +
                   " from rank " + std::to_string(ranks.first) + ", whose send " + std::to_string(n + 1) +
                   " to this rank is '" + quoted_cell(in.cells[sent.rank][sent.step]) + "' (column " +
                   std::to_string(sent.step + 1) + "): receives pair up with sends in the order they are posted");
    }
  }
  return true;
}

}  // namespace zbpp
