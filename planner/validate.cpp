// Schedule checks (see validate.h).
#include "planner/validate.h"

#include <array>
#include <map>
#include <tuple>

#include "planner/deps.h"
#include "planner/simulate.h"

namespace zbpp {

namespace {

Diag at(int stage, int index, const Op& op, const std::string& msg) { return {"", "", stage, index, op_short(op), msg}; }
Diag at_stage(int stage, const std::string& msg) { return {"", "", stage, -1, "", msg}; }

// Shape of the schedule against the problem; false when ops cannot even be indexed.
bool check_shape(const Schedule& s, const Problem& pr, std::vector<Diag>* out) {
  size_t before = out->size();
  auto say = [&](const std::string& msg) { out->push_back({"", "", -1, -1, "", msg}); };
  if (s.p != pr.p) say("schedule has p = " + std::to_string(s.p) + " but its problem has p = " + std::to_string(pr.p));
  if (s.m != pr.m) say("schedule has m = " + std::to_string(s.m) + " but its problem has m = " + std::to_string(pr.m));
  if (s.chunks != pr.chunks)
    say("schedule has chunks = " + std::to_string(s.chunks) + " but its problem has " + std::to_string(pr.chunks));
  if (static_cast<int>(s.stages.size()) != s.p)
    say("schedule lists " + std::to_string(s.stages.size()) + " stages but p = " + std::to_string(s.p));
  bool placement_ok = static_cast<int>(s.placement.size()) == s.p;
  std::vector<bool> seen(static_cast<size_t>(std::max(0, s.p * s.chunks)), false);
  for (const auto& row : s.placement) {
    placement_ok = placement_ok && static_cast<int>(row.size()) == s.chunks;
    for (int vs : row) {
      bool fresh = vs >= 0 && vs < s.p * s.chunks && !seen[vs];
      placement_ok = placement_ok && fresh;
      if (fresh) seen[vs] = true;
    }
  }
  if (!placement_ok)
    say("placement must give each of the " + std::to_string(s.p) + " stages " + std::to_string(s.chunks) +
        " distinct virtual stage(s) in 0.." + std::to_string(s.p * s.chunks - 1));
  if (s.level != kLevelCompute) say("schedule level '" + s.level + "' is not supported here (expected 'compute')");
  return out->size() == before;
}

}  // namespace

std::vector<Diag> validate_structure(const Schedule& s, const Problem& pr) {
  std::vector<Diag> out;
  if (!check_shape(s, pr, &out)) return out;

  // Position of each kind of op per (stage, chunk, mb); -1 = absent.
  enum Kind { kF, kB, kW, kBW, kKinds };
  auto kind_of = [](OpType t) {
    switch (t) {
      case OpType::F: return kF;
      case OpType::B: return kB;
      case OpType::W: return kW;
      default: return kBW;
    }
  };
  for (int st = 0; st < s.p; ++st) {
    const auto& ops = s.stages[st];
    std::vector<std::array<int, kKinds>> pos(static_cast<size_t>(s.chunks) * s.m, {-1, -1, -1, -1});
    bool fields_ok = true;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      if (!is_compute(op.type)) {
        out.push_back(at(st, i, op, op_type_name(op.type) + " is not a compute op; a compute-level schedule holds F, B, W and BW only"));
        fields_ok = false;
        continue;
      }
      if (op.mb < 0 || op.mb >= s.m) {
        out.push_back(at(st, i, op, "microbatch " + std::to_string(op.mb) + " out of range 0.." + std::to_string(s.m - 1)));
        fields_ok = false;
        continue;
      }
      if (op.chunk < 0 || op.chunk >= s.chunks) {
        out.push_back(at(st, i, op, "chunk " + std::to_string(op.chunk) + " out of range 0.." + std::to_string(s.chunks - 1)));
        fields_ok = false;
        continue;
      }
      int& slot = pos[static_cast<size_t>(op.chunk) * s.m + op.mb][kind_of(op.type)];
      if (slot >= 0) {
        out.push_back(at(st, i, op, "duplicate " + op_short(op) + " (first at op " + std::to_string(slot) + ")"));
        fields_ok = false;
        continue;
      }
      slot = i;
    }
    if (!fields_ok) continue;
    for (int c = 0; c < s.chunks; ++c) {
      for (int mb = 0; mb < s.m; ++mb) {
        const auto& p = pos[static_cast<size_t>(c) * s.m + mb];
        auto name = [&](OpType t) { return op_short(Op{t, mb, c}); };
        if (p[kF] < 0) out.push_back(at_stage(st, name(OpType::F) + " is missing"));
        if (p[kBW] >= 0 && (p[kB] >= 0 || p[kW] >= 0)) {
          int other = p[kB] >= 0 ? p[kB] : p[kW];
          out.push_back(at(st, other, ops[other], op_short(ops[other]) + " duplicates work of " + name(OpType::BW) +
                                                      " (op " + std::to_string(p[kBW]) + "), which is B and W fused"));
          continue;
        }
        if (p[kBW] < 0 && p[kB] < 0) {
          out.push_back(at_stage(st, name(OpType::B) + " (or " + name(OpType::BW) + ") is missing"));
        } else if (p[kB] >= 0 && p[kW] < 0) {
          out.push_back(at_stage(st, name(OpType::W) + " is missing (its B is op " + std::to_string(p[kB]) + ")"));
        }
        int back = p[kBW] >= 0 ? p[kBW] : p[kB];
        if (p[kF] >= 0 && back >= 0 && back < p[kF])
          out.push_back(at(st, back, ops[back], op_short(ops[back]) + " before its F (op " + std::to_string(p[kF]) + ")"));
        if (p[kB] >= 0 && p[kW] >= 0 && p[kW] < p[kB])
          out.push_back(at(st, p[kW], ops[p[kW]], "W before its B (op " + std::to_string(p[kB]) + ")"));
      }
    }
  }
  return out;
}

std::vector<Diag> validate_memory(const Schedule& s, const Problem& pr) {
  std::vector<Diag> out;
  if (!pr.mem_limit) return out;
  Mem limit = *pr.mem_limit;
  std::string limit_text = format_quanta(limit);
  if (!pr.mem_limit_spec.empty() && pr.mem_limit_spec.back() == 'p') limit_text += " = " + pr.mem_limit_spec;
  for (int st = 0; st < s.p; ++st) {
    Mem now = 0;
    for (int i = 0; i < static_cast<int>(s.stages[st].size()); ++i) {
      now += memory_delta(s.stages[st][i], st, pr);
      if (now > limit) {
        out.push_back(at(st, i, s.stages[st][i], "activation memory reaches " + format_quanta(now) +
                                                     ", over the limit " + limit_text));
        break;
      }
    }
  }
  return out;
}

std::vector<Diag> validate(const Schedule& s, const Problem& pr, const std::string& file) {
  std::vector<Diag> out = validate_structure(s, pr);
  if (out.empty()) {
    out = validate_memory(s, pr);
    simulate_timeline(s, pr, &out);
  }
  for (Diag& d : out) d.file = file;
  return out;
}

}  // namespace zbpp
