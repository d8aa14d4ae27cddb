// The per-rank replay loop (see interpreter.h).
#include "runtime/interpreter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <stdexcept>

namespace zbpp {

namespace {
using Clock = std::chrono::steady_clock;
}

Interpreter::Interpreter(const Schedule& schedule, int rank, Compute* compute, Transport* transport, double timeout_s)
    : schedule_(schedule), map_(schedule.placement), rank_(rank), compute_(compute), transport_(transport),
      timeout_s_(timeout_s) {
  size_t slots = static_cast<size_t>(map_.virtual_stages()) * schedule.m;
  inbox_.assign(2, std::vector<std::vector<float>>(slots));
  outbox_.assign(2, std::vector<std::vector<float>>(slots));
}

std::string Interpreter::where(int index) const {
  const Op& op = schedule_.stages[rank_][index];
  std::string text = "rank " + std::to_string(rank_) + ", op " + std::to_string(index) + " (" + op_short(op);
  if (op.type == OpType::SEND_F || op.type == OpType::SEND_B) text += " to rank " + std::to_string(op.peer);
  if (op.type == OpType::RECV_F || op.type == OpType::RECV_B) text += " from rank " + std::to_string(op.peer);
  return text + ")";
}

bool Interpreter::run_step(const std::vector<std::vector<int>>& data, StepReport* report, std::string* err) {
  *report = StepReport{};
  report_ = report;
  compute_->set_step_data(&data);
  compute_->zero_grad();
  auto start = Clock::now();
  const auto& ops = schedule_.stages[rank_];
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    double t0 = std::chrono::duration<double>(Clock::now() - start).count();
    size_t bytes_before = is_compute(ops[i].type) ? compute_->activation_bytes() : 0;
    bool ok;
    try {
      if (i == fail_at_) throw std::runtime_error("injected failure (--fail-at)");
      ok = run_op(i, err);
    } catch (const std::exception& e) {
      *err = e.what();
      ok = false;
    }
    if (!ok) {
      *err = where(i) + ": " + *err;
      return false;
    }
    if (is_compute(ops[i].type)) {
      double t1 = std::chrono::duration<double>(Clock::now() - start).count();
      report->spans.push_back({t0, t1, i});
      size_t bytes = compute_->activation_bytes();
      report->peak_activation_bytes = std::max(report->peak_activation_bytes, bytes);
      double change = static_cast<double>(bytes) - static_cast<double>(bytes_before);
      if (ops[i].type == OpType::F) report->mem_after_f += change, ++report->f_ops;
      if (ops[i].type == OpType::B) report->mem_after_b += change, ++report->b_ops;
    }
  }
  report->seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return true;
}

