// The grid of unit slots (see gen_v_slots.h).
#include "planner/gen_v_slots.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <tuple>

#include "core/deps.h"
#include "planner/gen_v_internal.h"

namespace zbpp::v_slots {

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

class SlotGrid::Walks {
 public:
  explicit Walks(const SlotGrid& g) : stages_(g.p_) {
    for (int s = 0; s < g.p_; ++s) {
      auto& w = stages_[s];
      const size_t n = g.cells_[s].size();
      w.mem_before.resize(n + 1);
      w.queue_before.resize(n + 1);
      w.top_from.resize(n + 1);
      for (int k = 0; k < kFB; ++k) w.delta[k] = memory_delta(op_of(k, 0), s, g.pr_);
      w.w_delta = memory_delta(op_of(kW0, 0), s, g.pr_);
      refresh(g, s, 0, -1);
    }
  }

  // Whether moving the op of kind k in slot `at` of stage s to the free slot t < at takes the
  // stage's memory over `limit` at some slot.
  bool exceeds_if_moved(const SlotGrid& g, int s, int k, long long t, long long at, Mem limit) const {
    const auto& w = stages_[s];
    Mem mem = w.mem_before[t];
    int queue = w.queue_before[t];
    const long long n = static_cast<long long>(g.cells_[s].size());
    for (long long u = t; u < n; ++u) {
      if (u > at && mem == w.mem_before[u] && queue == w.queue_before[u]) return w.top_from[u] > limit;
      const int kind = u == t ? k : u == at ? -1 : cell_kind(g, s, u);
      step(w, kind, &mem, &queue);
      if (mem > limit) return true;
    }
    return false;
  }

  // After a move into slot t from slot `at` on stage s (or, with `after` -1, from scratch): the
  // walk again from slot t (the slots before it unchanged) until, past `after`, it meets the kept
  // one; then the highest levels from there back to slot 0.
  void refresh(const SlotGrid& g, int s, long long t, long long after) {
    auto& w = stages_[s];
    const long long n = static_cast<long long>(g.cells_[s].size());
    Mem mem = t == 0 ? 0 : w.mem_before[t];
    int queue = t == 0 ? 0 : w.queue_before[t];
    long long u = t;
    for (; u < n; ++u) {
      if (u > after && after >= 0 && mem == w.mem_before[u] && queue == w.queue_before[u]) break;
      w.mem_before[u] = mem;
      w.queue_before[u] = queue;
      step(w, cell_kind(g, s, u), &mem, &queue);
    }
    if (u == n) {
      w.mem_before[n] = mem;
      w.queue_before[n] = queue;
      w.top_from[n] = std::numeric_limits<Mem>::min();
    }
    for (long long v = u - 1; v >= 0; --v) w.top_from[v] = std::max(w.mem_before[v + 1], w.top_from[v + 1]);
  }

 private:
  struct Stage {
    std::vector<Mem> mem_before;   // [slot]: the memory before the slot (and after the last, at n)
    std::vector<int> queue_before; // [slot]: the W's pending before it
    std::vector<Mem> top_from;     // [slot]: the highest memory after this slot or any later one
    std::array<Mem, kFB> delta{};  // an F's or B's memory, by kind
    Mem w_delta = 0;               // a W's
  };

  static int cell_kind(const SlotGrid& g, int s, long long u) {
    const int id = g.cells_[s][u];
    return id < 0 ? -1 : id / g.m_;
  }
  static void step(const Stage& w, int kind, Mem* mem, int* queue) {
    if (kind >= 0) {
      *mem += w.delta[kind];
      if (kind == kB1 || kind == kB0) ++*queue;
    } else if (*queue > 0) {
      *mem += w.w_delta;
      --*queue;
    }
  }

