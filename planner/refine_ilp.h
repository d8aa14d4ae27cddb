// The ILP of appendix G, solved by COIN-OR CBC and warm-started from a heuristic schedule: it
// searches the op order of every stage for the smallest cost under the memory limit, and reports
// how far the result may still be from optimal. The model's cost is a compute cost (simulate.h):
// the longest stage span (the paper's) or the makespan, first op to last op; a true cost (the
// schedule lowered and timed with its optimizer), when given, decides which schedules are kept.
//
// Small problems get the whole model (CBC proves optimality). Larger ones get a large-neighbourhood
// search: the same model with every stage's order fixed outside one time window of the incumbent,
// window after window; each improvement is re-simulated exactly before it is kept. The run stops
// at the time limit, or as soon as the schedule meets a certified lower bound (bounds.h).
//
// The solver lives in a module of its own (libzbpp_ilp.so: refine_ilp.cpp and ilp_model.cpp,
// linked with CBC), which refine_ilp() loads on its first call (ilp_module.cpp). A plan that runs
// no ILP never loads CBC, Clp or the OpenBLAS threads their LAPACK starts, and zbrun links none of
// them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/bounds.h"  // SolveStatus
#include "core/diag.h"
#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"

namespace zbpp {

/// A snapshot of a running refinement, for progress lines.
struct IlpProgress {
  double seconds = 0;   ///< since the refinement started
  Ticks incumbent = 0;  ///< the best cost so far (exact)
  double bound = 0;     ///< the best lower bound so far, in time units
  int windows = 0;      ///< subproblems solved so far
};

struct IlpOptions {
  Cost measure = Cost::kSpan;   ///< what the model minimises: kSpan or kMakespan
  /// When given, a candidate replaces the incumbent only if its true cost is no larger (then by
  /// the model's cost): the schedule returned is never worse than the warm start by it.
  CostFn true_cost;
  double seconds = 10;          ///< wall-clock limit of the whole refinement; the best schedule is kept
  int threads = 1;              ///< CBC threads
  Ticks known_bound = 0;        ///< a certified bound on the model's cost: stop once the schedule meets it
  int full_model_binaries = 150;  ///< solve the whole model when it has at most this many order variables
  int window_ops = 10;          ///< LNS: about this many ops per stage are free in one window
  std::function<void(const IlpProgress&)> progress;  ///< called about once a second (and at the end)
};

/// How the ILP ran: the whole model in one solve, or a large-neighbourhood search window by window.
enum class IlpMode { kFull, kLns };
inline const char* ilp_mode_name(IlpMode mode) { return mode == IlpMode::kFull ? "full" : "lns"; }

/// Every cost below is the model's (`measure`: the span or the makespan).
struct IlpResult {
  Cost measure = Cost::kSpan;   ///< what `cost` and `lower_bound` measure
  Schedule schedule;            ///< never worse than the warm start by the model's cost, or by the true cost when given
  Ticks cost = 0;               ///< exact simulated cost of `schedule`
  Ticks warm_cost = 0;          ///< the warm start's cost
  double lower_bound = 0;       ///< best certified bound on the optimal cost, in time units
  double model_objective = -1;  ///< full model: CBC's objective of the schedule it returned (-1: none)
  bool proven_optimal = false;  ///< the cost meets the bound (or CBC closed the whole model)
  SolveStatus status = SolveStatus::kTimeLimit;  ///< optimal, time limit or local optimum (no window improves)
  IlpMode mode = IlpMode::kFull;
  int binaries = 0;             ///< order variables in the largest model solved
  long nodes = 0;               ///< branch-and-bound nodes, summed over all solves
  int windows = 0;              ///< models solved
  double seconds = 0;           ///< wall time spent
  /// "span 1152.6 (warm start 1160.2), lower bound 1140.1, gap 1.1 %, ..." ("makespan ..." for kMakespan)
  std::string summary() const;
};

/// Refines `warm` (the problem's chunks per stage, in its placement, e.g. the V search's or
/// 1F1B-I's; the F's, B's and W's of each chunk in microbatch order on every stage, as the
/// heuristics and the handcrafted schedules place them; BW is split into B then W) and keeps its
/// placement. F's, B's and W's keep microbatch order, so W still accumulates in microbatch order
/// (bit-identical training); this loses nothing, since microbatches are alike (see docs/ilp.md).
/// Nothing, with a diagnostic, when the warm start is not of that shape or CBC fails.
/// Loads the ILP module if need be (see ilp_module_paths); when it cannot be loaded, nothing, with
/// a diagnostic naming the files tried, the loader's reason and what to do.
std::optional<IlpResult> refine_ilp(const Problem& problem, const Schedule& warm, const IlpOptions& options,
                                    std::vector<Diag>* diags);

/// The module's file name, and where refine_ilp looks for it, in order: beside the running
/// executable (the build tree), then in <executable's directory>/../lib/zbpp (an install).
inline constexpr const char* kIlpModuleFile = "libzbpp_ilp.so";
std::vector<std::string> ilp_module_paths();

/// The module's entry point (extern "C", so dlsym finds it by this name): refine_ilp's work.
using IlpRefineFunction = bool (*)(const Problem& problem, const Schedule& warm, const IlpOptions& options,
                                   std::vector<Diag>* diags, IlpResult* result);
/// Loads the module from the first of `paths` that exists and returns its entry point; nothing,
/// with *why, when none exists or the one found cannot be loaded. Not cached (refine_ilp caches).
std::optional<IlpRefineFunction> load_ilp_module(const std::vector<std::string>& paths, std::string* why);

/// The module and the program pass these types to each other: the module says which layout it was
/// built with, and the loader refuses one built from other headers instead of crashing in it.
inline std::string ilp_module_abi() {
  return "zbpp-ilp 1: Problem " + std::to_string(sizeof(Problem)) + ", Schedule " + std::to_string(sizeof(Schedule)) +
         ", Op " + std::to_string(sizeof(Op)) + ", Diag " + std::to_string(sizeof(Diag)) + ", IlpOptions " +
         std::to_string(sizeof(IlpOptions)) + ", IlpResult " + std::to_string(sizeof(IlpResult)) + ", Timeline " +
         std::to_string(sizeof(Timeline));
}

}  // namespace zbpp
