// The paper's V-Min and V-Half: one building block repeated per microbatch, as it is or with its
// warm-up and cool-down reordered (see gen_v.h).
#include <algorithm>
#include <array>
#include <deque>
#include <tuple>

#include "core/deps.h"
#include "planner/gen_v.h"
#include "planner/gen_v_internal.h"

namespace zbpp {

namespace {

// The block's slots on stage i for F chunk 0, F chunk 1, B chunk 1, B chunk 0 of microbatch 0
// (microbatch j adds 6j). Every hop of a microbatch is at least one slot later than the one it
// waits for; the extra interval keeps the four ops of a stage on distinct slots modulo 6.
std::array<int, 4> block_slots(VBlock block, int p, int i) {
  if (block == VBlock::kMin) {
    // Every hop one slot: the lifespan on stage i is 4p-1-2i (chunk 0) + 2i+1 (chunk 1) = 4p slots.
    const int gap = p % 3 == 0 ? 2 : 0;
    return {i, 2 * p - 1 - i, 2 * p + gap + i, 4 * p + gap - 1 - i};
  }
  // Chunk 0's F's and chunk 1's B's two slots a hop: lifespan about 6p slots.
  const int gap = p % 2 == 0 ? 3 : 0;
  return {2 * i, 3 * p - 2 - i, 3 * p + gap + 2 * i - 1, 6 * p + gap - 2 - i};
}

// Op kinds in a block's slot order: F chunk 0, F chunk 1, B chunk 1, B chunk 0, W chunk 1, W chunk 0.
enum Kind { kF0, kF1, kB1, kB0, kW1, kW0, kKinds };
constexpr int kFB = 4;  // the kinds before the W's
constexpr int kSlotsPerMicrobatch = 6;  // F, F, B, B, W, W of the two chunks

Op op_of(int kind, int mb) {
  switch (kind) {
    case kF0: return {OpType::F, mb, 0};
    case kF1: return {OpType::F, mb, 1};
    case kB1: return {OpType::B, mb, 1};
    case kB0: return {OpType::B, mb, 0};
    case kW1: return {OpType::W, mb, 1};
    default: return {OpType::W, mb, 0};
  }
}

// Every op of the V on a grid of unit slots, one op per slot and stage. An op's slot is after the
// slots of what it waits for; the exact simulator times the order the slots give.
class SlotGrid {
 public:
  SlotGrid(const Problem& pr, VBlock block) : pr_(pr), p_(pr.p), m_(pr.m), slot_(p_), cells_(p_) {
    for (int s = 0; s < p_; ++s) {
      const auto first = block_slots(block, p_, s);
      for (int k = 0; k < kKinds; ++k) slot_[s][k].assign(m_, -1);
      for (int k = 0; k < kFB; ++k)
        for (int j = 0; j < m_; ++j) set(s, k, j, first[k] + static_cast<long long>(kSlotsPerMicrobatch) * j);
      put_ws(s);
    }
  }

  // Moves ops to the earliest free slot after what they wait for, where the peak memory of the
  // stage stays within the largest stage peak before the pass; in global slot order. The steady
  // phase (from stage 0's first B of chunk 0 to its last F of chunk 0) stays as it is; with_ws
  // false: the W's are taken out first (each free slot then runs the oldest pending W) and the
  // warm-up stays too.
  void squeeze(bool with_ws) {
    if (!with_ws)
      for (int s = 0; s < p_; ++s)
        for (int k = kFB; k < kKinds; ++k)
          for (int j = 0; j < m_; ++j) clear(s, k, j);
    Mem limit = 0;
    for (int s = 0; s < p_; ++s) limit = std::max(limit, peak(s, with_ws));
    std::vector<std::tuple<long long, int, int, int>> order;  // slot, stage, kind, microbatch
    for (int s = 0; s < p_; ++s)
      for (int k = 0; k < (with_ws ? kKinds : kFB); ++k)
        for (int j = 0; j < m_; ++j) order.emplace_back(slot_[s][k][j], s, k, j);
    std::sort(order.begin(), order.end());
    int phase = 0;
    for (const auto& [unused, s, k, j] : order) {
      if (phase == 0 && s == 0 && k == kB0) phase = 1;
      if (phase == 1) {
        if (s == 0 && k == kF0 && j == m_ - 1) phase = 2;
        continue;
      }
      if (phase == 0 && !with_ws) continue;
      const long long at = slot_[s][k][j];
      for (long long t = earliest(s, k, j); t < at; ++t) {
        if (cell(s, t) >= 0) continue;
        clear(s, k, j);
        set(s, k, j, t);
        if (peak(s, with_ws) <= limit) break;
        clear(s, k, j);
        set(s, k, j, at);
      }
    }
    if (!with_ws)
      for (int s = 0; s < p_; ++s) put_ws(s);
  }

