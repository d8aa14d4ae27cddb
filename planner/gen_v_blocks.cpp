// The paper's V-Min and V-Half: one building block repeated per microbatch (see gen_v.h).
#include <algorithm>
#include <array>
#include <deque>

#include "planner/gen_v.h"
#include "planner/gen_v_internal.h"

namespace zbpp {

// The block's slots on stage i for F chunk 0, F chunk 1, B chunk 1, B chunk 0 of microbatch 0
// (microbatch j adds 6j). Every hop of a microbatch is at least one slot later than the one it
// waits for; the extra interval keeps the four ops of a stage on distinct slots modulo 6.
std::array<int, 4> v_block_slots(VBlock block, int p, int i) {
  if (block == VBlock::kMin) {
    // Every hop one slot: the lifespan on stage i is 4p-1-2i (chunk 0) + 2i+1 (chunk 1) = 4p slots.
    const int gap = p % 3 == 0 ? 2 : 0;
    return {i, 2 * p - 1 - i, 2 * p + gap + i, 4 * p + gap - 1 - i};
  }
  // Chunk 0's F's and chunk 1's B's two slots a hop: lifespan about 6p slots.
  const int gap = p % 2 == 0 ? 3 : 0;
  return {2 * i, 3 * p - 2 - i, 3 * p + gap + 2 * i - 1, 6 * p + gap - 2 - i};
}

namespace {

constexpr int kSlotsPerMicrobatch = 6;  // F, F, B, B, W, W of the two chunks

}  // namespace

Schedule generate_v_block(const Problem& pr, VBlock block) {
  Schedule s = empty_schedule_on(pr, v_shape_placement(pr.p), block == VBlock::kMin ? "v-min" : "v-half");
  const int p = pr.p, m = pr.m;
  for (int i = 0; i < p; ++i) {
    struct Slotted {
      long long slot;
      int order;  // ties (slots equal modulo the block) keep the block's op order
      Op op;
    };
    std::vector<Slotted> fb;
    fb.reserve(4 * static_cast<size_t>(m));
    const auto slots = v_block_slots(block, p, i);
    const std::array<Op, 4> kinds = {Op{OpType::F, 0, 0}, Op{OpType::F, 0, 1}, Op{OpType::B, 0, 1},
                                     Op{OpType::B, 0, 0}};
    for (int j = 0; j < m; ++j)
      for (int k = 0; k < 4; ++k) {
        Op op = kinds[k];
        op.mb = j;
        fb.push_back({slots[k] + static_cast<long long>(kSlotsPerMicrobatch) * j, k, op});
      }
    std::sort(fb.begin(), fb.end(),
              [](const Slotted& a, const Slotted& b) { return a.slot != b.slot ? a.slot < b.slot : a.order < b.order; });
    // W's take the free slots after their B's, first in first out; the rest follow the last B.
    auto& ops = s.stages[i];
    ops.reserve(6 * static_cast<size_t>(m));
    std::deque<Op> pending;
    long long slot = fb.empty() ? 0 : fb.front().slot;
    for (const auto& x : fb) {
      for (; slot < x.slot && !pending.empty(); ++slot) {
        ops.push_back(pending.front());
        pending.pop_front();
      }
      slot = std::max(slot, x.slot + 1);
      ops.push_back(x.op);
      if (x.op.type == OpType::B) pending.push_back({OpType::W, x.op.mb, x.op.chunk});
    }
    ops.insert(ops.end(), pending.begin(), pending.end());
  }
  return s;
}

}  // namespace zbpp
