// The interpreter on its own (issue 18): a fake compute backend that records every call and checks
// the data each op receives, the in-process transport, and assertions on values — which ops ran,
// with which inputs and slots, which optimizer steps each rank took and under which norm — instead
// of zbrun's printed text. (ninja's FakeCommandRunner is the model.)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "planner/pipeline.h"
#include "runtime/interpreter.h"
#include "runtime/transport/local.h"
#include "tests/runtime/planned_schedule.h"

using namespace zbpp;

namespace {

struct Call {
  char kind;  ///< 'F', 'B' (input gradient), 'W', 'S' (optimizer step), 'R' (rollback)
  int chunk = -1, mb = -1, slot = -1;
  double norm = 0;
};

// Times as a device would give them: the k-th op collected lasts [k, k + 0.5] s. It can also say
// the device failed, from the op it names on (OpTimer::device_failed).
class FakeTimer : public OpTimer {
 public:
  void start() override { open_ = begun_ = 0; }
  void begin() override { ++begun_; }
  void end() override { ++open_; }
  bool collect(std::vector<std::pair<double, double>>* times, std::string*) override {
    times->clear();
    for (int k = 0; k < open_; ++k, ++next_) times->push_back({next_, next_ + 0.5});
    open_ = begun_ = 0;
    ++collects;
    return true;
  }
  bool device_failed(int* first) override {
    if (failed_from < 0) return false;
    *first = failed_from;
    return true;
  }
  int failed_from = -1;  ///< >= 0: the device failed from this op (of those marked since the last collect) on
  int collects = 0;

 private:
  int open_ = 0, begun_ = 0;
  double next_ = 0;
};

// A backend whose tensors are numbers that say where they come from: the activation of
// (virtual stage vs, microbatch mb) in step k is code(k, vs, mb), its input gradient the negative.
// Each op checks what it is given, and the problems are kept (Catch's macros are not thread-safe).
class FakeCompute : public Compute {
 public:
  /// `device`: its activations are device buffers (Payload::device holds the number's bits), as
  /// the CUDA backend's are: the interpreter and the in-process transport pass them by id.
  FakeCompute(const Schedule& s, int rank, bool device = false)
      : map_(s.placement), rank_(rank), m_(s.m), device_(device), grads_(s.chunks, 0.0) {}

  static float code(int step, int vs, int mb) { return static_cast<float>(100000 * step + 1000 * vs + mb + 1); }
  /// Each W adds this to each of its chunk's two tensors.
  static double grad_of(int mb) { return 0.25 * (mb + 1); }
  static double loss_of(int step, int mb) { return 3.0 + 0.5 * mb - 0.125 * step; }

  std::string refuses(const Payload& p) const override {
    if (device_) return p.on_device() ? "" : "host floats, expected a device buffer";
    return p.host.size() == 3 ? "" : std::to_string(p.host.size()) + " values, expected 3";
  }
  // As the real backends: a step's losses live until the next step's data arrives (with
  // post-validation zero_grad comes at VALIDATE, after the next step's first forwards).
  void set_step_data(const std::vector<std::vector<int>>*) override {
    ++step_;
    losses_.clear();
  }

  void forward(int chunk, int mb, int slot, const Payload* input, Payload* output) override {
    if (mb == fail_forward_of) throw std::runtime_error("cudaMallocAsync (ln1): an illegal memory access was encountered");
    calls.push_back({'F', chunk, mb, slot});
    const int vs = map_.vs(rank_, chunk), last = map_.virtual_stages() - 1;
    if (vs == 0 ? input != nullptr : !same(input, code(step_, vs - 1, mb)))
      problem("F", chunk, mb, "got the wrong input activation");
    if (vs < last) *output = payload_of(code(step_, vs, mb));
    else losses_.push_back(mb);
    bytes_ += 10;
  }
  void backward_input(int chunk, int mb, int slot, const Payload* doutput, Payload* dinput) override {
    calls.push_back({'B', chunk, mb, slot});
    const int vs = map_.vs(rank_, chunk), last = map_.virtual_stages() - 1;
    if (vs == last ? doutput != nullptr : !same(doutput, -code(step_, vs + 1, mb)))
      problem("B", chunk, mb, "got the wrong output gradient");
    if (vs > 0) *dinput = payload_of(-code(step_, vs, mb));
  }
  void backward_weight(int chunk, int mb, int slot) override {
    calls.push_back({'W', chunk, mb, slot});
    grads_[chunk] += grad_of(mb);
    bytes_ -= 10;
  }
  bool loss(int mb, double* out) const override {
    for (int l : losses_)
      if (l == mb) return *out = loss_of(step_, mb), true;
    return false;
  }
  void zero_grad() override { std::fill(grads_.begin(), grads_.end(), 0.0); }
  GradStats grad_stats() const override {
    GradStats g;
    g.squared_norms.assign(2 * map_.virtual_stages(), 0.0);
    for (int c = 0; c < static_cast<int>(grads_.size()); ++c) {
      int vs = map_.vs(rank_, c);
      g.squared_norms[2 * vs] = g.squared_norms[2 * vs + 1] = grads_[c] * grads_[c];
    }
    return g;
  }
  void optimizer_step(double global_norm) override { calls.push_back({'S', -1, -1, -1, global_norm}); }
  void optimizer_rollback(double global_norm) override { calls.push_back({'R', -1, -1, -1, global_norm}); }
  size_t activation_bytes() const override { return bytes_; }
  void inject_nonfinite() override {}
  std::vector<std::pair<int, std::vector<float>>> parameters() const override { return {}; }
  std::vector<std::pair<int, std::vector<float>>> gradients() const override { return {}; }
  OpTimer* timer() override { return timer_; }

