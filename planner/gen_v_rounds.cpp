// V-ZB as the authors' follow-up builds it (see gen_v.h): a warm-up that fills each stage with
// F's while it waits, then rounds in which every stage runs one B and one F, each preceded by W's
// that fit into its wait; rerun with the bubble each stage may take from the run before.
// (B "down" is chunk 1's B, from stage 0 toward p-1; B "up" chunk 0's, back to stage 0.)
#include <algorithm>
#include <array>
#include <deque>

#include "core/deps.h"
#include "planner/gen_v.h"
#include "planner/gen_v_internal.h"

namespace zbpp {

namespace {

// A microbatch's path through the V: its F's go down (chunk 0, stage 0 to p-1) and back up
// (chunk 1), its B's down (chunk 1) and back up (chunk 0). Each stage runs a microbatch's kinds in
// this order; a "down" kind waits for the stage before it, an "up" kind for the stage after it.
enum Kind { kFDown, kFUp, kBDown, kBUp, kKinds };

bool is_down(int kind) { return kind == kFDown || kind == kBDown; }
Op op_of(int kind, int mb) {
  const bool f = kind == kFDown || kind == kFUp;
  const int chunk = kind == kFDown || kind == kBUp ? 0 : 1;
  return {f ? OpType::F : OpType::B, mb, chunk};
}

class Rounds {
 public:
  Rounds(const Problem& pr, VRoundsOptions opt, const std::vector<Ticks>& approved)
      : pr_(pr), opt_(opt), p_(pr.p), m_(pr.m), approved_(approved), st_(pr.p),
        end_(static_cast<size_t>(kKinds) * pr.p * pr.m, -1) {
    max_approved_ = approved.empty() ? -1 : *std::max_element(approved.begin(), approved.end());
    out_ = empty_schedule_on(pr, v_shape_placement(pr.p), "v-zb rounds");
  }

  // The schedule, or nothing with *why where a step finds what it needs missing.
  std::optional<Schedule> run(std::string* why) {
    if (!warm_up() || !steady()) {
      *why = failed_;
      return std::nullopt;
    }
    for (int s = 0; s < p_; ++s) {
      while (!st_[s].pending_w.empty()) put_w(s);
      for (int k = 0; k < kKinds; ++k)
        if (st_[s].count[k] != m_) {
          *why = "v-zb rounds: stage " + std::to_string(s) + " ran out of rounds";
          return std::nullopt;
        }
    }
    return std::move(out_);
  }

  // Each stage's idle time after its first F (the bubble the next run may hand out).
  std::vector<Ticks> bubbles() const {
    std::vector<Ticks> out;
    for (const auto& st : st_) out.push_back(st.bubble);
    return out;
  }

 private:
  struct Stage {
    Ticks now = 0;
    Mem mem = 0;
    Ticks bubble = 0;
    std::array<int, kKinds> count{};
    std::deque<Op> pending_w;
  };

  Ticks& end_of(int kind, int s, int mb) { return end_[(static_cast<size_t>(kind) * p_ + s) * m_ + mb]; }
  Ticks cost(int kind, int s) const { return kind == kFDown || kind == kFUp ? pr_.t_f[s] : pr_.t_b[s]; }

  // The stage the kind's next op waits for on another stage, or -1 (none: the V's turns).
  int feeder(int kind, int s) const {
    const int from = is_down(kind) ? s - 1 : s + 1;
    return from >= 0 && from < p_ ? from : -1;
  }

  // When the kind's next op on s gets its input from the feeder (plus the hop), or -1 for none;
  // kNever when the feeder has not run it yet.
  Ticks input_at(int kind, int s) {
    const int from = feeder(kind, s);
    if (from < 0) return -1;
    const Ticks e = end_of(kind, from, st_[s].count[kind]);
    return e < 0 ? kNever : e + pr_.hop(from, s);
  }

  bool fail(std::string why) {
    if (failed_.empty()) failed_ = "v-zb rounds: " + std::move(why);
    return false;
  }

  bool put(int kind, int s) {
    Stage& st = st_[s];
    const int mb = st.count[kind];
    if (mb >= m_) return fail("stage " + std::to_string(s) + " has run every microbatch of a kind");
    if (kind > kFDown && end_of(kind - 1, s, mb) < 0) return fail("stage " + std::to_string(s) + " out of order");
    const Op op = op_of(kind, mb);
    const Mem delta = memory_delta(op, s, pr_);
    if (st.mem + delta > budget(s)) return fail("stage " + std::to_string(s) + " over its memory");
    const Ticks input = input_at(kind, s);
    if (input >= kNever) return fail("stage " + std::to_string(s) + " ahead of its input");
    const Ticks start = std::max(st.now, input);
    if (st.count[kFDown] > 0) st.bubble += start - st.now;
    st.now = end_of(kind, s, mb) = start + cost(kind, s);
    st.mem += delta;
    out_.stages[s].push_back(op);
    if (op.type == OpType::B) st.pending_w.push_back({OpType::W, mb, op.chunk});
    ++st.count[kind];
    return true;
  }

  void put_w(int s) {
    Stage& st = st_[s];
    const Op w = st.pending_w.front();
    st.pending_w.pop_front();
    st.now += pr_.t_w[s];
    st.mem += memory_delta(w, s, pr_);
    out_.stages[s].push_back(w);
  }

  Mem budget(int s) const { return 2 * static_cast<Mem>(p_) * pr_.mem_b[s]; }

  // The idle time stage s may still take: the largest bubble of any stage so far, or the largest
  // of the run before less what s had there if that is more, less what s has taken.
  Ticks slack(int s) const {
    Ticks most = 0;
    for (const auto& st : st_) most = std::max(most, st.bubble);
    if (max_approved_ >= 0) most = std::max(most, max_approved_ - approved_[s]);
    return most - st_[s].bubble;
  }

