// V-shape schedules at a chosen memory (Qi et al. 2024, "Pipeline Parallelism with Controllable
// Memory"): two chunks per stage placed [r, 2p-1-r]. The paper's V-Min and V-Half repeat one
// building block per microbatch every 6 op slots; the block's lifespan on a stage (first F to last
// B, in slots) over 6 is its activation memory: about 4p/6 and 6p/6 chunk activations, 1/3 and 1/2
// of 1F1B's 2p. V-ZB keeps 1F1B's memory. Our V-ZB and the V search add a greedy list scheduler
// under a per-stage memory budget, the authors' V-ZB built round by round and their family of
// blocks for the memories in between, beside the handcrafted orders. Defined in gen_v_blocks.cpp
// (blocks, as they are and reordered, and the family), gen_v_greedy.cpp (the greedy),
// gen_v_rounds.cpp (V-ZB round by round), gen_v_zb.cpp (V-ZB, the best of them), gen_v_polish.cpp
// (the swap polish and the greedy's knobs), search_v.cpp (the searches).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/ir.h"
#include "core/problem.h"
#include "planner/deadline.h"
#include "planner/search_heuristic.h"

namespace zbpp {

/// The building blocks of the paper: V-Min (~1/3 of 1F1B's activation memory) and V-Half (~1/2).
enum class VBlock { kMin, kHalf };

/// The block repeated for microbatches 0..m-1; each stage's ops in slot order, W's in the free slots
/// after their B's (first in, first out). Needs problem.chunks == 2.
Schedule generate_v_block(const Problem& problem, VBlock block);

/// The same block reordered as the paper does (planner/gen_v_blocks.cpp): on a grid of unit
/// slots, each op of the warm-up and of the cool-down moves to the earliest free slot after what
/// it waits for where its stage's peak memory stays within the block's, first with the W's, then
/// with them taken out and put back into the free slots after their B's. Same memory as the block
/// on the paper's unit model; timed by the exact simulator like any order.
Schedule generate_v_block_reordered(const Problem& problem, VBlock block);

/// The blocks of the authors' memory-controllable family (stage 0's slots for the four kinds, two
/// uniform shifts from stage to stage and where the shift changes; planner/gen_v_blocks.cpp), each
/// repeated for microbatches 0..m-1 on the slot grid: every distinct block whose peak memory on the
/// grid is within `limit` (and each stage's within its own limit in `problem`, where it has one:
/// "within `limit`" below means both), in three forms, named by the block and the form ("block 0235 +3x5 +1,
/// steady phase too, cool-down laid out"): with its warm-up and cool-down laid out as the authors'
/// search lays them out and its free slots filled; and reordered as generate_v_block_reordered
/// does, with its steady phase kept or free to move, then the authors' cool-down laid out after
/// where that keeps within `limit`. Forms that end over `limit` and orders met before are left out.
/// How a block of the family was laid out (the V search polishes each form's best apart).
enum class VBlockForm { kAsTheirs, kSteadyKept, kSteadyFree };
struct VFamilyMember {
  std::string name;
  VBlockForm form;
  Schedule schedule;
};
/// Past `deadline` no further block is made (*made counts those that were, of *blocks); `ticker`
/// says how far it got. `take` gets each member as it is made (the search keeps a few, so the
/// family is never held whole: thousands of schedules at p = 32).
void for_each_v_block(const Problem& problem, Mem limit, const std::function<void(VFamilyMember&&)>& take,
                      const Deadline& deadline = {}, int* made = nullptr, int* blocks = nullptr,
                      ProgressTicker* ticker = nullptr);
/// Every member, in the order made.
std::vector<VFamilyMember> generate_v_block_family(const Problem& problem, Mem limit, const Deadline& deadline = {},
                                                   int* made = nullptr, int* blocks = nullptr,
                                                   ProgressTicker* ticker = nullptr);

/// Which of a ready B and a ready F the greedy runs first.
enum class VOrder {
  kBFirst,     ///< the B (frees memory, shortens the microbatch's path)
  kFFirst,     ///< the F (feeds the stages after it sooner)
  kAlternate,  ///< the other kind than the stage's last F or B (1F1B's steady state)
};

/// The greedy's knobs (the V search tries a grid of them).
struct VGreedyOptions {
  int in_flight = 0;         ///< at most this many chunk activations (M_B of a chunk) held per stage
  bool deep_first = true;    ///< of two ready F's, run chunk 1's (it finishes a microbatch sooner)
  bool w_in_gaps_only = false;  ///< run a W only when the next op is at least T_W away (or memory is full)
  bool w_after_b = false;    ///< run each W right after its B (least memory, no gap filling)
  VOrder order = VOrder::kBFirst;
  bool reserve_all = false;  ///< admit a microbatch only with room for every admitted one's chunk-1 F
  std::string name() const;  ///< e.g. "in-flight 12,deep-first"
};

/// Event-driven list scheduling: each stage, when free, runs its earliest ready B, else a ready F
/// that keeps within the budget (a new microbatch is admitted only with room left for its chunk-1
/// F), else a pending W; the budget is the smaller of the problem's limit
/// and in_flight chunk activations. Nothing (with *why) when in_flight < 2 or the problem's limit
/// leaves no room for one microbatch's two chunks.
/// Past `deadline` the run stops unfinished (nothing, and *why is kGreedyStopped).
std::optional<Schedule> generate_v_greedy(const Problem& problem, const VGreedyOptions& options, std::string* why,
                                          const Deadline& deadline = {});

/// The same greedy on any placement whose stages hold their chunks in rising virtual-stage order
/// (V, interleaved); a microbatch is admitted only with room left for its later chunks' F's.
/// With more than 2 chunks it may stall (nothing, with *why).
inline constexpr const char* kGreedyStopped = "the time limit stopped the greedy";
std::optional<Schedule> generate_greedy_on(const Problem& problem, const std::vector<std::vector<int>>& placement,
                                           const VGreedyOptions& options, std::string* why,
                                           const Deadline& deadline = {});

/// The authors' V-ZB (their repository's zbv.py, read for its method; this is our own code): each
/// stage (last first) fills its wait for its first chunk-1 F with chunk-0 F's on the stages up to
/// it, keeping room for 2i+2 activations on stage i; then 2m rounds in which every stage runs one
/// B and one F, each after the W's that end within its wait, and one W more where the wait left is
/// more than the largest stage bubble so far allows (before a chunk-0 B always; before a chunk-1 B
/// or an F as fill_b and fill_f say). Rerun while the largest stage bubble falls, each stage then
/// allowed the largest bubble of the run before less its own. At 1F1B's memory (2p chunk
/// activations per stage); nothing, with *why, where a step finds its input or its memory missing
/// (m below about 2p, or per-stage times that put the rounds out of step).
struct VRoundsOptions {
  bool fill_f = true;
  bool fill_b = true;
};
std::optional<Schedule> generate_v_zb_rounds(const Problem& problem, VRoundsOptions options, std::string* why);

/// V-ZB at 1F1B's activation memory (at most 2p chunk activations on every stage): the best by span
/// of the round-by-round V-ZB's four options, the greedy's knobs at that budget and the ZB-V and
/// DualPipe-V orders, then polished by swaps of neighbouring ops within its peak, so never worse
/// than any of them where it keeps to that memory. Nothing, with the reason in *why, only when no candidate keeps to it.
/// Past `deadline` its polish stops (with the swaps made so far).
std::optional<Schedule> generate_v_zb_best(const Problem& problem, std::string* why, const Deadline& deadline = {});

/// The V search (--method heuristic with 2 chunks, V placement): the greedy over every budget from
/// 2 chunk activations up to what the memory limit allows (at most 4p), and its knobs; V-Min,
/// V-Half, V-ZB, ZB-V and DualPipe-V join as seeds where they fit. Ranked as search_heuristic ranks.
/// Past `deadline` it takes no new candidate and polishes nothing more, and returns the best so
/// far (SearchResult::cut says what it left out). `progress` gets a line a second while it runs.
std::optional<SearchResult> search_v(const Problem& problem, std::vector<Diag>* diags, Cost cost = Cost::kSpan,
                                     const CostFn& true_cost = {}, const Deadline& deadline = {},
                                     const std::function<void(const std::string&)>& progress = {});

/// The search on the interleaved placement (stage s holds virtual stages s, s+p, ...; any
/// problem.chunks >= 2): the greedy over every budget up to what the memory limit allows (at most
/// 2p per chunk) and its knobs, with 1F1B-I (and 1F1B-I with its backwards split) as seeds where
/// m is a multiple of p, so never worse than 1F1B-I at its memory. Ranked as search_v.
std::optional<SearchResult> search_interleaved(const Problem& problem, std::vector<Diag>* diags,
                                               Cost cost = Cost::kSpan, const CostFn& true_cost = {},
                                               const Deadline& deadline = {},
                                               const std::function<void(const std::string&)>& progress = {});

}  // namespace zbpp
