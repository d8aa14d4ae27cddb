// The ILP of appendix G, solved by COIN-OR CBC and warm-started from a heuristic schedule: it
// searches the op order of every stage for the smallest span under the memory limit, and reports
// how far the result may still be from optimal (CBC's lower bound).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/diag.h"
#include "planner/ir.h"
#include "planner/problem.h"

namespace zbpp {

struct IlpOptions {
  double seconds = 10;  ///< CBC's time limit; the best schedule found by then is kept
};

struct IlpResult {
  Schedule schedule;            ///< never worse than the warm start
  Ticks span = 0;               ///< exact simulated span of `schedule`
  Ticks warm_span = 0;          ///< the warm start's span
  double lower_bound = 0;       ///< CBC's bound on the optimal span, in time units
  bool proven_optimal = false;
  int binaries = 0;             ///< order variables in the model
  std::string summary() const;  ///< "span 1152.6 (warm start 1160.2), lower bound 1140.1, gap 1.1 %, ..."
};

/// Refines `warm` (one chunk per stage; F's, B's and W's each in microbatch order on every stage,
/// as the heuristic and the handcrafted schedules place them; BW is split into B then W). F's,
/// B's and W's keep microbatch order, so W still accumulates in microbatch order (bit-identical
/// training). Nothing, with a diagnostic, when the problem is not of that shape or CBC fails.
std::optional<IlpResult> refine_ilp(const Problem& problem, const Schedule& warm, const IlpOptions& options,
                                    std::vector<Diag>* diags);

}  // namespace zbpp