  std::vector<Call> calls;
  FakeTimer* timer_ = nullptr;  ///< set: the ops are timed as a device's (the CUDA backend's way)
  int fail_forward_of = -1;     ///< F of this microbatch throws, as a CUDA call finding a device fault
  std::vector<std::string> problems;

 private:
  Payload payload_of(float value) const {
    return device_ ? Payload::of_device(bits(value)) : Payload::of_host(std::vector<float>(3, value));
  }
  bool same(const Payload* data, float value) const {
    if (data == nullptr) return false;
    return device_ ? data->on_device() && data->device == bits(value) : data->host == std::vector<float>(3, value);
  }
  static std::uint32_t bits(float value) {  // never 0: every code is at least 1 in magnitude
    std::uint32_t b;
    std::memcpy(&b, &value, sizeof b);
    return b;
  }
  void problem(const char* op, int chunk, int mb, const std::string& what) {
    problems.push_back("rank " + std::to_string(rank_) + " step " + std::to_string(step_) + " " + op +
                       std::to_string(mb) + " chunk " + std::to_string(chunk) + ": " + what);
  }

  VirtualStageMap map_;
  int rank_, m_;
  bool device_;
  int step_ = -1;
  std::vector<double> grads_;
  std::vector<int> losses_;
  size_t bytes_ = 0;
};

struct Ranks {
  std::vector<FakeTimer> timers;  ///< one per rank where the run is timed as a device's
  std::vector<FakeCompute> computes;
  std::vector<std::vector<StepReport>> reports;
  std::vector<std::string> errors;
};

// Runs `steps` steps of `s` on p threads (then finish()), as zbrun --local does. `timed`: each
// rank's backend has a (fake) device timer, as the CUDA backend's.
Ranks run(const Schedule& s, int steps, float clip_norm, double timeout_s = 20, bool device = false,
          bool timed = false) {
  const int p = s.p;
  Ranks out;
  for (int r = 0; r < p; ++r) out.computes.emplace_back(s, r, device);
  if (timed) {
    out.timers.resize(p);
    for (int r = 0; r < p; ++r) out.computes[r].timer_ = &out.timers[r];
  }
  out.reports.resize(p);
  out.errors.resize(p);
  auto hub = make_local_hub(p);
  std::vector<std::unique_ptr<Transport>> transports;
  for (int r = 0; r < p; ++r) transports.push_back(make_local_transport(hub, r));
  AdamWConfig adamw;
  adamw.clip_norm = clip_norm;
  std::vector<std::thread> threads;
  const std::vector<std::vector<int>> data(s.m, std::vector<int>(4, 1));
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([&, r] {
      Interpreter interp(s, r, &out.computes[r], transports[r].get(), adamw, timeout_s);
      std::string err;
      for (int k = 0; k < steps && err.empty(); ++k)
        if (!interp.run_step(data, &err)) transports[r]->abort(err);
      if (err.empty() && !interp.finish(&err)) transports[r]->abort(err);
      out.errors[r] = err;
      out.reports[r] = interp.take_reports();
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// The compute ops of one rank's op list as the fake records them (a fused BW is its B, then its W).
std::vector<std::string> compute_ops(const Schedule& s, int rank) {
  std::vector<std::string> out;
  auto add = [&](char kind, const Op& op) {
    out.push_back(std::string(1, kind) + std::to_string(op.mb) + "/" + std::to_string(op.chunk) + "@" +
                  std::to_string(op.slot));
  };
  for (const Op& op : s.stages[rank]) {
    if (op.type == OpType::F) add('F', op);
    if (op.type == OpType::B || op.type == OpType::BW) add('B', op);
    if (op.type == OpType::W || op.type == OpType::BW) add('W', op);
  }
  return out;
}

std::vector<std::string> recorded_compute(const std::vector<Call>& calls, size_t from, size_t to) {
  std::vector<std::string> out;
  for (size_t i = from; i < to; ++i) {
    const Call& c = calls[i];
    if (c.kind == 'F' || c.kind == 'B' || c.kind == 'W')
      out.push_back(std::string(1, c.kind) + std::to_string(c.mb) + "/" + std::to_string(c.chunk) + "@" +
                    std::to_string(c.slot));
  }
  return out;
}

// The global norm the fake's gradients give after a whole iteration.
double full_norm(const Schedule& s) {
  double per_chunk = 0;
  for (int mb = 0; mb < s.m; ++mb) per_chunk += FakeCompute::grad_of(mb);
  return std::sqrt(2.0 * s.p * s.chunks * per_chunk * per_chunk);
}

// One rank of `s` on its own (the others never start): its errors and its backend's calls.
struct Alone {
  FakeCompute compute;
  std::unique_ptr<Transport> transport;
  Interpreter interp;
  Alone(const Schedule& s, int rank, double timeout_s)
      : compute(s, rank),
        transport(make_local_transport(make_local_hub(s.p), rank)),
        interp(s, rank, &compute, transport.get(), AdamWConfig{}, timeout_s) {}
};

}  // namespace

TEST_CASE("interpreter: each rank runs its compute ops in file order, each given its producer's data") {
  struct Case {
    std::string method;
    int p, m, chunks;
    std::string mem;
  };
  for (const Case& c : {Case{"1f1b", 3, 6, 1, ""}, Case{"zb-h1", 4, 8, 1, ""}, Case{"zb-h2", 3, 6, 1, ""},
                        Case{"heuristic", 3, 6, 1, "2p"}, Case{"zb-v", 2, 4, 1, ""}, Case{"1f1b-i", 2, 4, 2, ""}}) {
    for (const Optimizer optimizer : {Optimizer::kSync, Optimizer::kPostValidation}) {
      CAPTURE(c.method, optimizer);
      Schedule s = planned(c.method, c.p, c.m, optimizer, c.chunks, c.mem);
      const int steps = 3;
      Ranks out = run(s, steps, /*clip_norm=*/0);  // no clipping: no speculative step is ever wrong
      const double norm = full_norm(s);
      double mean_loss[steps] = {};
      for (int k = 0; k < steps; ++k) {
        for (int mb = 0; mb < s.m; ++mb) mean_loss[k] += FakeCompute::loss_of(k, mb);
        mean_loss[k] /= s.m;
      }
      for (int r = 0; r < s.p; ++r) {
        CAPTURE(r);
        CHECK(out.errors[r] == "");
        CHECK(out.computes[r].problems == std::vector<std::string>{});
        // Every step: exactly the file's compute ops, in order, with the file's slots.
        const auto& calls = out.computes[r].calls;
        auto expected = compute_ops(s, r);
        std::vector<std::string> all;
        for (int k = 0; k < steps; ++k) all.insert(all.end(), expected.begin(), expected.end());
        CHECK(recorded_compute(calls, 0, calls.size()) == all);
        // One optimizer step per iteration, none rolled back.
        int stepped = 0;
        for (const Call& call : calls) {
          CHECK(call.kind != 'R');
          if (call.kind == 'S') ++stepped;
          if (call.kind == 'S' && optimizer == Optimizer::kSync) CHECK(call.norm == Approx(norm).epsilon(1e-12));
        }
        CHECK(stepped == steps);
        // The figures every rank reports once the step's state is complete.
        REQUIRE(out.reports[r].size() == static_cast<size_t>(steps));
        for (int k = 0; k < steps; ++k) {
          CHECK(out.reports[r][k].step == k);
          CHECK(out.reports[r][k].loss == Approx(mean_loss[k]).epsilon(1e-12));
          CHECK(out.reports[r][k].grad_norm == Approx(norm).epsilon(1e-12));
          CHECK_FALSE(out.reports[r][k].skipped);
          CHECK(out.reports[r][k].replays == 0);
          CHECK(out.reports[r][k].peak_activation_bytes > 0);
        }
      }
    }
  }
}

TEST_CASE("interpreter: post-validation rolls back a step the full norm clips, redoes it, and replays") {
  // Clip just under the full norm: every rank that steps under a partial norm (below the limit)
  // stepped wrong; the rank whose state is complete clips at once.
  Schedule s = planned("zb-h1", 3, 6, Optimizer::kPostValidation);
  const double norm = full_norm(s);
  // Timed as a device's too: the replay, the held steps and finish() read the timer's spans.
  const bool timed = GENERATE(false, true);
  Ranks out = run(s, 3, static_cast<float>(0.99 * norm), 20, false, timed);
  int rolled_back = 0;
  for (int r = 0; r < s.p; ++r) {
    CAPTURE(timed, r);
    REQUIRE(out.errors[r] == "");
    CHECK(out.computes[r].problems == std::vector<std::string>{});
    // What stays after each rollback is one step per iteration, each under the full norm: the
    // synchronous optimizer's training.
    std::vector<double> kept;
    for (const Call& c : out.computes[r].calls) {
      if (c.kind == 'S') kept.push_back(c.norm);
      if (c.kind == 'R') {
        REQUIRE_FALSE(kept.empty());
        CHECK(kept.back() < norm);  // it undoes the step taken under the partial norm
        kept.pop_back();
        ++rolled_back;
      }
    }
    REQUIRE(kept.size() == 3);
    for (double k : kept) CHECK(k == Approx(norm).epsilon(1e-12));
    REQUIRE(out.reports[r].size() == 3);
    // Step 0's wrong steps are found in step 1, after its forwards ran on them: step 1 runs again.
    // From then on the ranks post-validate before their forwards (held) and nothing is replayed.
    CHECK(out.reports[r][0].replays == 0);
    CHECK(out.reports[r][1].replays == 1);
    CHECK(out.reports[r][2].replays == 0);
    CHECK(out.reports[r][2].held);
  }
  CHECK(rolled_back > 0);
}

TEST_CASE("interpreter: device buffers pass by id, each slot is read once, and a second read is refused") {
  for (const char* method : {"zb-h1", "zb-v"}) {
    CAPTURE(method);
    Schedule s = planned(method, 3, 6, Optimizer::kSync);
    Ranks out = run(s, 2, /*clip_norm=*/0, /*timeout_s=*/20, /*device=*/true);
    for (int r = 0; r < s.p; ++r) {
      INFO("rank " << r);
      CHECK(out.errors[r].empty());
      CHECK(out.computes[r].problems.empty());  // each op got its producer's buffer id
      CHECK(out.reports[r].size() == 2);
    }
  }
  // An F run twice on rank 1: its input was taken by the first, so the second finds none (a
  // moved-from payload would still name the device buffer).
  Schedule twice = planned("1f1b", 2, 2, Optimizer::kSync);
  auto& ops = twice.stages[1];
  const auto f = std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.type == OpType::F; });
  REQUIRE(f != ops.end());
  const long at = f - ops.begin();
  ops.insert(ops.begin() + at + 1, *f);
  Ranks out = run(twice, 1, /*clip_norm=*/0, /*timeout_s=*/2, /*device=*/true);
  INFO(out.errors[1]);
  CHECK(out.errors[1].find("op " + std::to_string(at + 1) + " (F0): no input activation for it has arrived "
                           "(missing RECV?)") != std::string::npos);
}

TEST_CASE("interpreter: a message that never comes is an error naming the rank and op") {
  Schedule s = planned("1f1b", 2, 2, Optimizer::kSync);
  // Only rank 1 runs: its first receive times out.
  Alone one(s, 1, 0.2);
  FakeCompute& compute = one.compute;
  Interpreter& interp = one.interp;
  std::string err;
  const std::vector<std::vector<int>> data(s.m, std::vector<int>(4, 1));
  CHECK_FALSE(interp.run_step(data, &err));
  CHECK(err.rfind("rank 1, op 0 (RECV_F0 from rank 0): ", 0) == 0);
  CHECK(compute.calls.empty());
}

TEST_CASE("interpreter: a backend's own timer gives the spans, read before the optimizer needs them") {
  Schedule s = planned("1f1b", 2, 4, Optimizer::kSync);
  std::vector<FakeTimer> timers(s.p);
  Ranks out;
  for (int r = 0; r < s.p; ++r) out.computes.emplace_back(s, r);
  for (int r = 0; r < s.p; ++r) out.computes[r].timer_ = &timers[r];
  auto hub = make_local_hub(s.p);
  std::vector<std::unique_ptr<Transport>> transports;
  for (int r = 0; r < s.p; ++r) transports.push_back(make_local_transport(hub, r));
  out.reports.resize(s.p);
  out.errors.resize(s.p);
  const std::vector<std::vector<int>> data(s.m, std::vector<int>(4, 1));
  std::vector<std::thread> threads;
  for (int r = 0; r < s.p; ++r)
    threads.emplace_back([&, r] {
      Interpreter interp(s, r, &out.computes[r], transports[r].get(), AdamWConfig{}, 20);
      std::string err;
      if (!interp.run_step(data, &err)) transports[r]->abort(err);
      out.errors[r] = err;
      out.reports[r] = interp.take_reports();
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < s.p; ++r) {
    INFO("rank " << r);
    REQUIRE(out.errors[r].empty());
    REQUIRE(out.reports[r].size() == 1);
    const auto& spans = out.reports[r][0].spans;
    const auto& ops = s.stages[r];
    REQUIRE(spans.size() == static_cast<size_t>(std::count_if(ops.begin(), ops.end(), [](const Op& op) {
              return is_compute(op.type);
            })));
    for (size_t k = 0; k < spans.size(); ++k) {
      CHECK(spans[k].start == static_cast<double>(k));
      CHECK(spans[k].end == k + 0.5);
    }
    CHECK(timers[r].collects >= 1);
  }
  // Each rank: 8 ops (F and BW) over 7.5 s, busy 4 s. The all-reduced figure is the timer's only
  // if the spans were settled before OPT_STEP, not left at the host's enqueue times.
  REQUIRE(out.reports[0][0].spans.size() == 8);
  CHECK(out.reports[0][0].measured_span_bubble_rate == Approx(3.5 / 7.5));
}

TEST_CASE("interpreter: with a device timer, a device fault names the first op not known finished") {
  Schedule s = planned("1f1b", 2, 4, Optimizer::kSync);
  FakeTimer timer;
  Alone one(s, 0, 2);
  Interpreter& interp = one.interp;
  one.compute.timer_ = &timer;
  one.compute.fail_forward_of = 1;  // rank 0's second op, F1, throws; the device failed from its first on
  const std::vector<std::vector<int>> data(s.m, std::vector<int>(4, 1));
  std::string err;
  SECTION("the device failed: the place is the first unfinished op, up to the one that found it") {
    timer.failed_from = 0;
    CHECK_FALSE(interp.run_step(data, &err));
    INFO(err);
    const auto& ops = s.stages[0];
    const long first_f = std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.type == OpType::F; }) - ops.begin();
    const long second_f = std::find_if(ops.begin() + first_f + 1, ops.end(), [](const Op& op) { return op.type == OpType::F; }) - ops.begin();
    CHECK(err.rfind("rank 0, op " + std::to_string(first_f) + " (F0) or an op after it up to op " +
                    std::to_string(second_f) + " (the device failed while ops ran asynchronously", 0) == 0);
    CHECK(err.find("an illegal memory access") != std::string::npos);
    CHECK(interp.failed_op() == first_f);
  }
  SECTION("the device is fine: the op that failed is named") {
    CHECK_FALSE(interp.run_step(data, &err));
    INFO(err);
    CHECK(err.find(" or an op after it") == std::string::npos);
    CHECK(err.find("(F1): cudaMallocAsync") != std::string::npos);
  }
}

TEST_CASE("interpreter: --fault device asks the backend for a device fault, and fails where it has none") {
  Schedule s = planned("1f1b", 2, 2, Optimizer::kSync);
  Alone one(s, 0, 1);
  FakeCompute& compute = one.compute;
  Interpreter& interp = one.interp;
  interp.set_fault(0, Interpreter::Fault::kDevice);
  const std::vector<std::vector<int>> data(s.m, std::vector<int>(4, 1));
  std::string err;
  CHECK_FALSE(interp.run_step(data, &err));
  CHECK(err.rfind("rank 0, op 0 (F0): --fault device: this backend has no device", 0) == 0);
  CHECK(compute.calls.empty());  // the op did not run
}
