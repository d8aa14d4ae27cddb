// Helpers the V-shape files share (gen_v_blocks.cpp, gen_v_greedy.cpp, search_v.cpp): not an interface.
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "core/problem.h"

namespace zbpp {

inline Schedule empty_schedule_on(const Problem& pr, const std::vector<std::vector<int>>& placement,
                                  std::string method) {
  Schedule s;
  s.p = pr.p;
  s.m = pr.m;
  s.chunks = placement.empty() ? 1 : static_cast<int>(placement[0].size());
  s.placement = placement;
  s.method = std::move(method);
  s.stages.resize(pr.p);
  return s;
}

inline constexpr Ticks kNever = std::numeric_limits<Ticks>::max() / 4;

}  // namespace zbpp
