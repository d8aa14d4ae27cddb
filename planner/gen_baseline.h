// Baseline schedule generators: 1F1B, interleaved 1F1B (Megatron's order), and the paper's
// handcrafted ZB-H1 and ZB-H2 (§2, Figure 3). Each takes a checked Problem and returns a
// compute-level Schedule; it does not check the memory limit (validate() does).
#pragma once

#include <optional>
#include <string>

#include "core/ir.h"
#include "core/problem.h"

namespace zbpp {

/// 1F1B: stage s runs min(p-s-1, m) warm-up F's, then F and fused BW alternately, then the rest.
Schedule generate_1f1b(const Problem& problem);
/// Interleaved 1F1B with problem.chunks chunks per stage, placement [s, s+p, ...]. Megatron's
/// order needs m to be a multiple of p: otherwise returns nothing and sets *err.
std::optional<Schedule> generate_1f1b_interleaved(const Problem& problem, std::string* err);
/// ZB-H1: 1F1B's F/B order with B and W split and stage s's W delayed by s B's (peak p*M_B).
Schedule generate_zb_h1(const Problem& problem);
/// ZB-H2: 2(p-s)-1 warm-up F's and W delayed by 2s B's, so every bubble is filled (peak (2p-1)*M_B).
Schedule generate_zb_h2(const Problem& problem);

/// ZB-V (the authors' follow-up): two chunks per stage placed [s, 2p-1-s], so the first and last
/// virtual stages share stage 0. Needs problem.chunks == 2 (times and memory per chunk). Stage r
/// runs 2(p-r)-1 F's of chunk 0, then r pairs (F chunk 1, F chunk 0), then p-r (F, B, W) of
/// chunk 1; then repeats F B W of chunk 0 and of chunk 1; the tail runs B's and then the held W's.
/// Peak memory stays near p * M_B of a whole stage, as 1F1B.
Schedule generate_zb_v_handcrafted(const Problem& problem);

/// DualPipe-V (DeepSeek's DualPipe folded into a V, as PyTorch's ScheduleDualPipeV orders it): two
/// chunks per stage placed [r, 2p-1-r], as ZB-V, and m >= 2p (otherwise nothing, with *err).
/// Stage r runs 2(p-1-r) F's of chunk 0; r+1 pairs (F chunk 0, F chunk 1); p-1-r times (B, W, F)
/// of chunk 1; then the steady state, m-2p+r+1 times the pairs (F chunk 0, BW chunk 1) and
/// (F chunk 1, BW chunk 0) -- DualPipe overlaps the two ops of a pair, this model runs them one
/// after the other; p-1-r times (BW chunk 1; F chunk 1, BW chunk 0); r+1 times the backwards of
/// chunk 1 and chunk 0, fused BW's in the first half and split B's (W held) in the second; p-1-r
/// times (a held W, B chunk 0); the r+1 held W's. Held W's run first in, first out, so every
/// stage's W's and BW's follow microbatch order.
std::optional<Schedule> generate_dualpipe_v(const Problem& problem, std::string* err);

/// One stage's F/B/W order: `warmup` F's, then repeatedly B, a W when more than `w_delay` W's are
/// pending, and the next F; once B's run out, the remaining W's. Building block of ZB-H1/H2.
std::vector<Op> fbw_order(int m, int warmup, int w_delay, int chunk = 0);

}  // namespace zbpp
