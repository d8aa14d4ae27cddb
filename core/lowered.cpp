// Facts about lowered schedules that every reader needs (see lowered.h).
#include "core/lowered.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "core/deps.h"

namespace zbpp {

StateChain state_chain(const Schedule& s) {
  VirtualStageMap map(s.placement);
  // (virtual stage of the stage's first op of `type`, stage), over the stages.
  auto first = [&](OpType type) {
    std::vector<std::pair<int, int>> out;
    for (int st = 0; st < s.p; ++st) {
      int vs = -1;
      for (const Op& op : s.stages[st])
        if (op.type == type || (type == OpType::B && op.type == OpType::BW)) {
          vs = map.vs(st, op.chunk);
          break;
        }
      out.push_back({vs, st});
    }
    return out;
  };
  StateChain chain;
  auto state = first(OpType::F), backward = first(OpType::B);
  std::sort(state.begin(), state.end());
  for (const auto& [vs, st] : state) chain.state.push_back(st);
  std::sort(backward.rbegin(), backward.rend());
  chain.verdict.push_back(chain.state.back());
  for (const auto& [vs, st] : backward)
    if (st != chain.state.back()) chain.verdict.push_back(st);
  auto link = [&](const std::vector<int>& order, std::vector<int>* from, std::vector<int>* to) {
    from->assign(s.p, -1);
    to->assign(s.p, -1);
    for (size_t k = 0; k + 1 < order.size(); ++k) (*to)[order[k]] = order[k + 1], (*from)[order[k + 1]] = order[k];
  };
  link(chain.state, &chain.state_from, &chain.state_to);
  link(chain.verdict, &chain.verdict_from, &chain.verdict_to);
  return chain;
}

Schedule compute_projection(const Schedule& s) {
  Schedule out = s.without_ops();
  out.level = Level::kCompute;
  for (size_t st = 0; st < s.stages.size(); ++st) {
    size_t n = 0;
    for (const Op& op : s.stages[st]) n += is_compute(op.type);
    auto& compute = out.stages[st];
    compute.reserve(n);
    for (const Op& op : s.stages[st])
      if (is_compute(op.type)) compute.push_back({op.type, op.mb, op.chunk, -1, -1});
  }
  return out;
}

std::vector<int> slots_per_stage(const Schedule& lowered) {
  std::vector<int> out;
  for (const auto& ops : lowered.stages) {
    int most = 0;
    for (const Op& op : ops) most = std::max(most, op.slot + 1);
    out.push_back(most);
  }
  return out;
}

}  // namespace zbpp
