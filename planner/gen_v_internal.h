// Helpers the V-shape files share (gen_v_blocks.cpp, gen_v_greedy.cpp, gen_v_zb.cpp, search_v.cpp;
// the polish and the knobs are gen_v_polish.cpp's): not an interface.
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"
#include "planner/deadline.h"
#include "planner/gen_v.h"

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

/// Sweeps of the swap polish; later sweeps rarely find more.
inline constexpr int kSwapPasses = 4;
/// Every knob combination of the greedy at one budget.
std::vector<VGreedyOptions> knobs_at(int in_flight);
/// The largest peak activation memory of any stage.
Mem peak_memory_of(const Schedule& s, const Problem& pr);
/// `pr` with every stage's limit lowered to `s`'s largest stage peak: a polish of `s` within it never
/// takes more memory than `s` does.
Problem within_own_peak(const Schedule& s, const Problem& pr);
/// Hill climbing by swaps of neighbouring ops (the paper's reordering, done on exact times): keeps a
/// swap that lowers `cost_kind` and keeps the memory limit; at most `passes` sweeps over all stages,
/// and about kPolishWork simulated ops in all; stops at `deadline` with the swaps kept so far.
/// False where the deadline stopped it.
bool improve_by_swaps(Schedule* s, const Problem& pr, Cost cost_kind, int passes, const Deadline& deadline = {});

}  // namespace zbpp
