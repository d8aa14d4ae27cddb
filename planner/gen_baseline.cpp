// Baseline schedule generators (see gen_baseline.h).
#include "planner/gen_baseline.h"

#include <algorithm>
#include <deque>

namespace zbpp {

namespace {

Schedule empty_schedule(const Problem& pr, int chunks, std::vector<std::vector<int>> placement, std::string method) {
  Schedule s;
  s.p = pr.p;
  s.m = pr.m;
  s.chunks = chunks;
  s.placement = std::move(placement);
  s.method = std::move(method);
  s.stages.resize(pr.p);
  return s;
}

}  // namespace

std::vector<Op> fbw_order(int m, int warmup, int w_delay, int chunk) {
  std::vector<Op> ops;
  ops.reserve(3 * static_cast<size_t>(m));  // exactly: growing by doubling touched twice the pages
  int f = 0, b = 0, w = 0;
  warmup = std::clamp(warmup, 1, m);
  while (f < warmup) ops.push_back({OpType::F, f++, chunk});
  while (b < m) {
    ops.push_back({OpType::B, b++, chunk});
    if (b - w > w_delay) ops.push_back({OpType::W, w++, chunk});
    if (f < m) ops.push_back({OpType::F, f++, chunk});
  }
  while (w < m) ops.push_back({OpType::W, w++, chunk});
  return ops;
}

Schedule generate_1f1b(const Problem& pr) {
  Schedule s = empty_schedule(pr, 1, interleaved_placement(pr.p, 1), "1f1b");
  for (int st = 0; st < pr.p; ++st) {
    auto& ops = s.stages[st];
    ops.reserve(2 * static_cast<size_t>(pr.m));
    int warmup = std::min(pr.p - st - 1, pr.m);
    int f = 0, b = 0;
    while (f < warmup) ops.push_back({OpType::F, f++});
    while (b < pr.m) {
      if (f < pr.m) ops.push_back({OpType::F, f++});
      ops.push_back({OpType::BW, b++});
    }
  }
  return s;
}

std::optional<Schedule> generate_1f1b_interleaved(const Problem& pr, std::string* err) {
  int p = pr.p, v = pr.chunks, m = pr.m;
  if (m % p != 0) {
    *err = "1f1b-i (Megatron's interleaved order) needs m to be a multiple of p; got m = " + std::to_string(m) +
           ", p = " + std::to_string(p);
    return std::nullopt;
  }
  Schedule s = empty_schedule(pr, v, interleaved_placement(p, v), "1f1b-i");
  int total = m * v;
  // Microbatches go through the chunks in groups of p: k-th forward of a rank is chunk (k/p)%v of
  // microbatch (k/(p*v))*p + k%p; backwards visit the chunks in reverse.
  auto mb_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  auto fwd = [&](int k) { return Op{OpType::F, mb_of(k), (k / p) % v}; };
  auto bwd = [&](int k) { return Op{OpType::BW, mb_of(k), v - 1 - (k / p) % v}; };
  for (int st = 0; st < p; ++st) {
    auto& ops = s.stages[st];
    int warmup = m == p ? total : std::min((p - st - 1) * 2 + (v - 1) * p, total);
    for (int k = 0; k < warmup; ++k) ops.push_back(fwd(k));
    for (int k = 0; k < total - warmup; ++k) {
      ops.push_back(fwd(warmup + k));
      ops.push_back(bwd(k));
    }
    for (int k = std::max(0, total - warmup); k < total; ++k) ops.push_back(bwd(k));
  }
  return s;
}

Schedule generate_zb_h1(const Problem& pr) {
  Schedule s = empty_schedule(pr, 1, interleaved_placement(pr.p, 1), "zb-h1");
  for (int st = 0; st < pr.p; ++st) s.stages[st] = fbw_order(pr.m, pr.p - st, st);
  return s;
}

Schedule generate_zb_h2(const Problem& pr) {
  Schedule s = empty_schedule(pr, 1, interleaved_placement(pr.p, 1), "zb-h2");
  for (int st = 0; st < pr.p; ++st) s.stages[st] = fbw_order(pr.m, 2 * (pr.p - st) - 1, 2 * st);
  return s;
}

Schedule generate_zb_v_handcrafted(const Problem& pr) {
  Schedule s = empty_schedule(pr, 2, v_shape_placement(pr.p), "zb-v");
  const int p = pr.p, m = pr.m;
  // The order is laid out for at least 2p-1 microbatches (enough to fill the V); ops of
  // microbatches beyond m are then left out, which keeps every remaining dependency in order.
  const int n = std::max(2 * p - 1, m);
  for (int r = 0; r < p; ++r) {
    auto& ops = s.stages[r];
    int next[3][2] = {};  // [F/B/W][chunk]: next microbatch
    auto emit = [&](OpType type, int chunk) {
      int kind = type == OpType::F ? 0 : type == OpType::B ? 1 : 2;
      int mb = next[kind][chunk]++;
      if (mb < m) ops.push_back({type, mb, chunk});
    };
    auto f = [&](int c) { return next[0][c]; };
    auto pending_w = [&](int c) { return next[1][c] - next[2][c]; };
    for (int k = 0; k < 2 * (p - r) - 1; ++k) emit(OpType::F, 0);
    for (int k = 0; k < r; ++k) {
      emit(OpType::F, 1);
      emit(OpType::F, 0);
    }
    for (int k = 0; k < p - r; ++k) {
      emit(OpType::F, 1);
      emit(OpType::B, 1);
      emit(OpType::W, 1);
    }
    while (f(1) < f(0) || f(0) < n) {
      if (f(0) < n) emit(OpType::F, 0);
      emit(OpType::B, 0);
      emit(OpType::W, 0);
      emit(OpType::F, 1);
      emit(OpType::B, 1);
      emit(OpType::W, 1);
    }
    for (int k = 0; k < r; ++k) {
      emit(OpType::B, 0);
      emit(OpType::B, 1);
    }
    for (int k = 0; k < p - r; ++k) {
      emit(OpType::B, 0);
      emit(OpType::W, 0);
    }
    while (pending_w(1) > 0) emit(OpType::W, 1);
    while (pending_w(0) > 0) emit(OpType::W, 0);
  }
  return s;
}

std::optional<Schedule> generate_dualpipe_v(const Problem& pr, std::string* err) {
  const int p = pr.p, m = pr.m;
  if (m < 2 * p) {
    *err = "dualpipe-v needs at least as many microbatches as virtual stages (m >= 2p = " + std::to_string(2 * p) +
           "); got m = " + std::to_string(m) + ", p = " + std::to_string(p);
    return std::nullopt;
  }
  Schedule s = empty_schedule(pr, 2, v_shape_placement(p), "dualpipe-v");
  for (int r = 0; r < p; ++r) {
    auto& ops = s.stages[r];
    int next_f[2] = {}, next_b[2] = {};
    std::deque<Op> held;  // W's of split B's, run in the order their B's ran
    auto f = [&](int chunk) { ops.push_back({OpType::F, next_f[chunk]++, chunk}); };
    auto bw = [&](int chunk) { ops.push_back({OpType::BW, next_b[chunk]++, chunk}); };
    auto b = [&](int chunk) {
      held.push_back({OpType::W, next_b[chunk], chunk});
      ops.push_back({OpType::B, next_b[chunk]++, chunk});
    };
    auto w = [&] {
      if (held.empty()) return;
      ops.push_back(held.front());
      held.pop_front();
    };
    for (int k = 0; k < 2 * (p - 1 - r); ++k) f(0);
    for (int k = 0; k <= r; ++k) {
      f(0);
      f(1);
    }
    for (int k = 0; k < p - 1 - r; ++k) {
      b(1);
      w();
      f(1);
    }
    for (int k = 0; k < m - 2 * p + r + 1; ++k) {
      f(0);
      bw(1);
      f(1);
      bw(0);
    }
    for (int k = 0; k < p - 1 - r; ++k) {
      bw(1);
      f(1);
      bw(0);
    }
    // 2(r+1) backwards alternating chunk 1, chunk 0: the first r+1 fused, the rest split.
    for (int k = 0; k < 2 * (r + 1); ++k) {
      const int chunk = k % 2 == 0 ? 1 : 0;
      if (k <= r) bw(chunk);
      else b(chunk);
    }
    for (int k = 0; k < p - 1 - r; ++k) {
      w();
      b(0);
    }
    while (!held.empty()) w();
  }
  return s;
}

}  // namespace zbpp