bool Interpreter::run_op(int index, std::string* err) {
  const Op& op = schedule_.stages[rank_][index];
  const int m = schedule_.m, last_vs = map_.virtual_stages() - 1;
  const int vs = op.type == OpType::OPT_STEP ? 0 : map_.vs(rank_, op.chunk);
  auto box = [&](std::vector<std::vector<std::vector<float>>>& b, int kind, int v) -> std::vector<float>& {
    return b[kind][static_cast<size_t>(v) * m + op.mb];
  };
  auto take = [&](std::vector<float>& slot, const char* what) {
    if (slot.empty()) throw std::runtime_error(std::string("no ") + what + " for it has arrived (missing RECV?)");
    return std::move(slot);
  };
  switch (op.type) {
    case OpType::RECV_F:
    case OpType::RECV_B: {
      MessageKind kind = op.type == OpType::RECV_F ? kActivation : kGradient;
      Message msg;
      if (!transport_->recv(op.peer, kind, &msg, timeout_s_, err)) return false;
      if (msg.mb != op.mb || msg.to_vs != vs) {
        *err = "received microbatch " + std::to_string(msg.mb) + " for virtual stage " + std::to_string(msg.to_vs) +
               ", expected microbatch " + std::to_string(op.mb) + " for virtual stage " + std::to_string(vs);
        return false;
      }
      box(inbox_, kind, vs) = std::move(msg.data);
      return true;
    }
    case OpType::SEND_F:
    case OpType::SEND_B: {
      MessageKind kind = op.type == OpType::SEND_F ? kActivation : kGradient;
      Message msg{op.mb, kind == kActivation ? vs + 1 : vs - 1, take(box(outbox_, kind, vs), "output")};
      return transport_->send(op.peer, kind, std::move(msg), err);
    }
    case OpType::F: {
      std::vector<float> input;
      if (vs > 0) input = take(box(inbox_, kActivation, vs), "input activation");
      std::vector<float> output(vs < last_vs ? compute_->activation_size() : 0);
      compute_->forward(op.chunk, op.mb, op.slot, vs > 0 ? input.data() : nullptr, output.data());
      if (vs < last_vs) {
        bool local = map_.stage_of[vs + 1] == rank_;  // V-shape: the next virtual stage is here
        (local ? box(inbox_, kActivation, vs + 1) : box(outbox_, kActivation, vs)) = std::move(output);
      }
      return true;
    }
    case OpType::B:
    case OpType::BW: {
      std::vector<float> dout;
      if (vs < last_vs) dout = take(box(inbox_, kGradient, vs), "output gradient");
      std::vector<float> dinput(vs > 0 ? compute_->activation_size() : 0);
      compute_->backward_input(op.chunk, op.mb, op.slot, vs < last_vs ? dout.data() : nullptr, dinput.data());
      if (vs > 0) {
        bool local = map_.stage_of[vs - 1] == rank_;
        (local ? box(inbox_, kGradient, vs - 1) : box(outbox_, kGradient, vs)) = std::move(dinput);
      }
      if (op.type == OpType::BW) compute_->backward_weight(op.chunk, op.mb, op.slot);
      return true;
    }
    case OpType::W:
      compute_->backward_weight(op.chunk, op.mb, op.slot);
      return true;
    case OpType::OPT_STEP: {
      // One all-reduce carries everything the step needs. Each element has one contributing
      // rank (zeros elsewhere), so the sum is exact whatever order the transport adds in.
      if (inject_nonfinite_) {
        compute_->inject_nonfinite();
        inject_nonfinite_ = false;
      }
      GradStats g = compute_->grad_stats();
      const int p = schedule_.p, tensors = static_cast<int>(g.squared_norms.size());
      std::vector<double> v(g.squared_norms);
      v.resize(static_cast<size_t>(tensors) + p + m + 2 * p, 0.0);
      v[tensors + rank_] = g.nonfinite ? 1.0 : 0.0;
      for (int mb = 0; mb < m; ++mb) compute_->loss(mb, &v[tensors + p + mb]);
      double first = 1e300, last = 0, busy = 0;
      for (const OpSpan& s : report_->spans) {
        first = std::min(first, s.start);
        last = std::max(last, s.end);
        busy += s.end - s.start;
      }
      v[tensors + p + m + 2 * rank_] = report_->spans.empty() ? 0 : last - first;
      v[tensors + p + m + 2 * rank_ + 1] = busy;
      if (!transport_->allreduce_sum(&v, timeout_s_, err)) return false;
      std::vector<double> norms(v.begin(), v.begin() + tensors);
      bool nonfinite = false;
      for (int r = 0; r < p; ++r) nonfinite = nonfinite || v[tensors + r] != 0;
      double loss = 0;
      for (int mb = 0; mb < m; ++mb) loss += v[tensors + p + mb];
      report_->loss = loss / m;
      double span = 0, max_busy = 0;
      for (int r = 0; r < p; ++r) {
        span = std::max(span, v[tensors + p + m + 2 * r]);
        max_busy = std::max(max_busy, v[tensors + p + m + 2 * r + 1]);
      }
      report_->measured_bubble = span > 0 ? (span - max_busy) / span : 0;
      report_->grad_norm = global_norm(norms);
      report_->skipped = nonfinite || !std::isfinite(report_->grad_norm);
      if (!report_->skipped) compute_->optimizer_step(report_->grad_norm);
      return true;
    }
  }
  *err = "unknown op";
  return false;
}

}  // namespace zbpp
