// The V on a grid of unit slots: every op of the two chunks in a slot of its stage, one op per
// slot, after the slots of what it waits for; the passes that move ops to earlier slots within the
// stage's peak memory, lay out the warm-up and cool-down as the authors' search does, and fill the
// holes. The exact simulator then times the order the slots give. gen_v_blocks.cpp builds the
// paper's blocks and the authors' family on it. Not an interface.
#pragma once

#include <array>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "core/problem.h"

namespace zbpp::v_slots {

// Op kinds in a block's slot order: F chunk 0, F chunk 1, B chunk 1, B chunk 0, W chunk 1, W chunk 0.
enum Kind { kF0, kF1, kB1, kB0, kW1, kW0, kKinds };
constexpr int kFB = 4;  // the kinds before the W's
constexpr int kSlotsPerMicrobatch = 6;  // F, F, B, B, W, W of the two chunks

// The op a kind of slot holds for microbatch `mb`.
Op op_of(int kind, int mb);

// Every op of the V on a grid of unit slots, one op per slot and stage. An op's slot is after the
// slots of what it waits for; the exact simulator times the order the slots give.
class SlotGrid {
 public:
  // first[s]: the slots of microbatch 0's F chunk 0, F chunk 1, B chunk 1, B chunk 0 on stage s.
  SlotGrid(const Problem& pr, const std::vector<std::array<int, 4>>& first);

  // Moves ops to the earliest free slot after what they wait for, where the peak memory of the
  // stage stays within the largest stage peak before the pass; in global slot order. With
  // keep_steady, the steady phase (from stage 0's first B of chunk 0 to its last F of chunk 0)
  // stays as it is; with_ws false: the W's are taken out first (each free slot then runs the
  // oldest pending W) and the warm-up stays too.
  void squeeze(bool with_ws, bool keep_steady = true);

  // Each stage's ops before its first B of chunk 0 laid out as the authors' search does (with
  // peak = the largest stage's count of chunk activations held, at most 2p): the F's of chunk 0
  // while the stage waits for its first F of chunk 1 (at most 2(p-1-i) on stage i), then pairs of
  // F chunk 0, F chunk 1 (i+1 of them), then B, W, F triples (chunk 1's F while any is left),
  // with at most min(i+1, peak/2) F's of chunk 1 and peak less those of chunk 0 before the triples.
  // Then every op at the earliest slot its order and inputs allow. False where that order
  // deadlocks (nothing changed then).
  bool lay_out_warm_up();

  // The cool-down as the authors' search lays it out: after its last F of chunk 1, stage i takes
  // its last (peak+1)/2 B's of chunk 0 and its last min(i+1, peak - those) B's of chunk 1 (peak:
  // the largest stage count of chunk activations held, at most 2p) out with enough W's from its
  // end, and puts them back two slots apart, as tight as stage 0's last F of chunk 1 allows (chunk
  // 1's from just after it, chunk 0's from 2p-i slots after it), each W into the first free slot
  // after the last W left (chunk 1's first), the rest at the end; every W then of the oldest B
  // without one, every op at the earliest slot its order allows. False where the layout meets an
  // op or deadlocks (nothing changed then).
  bool lay_out_cool_down();

  // Every free slot, first to last (all stages at each slot), takes the nearest later op of its
  // stage that may run there: the first of its kind after the slot, its inputs in earlier slots,
  // the stage's memory within the largest stage peak before the pass (the W's in their slots).
  void fill_holes();

  // Stage s's peak (the W's in the slots they hold).
  Mem stage_peak(int s) const { return peak(s, true); }

  Schedule schedule(const std::string& method) const;

 private:
  int cell(int s, long long t) const { return t < static_cast<long long>(cells_[s].size()) ? cells_[s][t] : -1; }
  void set(int s, int k, int j, long long t);
  void clear(int s, int k, int j);

  // The first slot after everything the op waits for: its input (from the stage before it along
  // the microbatch's path, or this stage's previous kind at the V's turns), the previous kind of
  // the same microbatch here (the block's order), the previous microbatch of its kind, its B (W's).
  long long earliest(int s, int k, int j) const;

  // The stage's peak activation memory in slot order; without explicit W's, each free slot runs
  // the oldest pending W.
  Mem peak(int s, bool explicit_ws) const { return walk_peak(s, explicit_ws, std::numeric_limits<Mem>::max()); }
  // Whether that peak is over `limit`: the walk stops at the first slot over it.
  bool peak_exceeds(int s, bool explicit_ws, Mem limit) const { return walk_peak(s, explicit_ws, limit) > limit; }
  // The peak, or the first level over `stop`.
  Mem walk_peak(int s, bool explicit_ws, Mem stop) const;

  // The W's into the free slots after their B's, first in first out; the rest after the last op.
  void put_ws(int s);

  // The authors' peak: the largest count of chunk activations a stage holds (its F's less its
  // W's so far, whatever the problem's memory per op), at most 2p.
  int held_units() const;

  // Every op at the earliest slot after the op before it on its stage and after its input (each
  // stage's ops in the order given). False, with nothing changed, where the order deadlocks.
  bool place_in_order(const std::vector<std::vector<std::pair<int, int>>>& orders);

  // Each stage's memory walk without explicit W's (each free slot runs the oldest pending W), kept
  // so that a try (one F or B moved to an earlier free slot) walks only from its new slot until
  // the walk meets the kept one again: where the memory and the number of pending W's agree past
  // the op's old slot, the rest is the same (every W of the stage frees the same memory). Exactly
  // what walk_peak says of the moved stage, without walking all of it per try.
  class Walks;

  const Problem& pr_;
  int p_, m_;
  std::vector<std::array<std::vector<long long>, kKinds>> slot_;  // [stage][kind][microbatch]
  std::vector<std::vector<int>> cells_;                           // [stage][slot]: kind * m + mb, or -1
};

}  // namespace zbpp::v_slots