  // Before the kind's next op on s: W's into its wait while they end by its input; one more
  // where the wait left is more than s may idle (always before an up B, else as the option says).
  void fill_wait(int kind, int s, bool fill) {
    Stage& st = st_[s];
    const Ticks input = input_at(kind, s);
    if (input < 0) return;
    while (!st.pending_w.empty() && input >= st.now + pr_.t_w[s]) put_w(s);
    if (!st.pending_w.empty() && input - st.now > slack(s) && fill) put_w(s);
  }

  // Stage i (last first) runs F's down on stages 0..i while it waits for its first F up, keeping
  // room for 2i+2 activations; then the stages after the first catch up on F's.
  bool warm_up() {
    for (int s = 0; s < p_; ++s)
      if (!put(kFDown, s)) return false;
    for (int i = p_ - 1; i >= 0; --i) {
      if (i < p_ - 1) {
        const Ticks arrives = end_of(kFUp, i + 1, 0) + pr_.hop(i + 1, i);
        while (st_[i].mem + pr_.mem_b[i] * (2 + 2 * static_cast<Mem>(i)) <= budget(i) &&
               st_[i].now + pr_.t_f[i] <= arrives && st_[i].count[kFDown] < m_)
          for (int j = 0; j <= i; ++j)
            if (!put(kFDown, j)) return false;
      }
      if (!put(kFUp, i)) return false;
    }
    int kind = kFDown;
    for (int i = 1; i < p_; ++i) {
      auto behind = [&] {
        const auto& a = st_[i].count;
        const auto& b = st_[i - 1].count;
        return a[kFDown] + a[kFUp] < b[kFDown] + b[kFUp] || (a[kFUp] <= b[kFUp] && b[kFUp] < m_);
      };
      for (int idle = 0; behind();) {
        bool any = false;
        for (int j = p_ - 1; j >= i; --j)
          if (st_[j].count[kind] < m_) {
            if (!put(kind, j)) return false;
            any = true;
          }
        kind = kind == kFDown ? kFUp : kFDown;
        if (any) idle = 0;
        else if (++idle == 2) return fail("the warm-up of stage " + std::to_string(i) + " stalled");
      }
    }
    return true;
  }

  // 2m rounds: every stage one B (up where its input is there, B's up last stage first, then B's
  // down first stage first), then every stage one F (up where its input is there, else down).
  bool steady() {
    for (int round = 0; round < 2 * m_; ++round) {
      std::vector<std::pair<int, int>> bs;  // stage, kind
      std::vector<int> downs;
      for (int i = 0; i < p_; ++i) {
        const auto& c = st_[i].count;
        const bool up = c[kBUp] < c[kBDown] &&
                        (i == p_ - 1 || end_of(kBUp, i + 1, c[kBUp]) >= 0 || c[kBDown] >= m_);
        if (up) bs.emplace_back(i, kBUp);
        else downs.push_back(i);
      }
      std::reverse(bs.begin(), bs.end());
      for (int i : downs) bs.emplace_back(i, kBDown);
      for (auto [i, kind] : bs) {
        if (input_at(kind, i) >= kNever) return fail("stage " + std::to_string(i) + " ahead of its input");
        fill_wait(kind, i, kind == kBUp || opt_.fill_b);
        if (!put(kind, i)) return false;
      }
      for (int i = 0; i < p_; ++i) {
        const auto& c = st_[i].count;
        if (c[kFUp] >= m_) continue;
        int kind = -1;
        if (c[kFUp] >= c[kFDown] || i == p_ - 1 || end_of(kFUp, i + 1, c[kFUp]) >= 0) {
          kind = c[kFUp] >= c[kFDown] ? kFDown : kFUp;
        } else if (c[kFDown] < m_ && (i == 0 || end_of(kFDown, i - 1, c[kFDown]) >= 0)) {
          kind = kFDown;
        }
        if (kind < 0) continue;
        while (st_[i].mem + memory_delta(op_of(kind, 0), i, pr_) > budget(i)) {
          if (st_[i].pending_w.empty()) return fail("stage " + std::to_string(i) + " over its memory");
          put_w(i);
        }
        if (input_at(kind, i) >= kNever) return fail("stage " + std::to_string(i) + " ahead of its input");
        fill_wait(kind, i, opt_.fill_f);
        if (!put(kind, i)) return false;
      }
    }
    return true;
  }

  const Problem& pr_;
  VRoundsOptions opt_;
  int p_, m_;
  std::vector<Ticks> approved_;
  Ticks max_approved_;
  std::vector<Stage> st_;
  std::vector<Ticks> end_;  // [kind][stage][microbatch]: when it ended, -1 before it ran
  Schedule out_;
  std::string failed_;
};

Ticks largest(const std::vector<Ticks>& v) { return *std::max_element(v.begin(), v.end()); }

}  // namespace

std::optional<Schedule> generate_v_zb_rounds(const Problem& pr, VRoundsOptions opt, std::string* why) {
  Rounds first(pr, opt, {});
  auto best = first.run(why);
  if (!best) return std::nullopt;
  // Rerun with each stage allowed the bubble the run before left it, while the largest falls.
  std::vector<Ticks> approved = first.bubbles();
  for (;;) {
    Rounds next(pr, opt, approved);
    std::string unused;
    auto s = next.run(&unused);
    if (!s || largest(next.bubbles()) >= largest(approved)) break;
    best = std::move(s);
    approved = next.bubbles();
  }
  best->method = "v-zb";
  return best;
}

}  // namespace zbpp