  Schedule schedule(const std::string& method) const {
    Schedule out = empty_schedule_on(pr_, v_shape_placement(p_), method);
    for (int s = 0; s < p_; ++s) {
      auto& ops = out.stages[s];
      ops.reserve(kKinds * static_cast<size_t>(m_));
      for (int id : cells_[s])
        if (id >= 0) ops.push_back(op_of(id / m_, id % m_));
    }
    return out;
  }

 private:
  int cell(int s, long long t) const { return t < static_cast<long long>(cells_[s].size()) ? cells_[s][t] : -1; }
  void set(int s, int k, int j, long long t) {
    if (t >= static_cast<long long>(cells_[s].size())) cells_[s].resize(t + 1 + kSlotsPerMicrobatch * m_, -1);
    cells_[s][t] = k * m_ + j;
    slot_[s][k][j] = t;
  }
  void clear(int s, int k, int j) {
    if (slot_[s][k][j] >= 0) cells_[s][slot_[s][k][j]] = -1;
    slot_[s][k][j] = -1;
  }

  // The first slot after everything the op waits for: its input (from the stage before it along
  // the microbatch's path, or this stage's previous kind at the V's turns), the previous kind of
  // the same microbatch here (the block's order), the previous microbatch of its kind, its B (W's).
  long long earliest(int s, int k, int j) const {
    long long after = -1;
    if (j > 0) after = slot_[s][k][j - 1];
    if (k == kW1 || k == kW0) return std::max(after, slot_[s][k == kW1 ? kB1 : kB0][j]) + 1;
    if (k > kF0) after = std::max(after, slot_[s][k - 1][j]);
    const bool down = k == kF0 || k == kB1;  // toward the last stage
    const int from = down ? s - 1 : s + 1;
    if (from >= 0 && from < p_) after = std::max(after, slot_[from][k][j]);
    return after + 1;
  }

  // The stage's peak activation memory in slot order; without explicit W's, each free slot runs
  // the oldest pending W.
  Mem peak(int s, bool explicit_ws) const {
    Mem mem = 0, top = 0;
    std::deque<Op> pending;
    for (int id : cells_[s]) {
      if (id >= 0) {
        const Op op = op_of(id / m_, id % m_);
        mem += memory_delta(op, s, pr_);
        if (!explicit_ws && op.type == OpType::B) pending.push_back({OpType::W, op.mb, op.chunk});
      } else if (!pending.empty()) {
        mem += memory_delta(pending.front(), s, pr_);
        pending.pop_front();
      }
      top = std::max(top, mem);
    }
    return top;
  }

  // The W's into the free slots after their B's, first in first out; the rest after the last op.
  void put_ws(int s) {
    std::deque<std::pair<int, int>> pending;  // kind, microbatch
    long long t = 0;
    for (; t < static_cast<long long>(cells_[s].size()); ++t) {
      const int id = cells_[s][t];
      if (id >= 0) {
        if (id / m_ == kB1 || id / m_ == kB0) pending.emplace_back(id / m_ == kB1 ? kW1 : kW0, id % m_);
      } else if (!pending.empty()) {
        set(s, pending.front().first, pending.front().second, t);
        pending.pop_front();
      }
    }
    for (; !pending.empty(); ++t, pending.pop_front()) set(s, pending.front().first, pending.front().second, t);
  }

  const Problem& pr_;
  int p_, m_;
  std::vector<std::array<std::vector<long long>, kKinds>> slot_;  // [stage][kind][microbatch]
  std::vector<std::vector<int>> cells_;                           // [stage][slot]: kind * m + mb, or -1
};

}  // namespace

// The block as it is: each stage's ops in slot order (the exact simulator then runs each as early
// as its inputs allow, the paper's "squeeze").
Schedule generate_v_block(const Problem& pr, VBlock block) {
  return SlotGrid(pr, block).schedule(block == VBlock::kMin ? "v-min" : "v-half");
}

Schedule generate_v_block_reordered(const Problem& pr, VBlock block) {
  SlotGrid grid(pr, block);
  grid.squeeze(true);
  grid.squeeze(false);
  return grid.schedule(block == VBlock::kMin ? "v-min" : "v-half");
}

}  // namespace zbpp