  std::vector<Stage> stages_;
};

SlotGrid::SlotGrid(const Problem& pr, const std::vector<std::array<int, 4>>& first)
    : pr_(pr), p_(pr.p), m_(pr.m), slot_(p_), cells_(p_) {
  for (int s = 0; s < p_; ++s) {
    for (int k = 0; k < kKinds; ++k) slot_[s][k].assign(m_, -1);
    for (int k = 0; k < kFB; ++k)
      for (int j = 0; j < m_; ++j) set(s, k, j, first[s][k] + static_cast<long long>(kSlotsPerMicrobatch) * j);
    put_ws(s);
  }
}

void SlotGrid::squeeze(bool with_ws, bool keep_steady) {
  if (!with_ws)
    for (int s = 0; s < p_; ++s)
      for (int k = kFB; k < kKinds; ++k)
        for (int j = 0; j < m_; ++j) clear(s, k, j);
  Mem limit = 0;
  for (int s = 0; s < p_; ++s) limit = std::max(limit, peak(s, with_ws));
  // With the W's in place: each stage's memory after each slot.
  std::vector<std::vector<Mem>> levels(p_);
  if (with_ws)
    for (int s = 0; s < p_; ++s) {
      Mem mem = 0;
      for (int id : cells_[s]) {
        if (id >= 0) mem += memory_delta(op_of(id / m_, id % m_), s, pr_);
        levels[s].push_back(mem);
      }
    }
  // In slot order, stage by stage within a slot (ops only move to earlier slots, already passed).
  long long end = 0;
  for (int s = 0; s < p_; ++s) end = std::max<long long>(end, cells_[s].size());
  // Without the W's, each try is checked against each stage's cached walk where every W of a
  // stage frees the same memory (chunks alike); else by walking the stage again.
  std::optional<Walks> walks;
  if (!with_ws && !pr_.chunks_differ()) walks.emplace(*this);
  int phase = 0;
  for (long long slot = 0; slot < end; ++slot)
    for (int s = 0; s < p_; ++s) {
      if (cell(s, slot) < 0) continue;
      const int k = cell(s, slot) / m_, j = cell(s, slot) % m_;
      if (phase == 0 && s == 0 && k == kB0 && keep_steady) phase = 1;
      if (phase == 1) {
        if (s == 0 && k == kF0 && j == m_ - 1) phase = 2;
        continue;
      }
      if (phase == 0 && !with_ws) continue;
      const long long at = slot_[s][k][j];
      const long long from = earliest(s, k, j);
      if (with_ws) {
        // The W's hold their slots: the move adds the op's memory to the levels between its new
        // slot and its old one, so the earliest free slot from which those levels stay within
        // the limit is the one.
        const Mem delta = memory_delta(op_of(k, j), s, pr_);
        auto& lv = levels[s];
        long long best = -1;
        for (long long t = at - 1; t >= from; --t) {
          if (delta > 0 && lv[t] + delta > limit) break;
          if (cell(s, t) < 0) best = t;
        }
        if (best >= 0) {
          clear(s, k, j);
          set(s, k, j, best);
          for (long long t = best; t < at; ++t) lv[t] += delta;
        }
        continue;
      }
      for (long long t = from; t < at; ++t) {
        if (cell(s, t) >= 0) continue;
        if (walks) {
          if (walks->exceeds_if_moved(*this, s, k, t, at, limit)) continue;
          clear(s, k, j);
          set(s, k, j, t);
          walks->refresh(*this, s, t, at);
          break;
        }
        clear(s, k, j);
        set(s, k, j, t);
        if (!peak_exceeds(s, with_ws, limit)) break;
        clear(s, k, j);
        set(s, k, j, at);
      }
    }
  if (!with_ws)
    for (int s = 0; s < p_; ++s) put_ws(s);
}

bool SlotGrid::lay_out_warm_up() {
  const int units = held_units();
  std::vector<std::vector<std::pair<int, int>>> orders(p_);  // [stage]: kind, microbatch
  for (int s = 0; s < p_; ++s) {
    std::array<int, kKinds> before{};
    size_t t = 0;
    for (; t < cells_[s].size(); ++t) {
      const int id = cells_[s][t];
      if (id < 0) continue;
      if (id / m_ == kB0) break;
      ++before[id / m_];
    }
    const int most_f1 = std::min({s + 1, units / 2, m_}), most_f0 = std::min(units - most_f1, m_);
    std::array<int, kKinds> used{};
    auto add = [&](int kind, bool ok) {
      if (ok && used[kind] < before[kind]) orders[s].emplace_back(kind, used[kind]++);
    };
    for (int k = 0; k < 2 * (p_ - 1 - s); ++k) add(kF0, used[kF0] < most_f0);
    for (int k = 0; k <= s; ++k) {
      add(kF0, used[kF0] < most_f0);
      add(kF1, used[kF1] < most_f1);
    }
    while (used[kF0] < before[kF0] || used[kF1] < before[kF1] || used[kB1] < before[kB1] ||
           used[kW1] < before[kW1]) {
      add(kB1, true);
      add(kW1, true);
      if (used[kF1] < before[kF1]) add(kF1, true);
      else add(kF0, true);
    }
    for (; t < cells_[s].size(); ++t)
      if (cells_[s][t] >= 0) orders[s].emplace_back(cells_[s][t] / m_, cells_[s][t] % m_);
  }
  return place_in_order(orders);
}

bool SlotGrid::lay_out_cool_down() {
  const int units = held_units();
  const int most_b0 = std::min((units + 1) / 2, m_), most_b1 = std::min(units - most_b0, m_);
  std::vector<std::vector<int>> kinds(p_);  // [stage][slot]: a kind or -1
  long long start = -1;                     // stage 0's last F of chunk 1
  for (int s = 0; s < p_; ++s) {
    auto& row = kinds[s];
    for (int id : cells_[s]) row.push_back(id < 0 ? -1 : id / m_);
    int b1 = 0, b0 = 0, w1 = 0, w0 = 0;
    long long last_f1 = -1;
    for (long long t = static_cast<long long>(row.size()) - 1; t >= 0; --t) {
      if (row[t] == kF1 && last_f1 < 0) last_f1 = t;
      if (row[t] == kB1 && b1 < std::min(s + 1, most_b1)) row[t] = -1, ++b1;
      else if (row[t] == kB0 && b0 < most_b0) row[t] = -1, ++b0;
    }
    for (long long t = static_cast<long long>(row.size()) - 1; t >= 0; --t) {
      if (w1 >= b1 && w0 >= b0 && w1 + w0 >= units) break;
      if (row[t] == kW1) row[t] = -1, ++w1;
      else if (row[t] == kW0) row[t] = -1, ++w0;
    }
    if (s == 0) start = last_f1;
    if (start < 0) return false;
    auto put = [&](long long t, int kind) {
      if (t < 0) return false;
      if (t >= static_cast<long long>(row.size())) row.resize(t + 1, -1);
      if (row[t] >= 0) return false;
      row[t] = kind;
      return true;
    };
    for (int k = 0; k < b0; ++k)
      if (!put(start - s + 2 * p_ - 2 * k, kB0)) return false;
    for (int k = 0; k < b1; ++k)
      if (!put(start + 1 + s - 2 * k, kB1)) return false;
    long long last_w = -1;
    for (long long t = 0; t < static_cast<long long>(row.size()); ++t)
      if (row[t] == kW1 || row[t] == kW0) last_w = t;
    int owed1 = 0, owed0 = 0;  // B's without their W so far
    for (long long t = 0; t < static_cast<long long>(row.size()); ++t) {
      const int k = row[t];
      owed1 += k == kB1 ? 1 : k == kW1 ? -1 : 0;
      owed0 += k == kB0 ? 1 : k == kW0 ? -1 : 0;
      if (k >= 0 || t <= last_w || (w1 == 0 && w0 == 0)) continue;
      if (owed1 > 0 && w1 > 0) row[t] = kW1, --owed1, --w1;
      else if (owed0 > 0 && w0 > 0) row[t] = kW0, --owed0, --w0;
    }
    for (; w1 > 0; --w1) row.push_back(kW1);
    for (; w0 > 0; --w0) row.push_back(kW0);
  }
  // Microbatches by order of appearance, each W of the oldest B without one.
  std::vector<std::vector<std::pair<int, int>>> orders(p_);
  for (int s = 0; s < p_; ++s) {
    std::array<int, kKinds> next{};
    std::deque<std::pair<int, int>> owed;
    for (int k : kinds[s]) {
      if (k < 0) continue;
      if (k == kW1 || k == kW0) {
        if (owed.empty()) return false;
        orders[s].push_back(owed.front());
        owed.pop_front();
        continue;
      }
      if (next[k] >= m_) return false;
      orders[s].emplace_back(k, next[k]);
      if (k == kB1 || k == kB0) owed.emplace_back(k == kB1 ? kW1 : kW0, next[k]);
      ++next[k];
    }
  }
  return place_in_order(orders);
}

void SlotGrid::fill_holes() {
  Mem limit = 0;
  std::vector<std::vector<Mem>> levels(p_);
  for (int s = 0; s < p_; ++s) {
    Mem mem = 0;
    for (int id : cells_[s]) {
      if (id >= 0) mem += memory_delta(op_of(id / m_, id % m_), s, pr_);
      levels[s].push_back(mem);
      limit = std::max(limit, mem);
    }
  }
  // [stage][kind]: the first microbatch of the kind after the slot being filled (a kind's slots
  // rise with its microbatches, and stay so: each move takes the first one after the slot).
  std::vector<std::array<int, kKinds>> next(p_);
  long long end = 0;
  for (int s = 0; s < p_; ++s) end = std::max<long long>(end, cells_[s].size());
  for (long long t = 0; t < end; ++t)
    for (int s = 0; s < p_; ++s) {
      std::array<std::pair<long long, int>, kKinds> found;  // slot, kind
      int n = 0;
      for (int k = 0; k < kKinds; ++k) {
        while (next[s][k] < m_ && slot_[s][k][next[s][k]] <= t) ++next[s][k];
        if (next[s][k] < m_) found[n++] = {slot_[s][k][next[s][k]], k};
      }
      if (t >= static_cast<long long>(cells_[s].size()) || cells_[s][t] >= 0) continue;
      std::sort(found.begin(), found.begin() + n);
      for (int c = 0; c < n; ++c) {
        const auto [u, k] = found[c];
        const int j = next[s][k];
        if (earliest(s, k, j) > t) continue;
        const Mem delta = memory_delta(op_of(k, j), s, pr_);
        if (delta > 0 && *std::max_element(levels[s].begin() + t, levels[s].begin() + u) + delta > limit) continue;
        clear(s, k, j);
        set(s, k, j, t);
        for (long long v = t; v < u; ++v) levels[s][v] += delta;
        break;
      }
    }
}

Schedule SlotGrid::schedule(const std::string& method) const {
  Schedule out = empty_schedule_on(pr_, v_shape_placement(p_), method);
  for (int s = 0; s < p_; ++s) {
    auto& ops = out.stages[s];
    ops.reserve(kKinds * static_cast<size_t>(m_));
    for (int id : cells_[s])
      if (id >= 0) ops.push_back(op_of(id / m_, id % m_));
  }
  return out;
}

void SlotGrid::set(int s, int k, int j, long long t) {
  if (t >= static_cast<long long>(cells_[s].size())) cells_[s].resize(t + 1 + kSlotsPerMicrobatch * m_, -1);
  cells_[s][t] = k * m_ + j;
  slot_[s][k][j] = t;
}

void SlotGrid::clear(int s, int k, int j) {
  if (slot_[s][k][j] >= 0) cells_[s][slot_[s][k][j]] = -1;
  slot_[s][k][j] = -1;
}

long long SlotGrid::earliest(int s, int k, int j) const {
  long long after = -1;
  if (j > 0) after = slot_[s][k][j - 1];
  if (k == kW1 || k == kW0) return std::max(after, slot_[s][k == kW1 ? kB1 : kB0][j]) + 1;
  if (k > kF0) after = std::max(after, slot_[s][k - 1][j]);
  const bool down = k == kF0 || k == kB1;  // toward the last stage
  const int from = down ? s - 1 : s + 1;
  if (from >= 0 && from < p_) after = std::max(after, slot_[from][k][j]);
  return after + 1;
}

Mem SlotGrid::walk_peak(int s, bool explicit_ws, Mem stop) const {
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
    if (top > stop) return top;
  }
  return top;
}

