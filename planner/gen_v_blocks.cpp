// The paper's V-Min and V-Half: one building block repeated per microbatch, as it is or with its
// warm-up and cool-down reordered; and the authors' family of blocks, reordered and with their
// cool-down laid out (see gen_v.h). All on the grid of unit slots (gen_v_slots.h).
#include <array>
#include <cstdint>
#include <set>

#include "planner/gen_v.h"
#include "planner/gen_v_internal.h"
#include "planner/gen_v_slots.h"

namespace zbpp {

namespace {

using v_slots::kB1;
using v_slots::kF0;
using v_slots::kF1;
using v_slots::kB0;
using v_slots::kFB;
using v_slots::SlotGrid;

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

std::vector<std::array<int, 4>> slots_of(VBlock block, int p) {
  std::vector<std::array<int, 4>> out;
  for (int s = 0; s < p; ++s) out.push_back(block_slots(block, p, s));
  return out;
}


// The family of blocks the authors' search runs over ("Pipeline Parallelism with Controllable
// Memory", section 3.1 and its repository's v_auto_schedule.py): stage 0 runs F chunk 0 in slot 0
// of 6 and F chunk 1, B chunk 1, B chunk 0 in distinct slots 1..5; each next stage shifts F chunk
// 0 and B chunk 1 by k slots and F chunk 1 and B chunk 0 back by one (modulo 6), k = k0 for the
// first len0 stages and k1 <= k0 after; a shift that puts two kinds in one slot leaves the block
// out. Microbatch 0's ops then take, along its path (F chunk 0 down the stages, F chunk 1 back up,
// B chunk 1 down, B chunk 0 up), the first slot of their kind after the op before them.
struct FamilyBlock {
  std::string name;                        // "block 0235 +3x5 +1": stage 0's slots, the shifts
  std::vector<std::array<int, 4>> first;  // [stage]: microbatch 0's slots, as block_slots
};

std::vector<FamilyBlock> block_family(int p) {
  std::set<std::vector<std::array<int, 4>>> seen;  // the same slots modulo 6 from other shifts
  std::vector<FamilyBlock> out;
  for (int a = 1; a < 6; ++a)
    for (int b = 1; b < 6; ++b)
      for (int c = 1; c < 6; ++c) {
        if (a == b || a == c || b == c) continue;
        for (int k0 = 1; k0 < 6; ++k0)
          for (int k1 = 1; k1 <= k0; ++k1)
            for (int len0 = 1; len0 < std::max(p, 2); ++len0) {
              std::vector<std::array<int, 4>> rows = {{0, a, b, c}};
              bool clash = false;
              for (int i = 1; i < p && !clash; ++i) {
                const int k = i <= len0 ? k0 : k1;
                std::array<int, 4> row{};
                for (int kind = 0; kind < kFB; ++kind) {
                  row[kind] = (rows.back()[kind] + (kind == kF0 || kind == kB1 ? k : -1) + 6) % 6;
                  for (int other = 0; other < kind; ++other) clash = clash || row[other] == row[kind];
                }
                rows.push_back(row);
              }
              if (clash || !seen.insert(rows).second) continue;
              FamilyBlock block;
              block.name = "block 0" + std::to_string(a) + std::to_string(b) + std::to_string(c) + " +" +
                           std::to_string(k0) + "x" + std::to_string(len0) + " +" + std::to_string(k1);
              block.first.resize(p);
              long long at = 0;
              auto take = [&](int kind, int s) {
                at += (rows[s][kind] - at % 6 + 6) % 6;
                block.first[s][kind] = static_cast<int>(at++);
              };
              for (int s = 0; s < p; ++s) take(kF0, s);
              for (int s = p - 1; s >= 0; --s) take(kF1, s);
              for (int s = 0; s < p; ++s) take(kB1, s);
              for (int s = p - 1; s >= 0; --s) take(kB0, s);
              out.push_back(std::move(block));
            }
      }
  return out;
}

}  // namespace

void for_each_v_block(const Problem& pr, Mem limit, const std::function<void(VFamilyMember&&)>& take,
                      const Deadline& deadline, int* made, int* blocks, ProgressTicker* ticker) {
  std::set<uint64_t> seen;  // blocks that end in the same order, once (by a 64-bit FNV-1a hash)
  auto keep = [&](std::string name, VBlockForm form, Schedule s) {
    uint64_t h = 14695981039346656037ull;
    for (const auto& ops : s.stages)
      for (const Op& op : ops)
        for (int v : {static_cast<int>(op.type), op.mb, op.chunk, -1}) h = (h ^ static_cast<uint32_t>(v)) * 1099511628211ull;
    if (seen.insert(h).second) take({std::move(name), form, std::move(s)});
  };
  // Every stage's peak on the grid within `limit` and within its own limit (limits per stage).
  auto fits = [&](const SlotGrid& g) {
    for (int s = 0; s < pr.p; ++s) {
      const Mem peak = g.stage_peak(s);
      if (peak > limit || (pr.limit(s) && peak > *pr.limit(s))) return false;
    }
    return true;
  };
  const std::vector<FamilyBlock> family = block_family(pr.p);
  if (blocks) *blocks = static_cast<int>(family.size());
  if (made) *made = 0;
  int done = 0;
  for (const FamilyBlock& block : family) {
    if (deadline.passed()) break;
    if (made) ++*made;
    if (ticker)
      ticker->tick([&](double seconds) {
        return "V-shape search: the family of blocks, " + std::to_string(done) + " of " + std::to_string(family.size()) +
               " made, " + std::to_string(seen.size()) + " distinct kept (" + std::to_string(static_cast<int>(seconds)) +
               " s)";
      });
    ++done;
    SlotGrid grid(pr, block.first);
    if (!fits(grid)) continue;
    // As the authors' search does: warm-up and cool-down laid out, then the free slots filled.
    SlotGrid theirs = grid;
    if (theirs.lay_out_warm_up() && theirs.lay_out_cool_down()) {
      theirs.fill_holes();
      if (fits(theirs)) keep(block.name + ", warm-up and cool-down laid out", VBlockForm::kAsTheirs, theirs.schedule("v-block"));
    }
    // Reordered as V-Min and V-Half are, and again with the steady phase free to move too (which
    // wins where memory is tight); then the authors' cool-down laid out, where that keeps within
    // the limit (else as the reordering left it).
    for (bool keep_steady : {true, false}) {
      SlotGrid g = grid;
      g.squeeze(true, keep_steady);
      g.squeeze(false, keep_steady);
      const std::string name = block.name + (keep_steady ? "" : ", steady phase too");
      const VBlockForm form = keep_steady ? VBlockForm::kSteadyKept : VBlockForm::kSteadyFree;
      SlotGrid laid = g;
      if (laid.lay_out_cool_down()) {
        laid.fill_holes();
        if (fits(laid)) {
          keep(name + ", cool-down laid out", form, laid.schedule("v-block"));
          continue;
        }
      }
      // The squeezes keep each stage within the largest stage peak before them, which limits per
      // stage may not allow on every stage.
      if (fits(g)) keep(name, form, g.schedule("v-block"));
    }
  }
}

std::vector<VFamilyMember> generate_v_block_family(const Problem& pr, Mem limit, const Deadline& deadline, int* made,
                                                   int* blocks, ProgressTicker* ticker) {
  std::vector<VFamilyMember> out;
  for_each_v_block(pr, limit, [&](VFamilyMember&& member) { out.push_back(std::move(member)); }, deadline, made, blocks,
                   ticker);
  return out;
}

// The block as it is: each stage's ops in slot order (the exact simulator then runs each as early
// as its inputs allow, the paper's "squeeze").
Schedule generate_v_block(const Problem& pr, VBlock block) {
  return SlotGrid(pr, slots_of(block, pr.p)).schedule(block == VBlock::kMin ? "v-min" : "v-half");
}

Schedule generate_v_block_reordered(const Problem& pr, VBlock block) {
  SlotGrid grid(pr, slots_of(block, pr.p));
  grid.squeeze(true);
  grid.squeeze(false);
  return grid.schedule(block == VBlock::kMin ? "v-min" : "v-half");
}

}  // namespace zbpp