void SlotGrid::put_ws(int s) {
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

int SlotGrid::held_units() const {
  int units = 0;
  for (int s = 0; s < p_; ++s) {
    int held = 0;
    for (int id : cells_[s]) {
      if (id < 0) continue;
      held += id / m_ == kF0 || id / m_ == kF1 ? 1 : id / m_ >= kFB ? -1 : 0;
      units = std::max(units, held);
    }
  }
  return std::min(units, 2 * p_);
}

bool SlotGrid::place_in_order(const std::vector<std::vector<std::pair<int, int>>>& orders) {
  std::vector<std::array<std::vector<long long>, kKinds>> placed(p_);
  for (auto& kinds : placed)
    for (auto& mbs : kinds) mbs.assign(m_, -1);
  std::vector<size_t> next(p_, 0);
  std::vector<long long> free_at(p_, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p_; ++s)
      for (; next[s] < orders[s].size(); ++next[s]) {
        const auto [k, j] = orders[s][next[s]];
        long long after = free_at[s] - 1;
        if (k == kW1 || k == kW0) {
          const long long b = placed[s][k == kW1 ? kB1 : kB0][j];
          if (b < 0) return false;  // a W before its B on its own stage
          after = std::max(after, b);
        } else {
          const bool down = k == kF0 || k == kB1;
          const int from = down ? s - 1 : s + 1;
          long long input = -1;
          if (from >= 0 && from < p_) {
            input = placed[from][k][j];
            if (input < 0) break;  // not yet: another stage first
          } else if (k != kF0) {
            input = placed[s][k - 1][j];  // the V's turn: this stage's previous kind
            if (input < 0) return false;
          }
          after = std::max(after, input);
        }
        placed[s][k][j] = after + 1;
        free_at[s] = after + 2;
        progress = true;
      }
  }
  for (int s = 0; s < p_; ++s)
    if (next[s] < orders[s].size()) return false;
  for (int s = 0; s < p_; ++s) {
    cells_[s].assign(cells_[s].size(), -1);
    for (int k = 0; k < kKinds; ++k)
      for (int j = 0; j < m_; ++j) {
        slot_[s][k][j] = -1;
        set(s, k, j, placed[s][k][j]);
      }
  }
  return true;
}

}  // namespace zbpp::v_slots
