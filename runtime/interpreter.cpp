// The per-rank replay loop (see interpreter.h).
#include "runtime/interpreter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <thread>
#include <utility>

#include "core/deps.h"

namespace zbpp {

namespace {
using Clock = std::chrono::steady_clock;
}

Interpreter::Interpreter(const Schedule& schedule, int rank, Compute* compute, Transport* transport,
                         const AdamWConfig& adamw, double timeout_s)
    : schedule_(schedule), map_(schedule.placement), rank_(rank), compute_(compute), transport_(transport),
      adamw_(adamw), timeout_s_(timeout_s), post_validation_(schedule.optimizer == Optimizer::kPostValidation),
      tensors_(static_cast<int>(compute->grad_stats().squared_norms.size())) {
  size_t slots = static_cast<size_t>(map_.virtual_stages()) * schedule.m;
  inbox_.assign(2, std::vector<Payload>(slots));
  outbox_.assign(2, std::vector<Payload>(slots));
  auto has = [&](int r, OpType t) {
    const auto& ops = schedule.stages[r];
    return std::any_of(ops.begin(), ops.end(), [t](const Op& op) { return op.type == t; });
  };
  if (post_validation_) {
    chain_end_ = !has(rank, OpType::SEND_STATE);
    while (chain_start_ + 1 < schedule.p && has(chain_start_, OpType::RECV_STATE)) ++chain_start_;
  }
}

std::string Interpreter::where(int index) const {
  const Op& op = schedule_.stages[rank_][index];
  std::string text = "rank " + std::to_string(rank_) + ", op " + std::to_string(index) + " (" + op_short(op);
  if (is_send(op.type)) text += " to rank " + std::to_string(op.peer);
  if (is_recv(op.type)) text += " from rank " + std::to_string(op.peer);
  return text + ")";
}

namespace {

// Where each figure sits in the optimizer's state vector (interpreter.h). Every element has one
// contributing rank, so sums over ranks are exact in any order.
struct StateLayout {
  int tensors, p, m;
  size_t flag(int r) const { return static_cast<size_t>(tensors + r); }
  size_t loss(int mb) const { return static_cast<size_t>(tensors + p + mb); }
  size_t span(int r) const { return static_cast<size_t>(tensors + p + m + 2 * r); }
  size_t busy(int r) const { return span(r) + 1; }
  size_t decision(int r) const { return static_cast<size_t>(tensors + 3 * p + m + r); }
  size_t size() const { return static_cast<size_t>(tensors + 4 * p + m); }
};

// Speculative decisions (post-validation): skipped, stepped under a partial norm (unclipped),
// stepped under the complete state (exact).
enum Decision { kSkipped = 0, kStepped = 1, kExact = 2 };

// What a (partial or complete) state says: the global norm so far, and whether to skip.
struct Verdict {
  double norm = 0;
  bool skip = false;
};

Verdict judge(const std::vector<double>& v, const StateLayout& l) {
  Verdict out;
  out.norm = global_norm(std::vector<double>(v.begin(), v.begin() + l.tensors));
  bool nonfinite = false;
  for (int r = 0; r < l.p; ++r) nonfinite = nonfinite || v[l.flag(r)] != 0;
  out.skip = nonfinite || !std::isfinite(out.norm);
  return out;
}

void summarize(const std::vector<double>& v, const StateLayout& l, StepReport* report) {
  Verdict verdict = judge(v, l);
  double loss = 0;
  for (int mb = 0; mb < l.m; ++mb) loss += v[l.loss(mb)];
  report->loss = loss / l.m;
  double span = 0, max_busy = 0;
  for (int r = 0; r < l.p; ++r) {
    span = std::max(span, v[l.span(r)]);
    max_busy = std::max(max_busy, v[l.busy(r)]);
  }
  report->measured_span_bubble_rate = span > 0 ? (span - max_busy) / span : 0;
  report->grad_norm = verdict.norm;
  report->skipped = verdict.skip;
}

}  // namespace

bool Interpreter::run_step(const std::vector<std::vector<int>>& data, std::string* err) {
  report_ = StepReport{};
  report_.step = step_;
  compute_->set_step_data(&data);
  if (!post_validation_) compute_->zero_grad();  // with post-validation VALIDATE clears them, after any rollback
  state_.clear();
  own_state_added_ = false;
  compute_ran_ = false;
  replay_ = false;
  start_clock();
  if (post_validation_ && pending_ && hold_next_) {
    // The last post-validation found a wrong speculative step (clipping, say, which tends to persist):
    // post-validate first, so this iteration's forwards run on post-validated weights. Every rank knows
    // the same verdict, so all of them take this order (lowering's "start" placement, which
    // cannot deadlock); speculation resumes once a post-validation finds nothing wrong.
    report_.held = true;
    if (!run_ops(Pass::kPostValidationOnly, err) || !run_ops(Pass::kSkipPostValidation, err)) return false;
  } else if (!run_ops(Pass::kAll, err)) {
    return false;
  }
  if (replay_) {
    // Some stage's speculative step was wrong, so this attempt's forwards before VALIDATE used
    // wrong weights. Everything it made is discarded; the post-validation is done and stays.
    compute_->zero_grad();
    int replays = report_.replays + 1;
    report_ = StepReport{};
    settled_ = 0;
    report_.step = step_;
    report_.replays = replays;
    replay_ = false;
    if (!run_ops(Pass::kSkipPostValidation, err)) return false;
  }
  report_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  if (post_validation_) pending_report_ = report_;
  else finished_.push_back(report_);
  ++step_;
  return true;
}

bool Interpreter::finish(std::string* err) {
  if (!post_validation_ || !pending_) return true;
  compute_ran_ = false;
  start_clock();
  return run_ops(Pass::kPostValidationOnly, err);
}

std::vector<StepReport> Interpreter::take_reports() {
  std::vector<StepReport> out;
  out.swap(finished_);
  return out;
}

void Interpreter::start_clock() {
  start_ = Clock::now();
  // finish() keeps the last step's report: its spans have their times.
  settled_ = report_.spans.size();
  if (OpTimer* timer = compute_->timer()) timer->start();
}

// The failure of op `index`. Where the backend runs ops asynchronously and the device itself
// failed, the fault may lie in an earlier op still running: the place named is the first op not
// known to have finished, up to this one.
bool Interpreter::fail(int index, std::string* err) {
  int at = index, first = -1;
  std::string place = where(index);
  OpTimer* timer = compute_->timer();
  if (timer && timer->device_failed(&first) && first >= 0 && settled_ + first < report_.spans.size() &&
      report_.spans[settled_ + first].op_index != index) {
    at = report_.spans[settled_ + first].op_index;
    place = where(at) + " or an op after it up to op " + std::to_string(index) +
            " (the device failed while ops ran asynchronously, these or other work on the GPU; " +
            "CUDA_LAUNCH_BLOCKING=1 names the op)";
  }
  failed_op_ = at;
  failure_ = *err;
  *err = place + ": " + *err;
  return false;
}

// Spans the backend's timer has not given times yet get them (a wait for the device). False with
// *err (not yet placed: the caller's failure path places it) when the device failed.
bool Interpreter::settle_spans(std::string* err) {
  OpTimer* timer = compute_->timer();
  if (!timer || settled_ == report_.spans.size()) return true;  // so a pass that ran no op has none
  std::vector<std::pair<double, double>> times;
  if (!timer->collect(&times, err)) return false;
  if (times.size() != report_.spans.size() - settled_) {
    *err = "the backend timed " + std::to_string(times.size()) + " ops, " +
           std::to_string(report_.spans.size() - settled_) + " ran";
    return false;
  }
  for (const auto& [start, end] : times) {
    report_.spans[settled_].start = start;
    report_.spans[settled_].end = end;
    ++settled_;
  }
  return true;
}

bool Interpreter::run_ops(Pass pass, std::string* err) {
  const auto& ops = schedule_.stages[rank_];
  OpTimer* timer = compute_->timer();
  int last = -1;  // the last op this pass ran
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const bool post_validation = is_post_validation_op(ops[i].type);
    if ((pass == Pass::kSkipPostValidation && post_validation) || (pass == Pass::kPostValidationOnly && !post_validation))
      continue;
    last = i;
    const bool compute = is_compute(ops[i].type);
    double t0 = std::chrono::duration<double>(Clock::now() - start_).count();
    size_t bytes_before = compute ? compute_->activation_bytes() : 0;
    bool ok;
    try {
      truncate_ = false;
      if (i == fault_at_) inject_fault();
      if (compute && timer) timer->begin();
      ok = is_optimizer_op(ops[i].type) ? run_optimizer_op(ops[i], err) : run_op(i, err);
      if (compute && timer && ok) timer->end();
    } catch (const std::exception& e) {
      *err = e.what();
      ok = false;
    }
    if (!ok) return fail(i, err);
    if (compute) {
      compute_ran_ = true;
      if (!pace_.empty()) std::this_thread::sleep_until(start_ + std::chrono::duration_cast<Clock::duration>(
                                                                   std::chrono::duration<double>(t0 + pace_[i])));
      double t1 = std::chrono::duration<double>(Clock::now() - start_).count();
      report_.spans.push_back({t0, t1, i});  // a timer's times replace these (settle_spans)
      size_t bytes = compute_->activation_bytes();
      report_.peak_activation_bytes = std::max(report_.peak_activation_bytes, bytes);
      double change = static_cast<double>(bytes) - static_cast<double>(bytes_before);
      if (ops[i].type == OpType::F) report_.mem_after_f += change, ++report_.f_ops;
      if (ops[i].type == OpType::B) report_.mem_after_b += change, ++report_.b_ops;
    }
  }
  return settle_spans(err) || fail(last, err);
}

void Interpreter::inject_fault() {
  switch (fault_) {
    case Fault::kError:
      throw std::runtime_error("injected failure (--fail-at)");
    case Fault::kHang:
      // Stuck outside the transport, as a rank in a runaway kernel would be. Under MPI the job's
      // abort kills this process; in-process the thread notices the abort and ends.
      while (!transport_->aborted()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      throw std::runtime_error("hung here (--fault hang) until another rank stopped the run");
    case Fault::kTruncate:
      truncate_ = true;
      return;
    case Fault::kDevice:
      // The op itself runs: the fault surfaces at a later call, as a real one would.
      if (!compute_->inject_device_fault()) throw std::runtime_error("--fault device: this backend has no device");
      return;
  }
}

// A send under Fault::kTruncate loses the second half of its message (host payloads: the CLI
// refuses the fault with the CUDA backend).
void Interpreter::cut(Payload* data) {
  if (truncate_) data->host.resize(data->host.size() / 2);
}

// This rank's contributions to the state vector (gradient norms, NaN/inf flag, losses, span and
// busy time), then, with post-validation, its speculative decision under the state so far.
void Interpreter::add_own_state() {
  if (own_state_added_) return;
  own_state_added_ = true;
  // The spans go into the state (the measured bubble): a timer's times must be in.
  if (std::string why; !settle_spans(&why)) throw std::runtime_error(why);
  if (inject_nonfinite_) {
    compute_->inject_nonfinite();
    inject_nonfinite_ = false;
  }
  GradStats g = compute_->grad_stats();
  const StateLayout l{tensors_, schedule_.p, schedule_.m};
  if (state_.empty()) state_.assign(l.size(), 0.0);
  for (int t = 0; t < tensors_; ++t) state_[t] += g.squared_norms[t];
  state_[l.flag(rank_)] = g.nonfinite ? 1.0 : 0.0;
  for (int mb = 0; mb < schedule_.m; ++mb) {
    double loss = 0;
    if (compute_->loss(mb, &loss)) state_[l.loss(mb)] = loss;
  }
  double first = 1e300, last = 0, busy = 0;
  for (const OpSpan& span : report_.spans) {
    first = std::min(first, span.start);
    last = std::max(last, span.end);
    busy += span.end - span.start;
  }
  state_[l.span(rank_)] = report_.spans.empty() ? 0 : last - first;
  state_[l.busy(rank_)] = busy;
  if (!post_validation_) return;
  // The state chain reaches its last rank with every contribution: its step is exact. Others
  // step unclipped when the partial state allows, else skip and wait for post-validation (paper §4).
  Verdict partial = judge(state_, l);
  pending_norm_ = partial.norm;
  if (partial.skip) pending_decision_ = kSkipped;
  else if (chain_end_) pending_decision_ = kExact;
  else if (clip_scale(partial.norm, adamw_) != 1.0f) pending_decision_ = kSkipped;  // will be clipped: wait
  else pending_decision_ = kStepped;
  state_[l.decision(rank_)] = pending_decision_;
}

// VALIDATE: the previous step under the complete state. Undo and redo this rank's step where the
// partial state misled it; replay this iteration if any rank's was wrong and forwards already ran.
void Interpreter::post_validate_previous() {
  const StateLayout l{tensors_, schedule_.p, schedule_.m};
  const std::vector<double>& full = chain_end_ ? pending_state_ : full_state_;
  Verdict verdict = judge(full, l);
  float right_scale = clip_scale(verdict.norm, adamw_);
  auto wrong = [&](int decision) {
    if (decision == kExact) return false;
    if (decision == kStepped) return verdict.skip || right_scale != 1.0f;
    return !verdict.skip;
  };
  if (pending_decision_ == kStepped && wrong(kStepped)) {
    compute_->optimizer_rollback(pending_norm_);
    pending_report_.rolled_back = true;
  }
  if (wrong(pending_decision_) && !verdict.skip) compute_->optimizer_step(verdict.norm);
  bool any_wrong = false;
  for (int r = 0; r < schedule_.p; ++r) any_wrong = any_wrong || wrong(static_cast<int>(full[l.decision(r)]));
  pending_report_.chain_start_rolled_back =
      static_cast<int>(full[l.decision(chain_start_)]) == kStepped && wrong(kStepped);
  summarize(full, l, &pending_report_);
  finished_.push_back(pending_report_);
  pending_ = false;
  compute_->zero_grad();
  if (any_wrong && compute_ran_) replay_ = true;
  hold_next_ = any_wrong;
}

bool Interpreter::run_optimizer_op(const Op& op, std::string* err) {
  const StateLayout l{tensors_, schedule_.p, schedule_.m};
  auto receive = [&](MessageKind kind, std::vector<double>* into) {
    Message msg;
    if (!transport_->recv(op.peer, kind, &msg, timeout_s_, err)) return false;
    *into = unpack_doubles(msg.data);
    if (into->size() != l.size()) {
      *err = "optimizer state of " + std::to_string(into->size()) + " values, expected " + std::to_string(l.size()) +
             " (a truncated message)";
      return false;
    }
    return true;
  };
  auto send = [&](MessageKind kind, const std::vector<double>& values) {
    Message msg{-1, -1, pack_doubles(values)};
    cut(&msg.data);
    return transport_->send(op.peer, kind, std::move(msg), err);
  };
  switch (op.type) {
    case OpType::RECV_VALID:
      return !pending_ || receive(kFullState, &full_state_);
    case OpType::SEND_VALID:
      return !pending_ || send(kFullState, chain_end_ ? pending_state_ : full_state_);
    case OpType::VALIDATE:
      if (pending_) post_validate_previous();
      else compute_->zero_grad();
      return true;
    case OpType::RECV_STATE:
      return replay_ || receive(kPartialState, &state_);
    case OpType::SEND_STATE:
      if (replay_) return true;
      add_own_state();
      return send(kPartialState, state_);
    case OpType::OPT_STEP:
      if (replay_) return true;
      add_own_state();
      if (post_validation_) {
        if (pending_decision_ != kSkipped) compute_->optimizer_step(pending_norm_);
        pending_ = true;
        pending_state_ = state_;
        return true;
      }
      // sync: one all-reduce carries the whole state; every rank steps under the complete norm.
      if (!transport_->allreduce_sum(&state_, timeout_s_, err)) return false;
      summarize(state_, l, &report_);
      if (!report_.skipped) compute_->optimizer_step(report_.grad_norm);
      return true;
    default:
      *err = "not an optimizer op";
      return false;
  }
}

bool Interpreter::run_op(int index, std::string* err) {
  const Op& op = schedule_.stages[rank_][index];
  const int m = schedule_.m, last_vs = map_.virtual_stages() - 1;
  const int vs = map_.vs(rank_, op.chunk);
  auto box = [&](std::vector<std::vector<Payload>>& b, int kind, int v) -> Payload& {
    return b[kind][static_cast<size_t>(v) * m + op.mb];
  };
  // Empties the slot (a moved-from payload would keep its device id), so a second read is caught.
  auto take = [&](Payload& slot, const char* what) {
    if (slot.empty()) throw std::runtime_error(std::string("no ") + what + " for it has arrived (missing RECV?)");
    return std::exchange(slot, Payload{});
  };
  switch (op.type) {
    case OpType::RECV_F:
    case OpType::RECV_B: {
      const MessageKind kind = message_kind(op.type);
      Message msg;
      if (!transport_->recv(op.peer, kind, &msg, timeout_s_, err)) return false;
      if (msg.mb != op.mb || msg.to_vs != vs) {
        *err = "received microbatch " + std::to_string(msg.mb) + " for virtual stage " + std::to_string(msg.to_vs) +
               ", expected microbatch " + std::to_string(op.mb) + " for virtual stage " + std::to_string(vs);
        return false;
      }
      // The backend reads one activation from it: a short message, or one of the other kind of
      // payload, must stop here.
      if (std::string why = compute_->refuses(msg.data); !why.empty()) {
        *err = "received " + why;
        return false;
      }
      box(inbox_, kind, vs) = std::move(msg.data);
      return true;
    }
    case OpType::SEND_F:
    case OpType::SEND_B: {
      const MessageKind kind = message_kind(op.type);
      Message msg{op.mb, message_peer_vs(op.type, vs), take(box(outbox_, kind, vs), "output")};
      cut(&msg.data);
      return transport_->send(op.peer, kind, std::move(msg), err);
    }
    case OpType::F: {
      Payload input, output;
      if (vs > 0) input = take(box(inbox_, kActivation, vs), "input activation");
      compute_->forward(op.chunk, op.mb, op.slot, vs > 0 ? &input : nullptr, vs < last_vs ? &output : nullptr);
      if (vs < last_vs) {  // V-shape: the next virtual stage may be here
        const Consumer to = *consumer_of(op, rank_, map_);
        (to.remote ? box(outbox_, kActivation, vs) : box(inbox_, kActivation, to.vs)) = std::move(output);
      }
      return true;
    }
    case OpType::B:
    case OpType::BW: {
      Payload dout, dinput;
      if (vs < last_vs) dout = take(box(inbox_, kGradient, vs), "output gradient");
      compute_->backward_input(op.chunk, op.mb, op.slot, vs < last_vs ? &dout : nullptr, vs > 0 ? &dinput : nullptr);
      if (vs > 0) {
        const Consumer to = *consumer_of(op, rank_, map_);
        (to.remote ? box(outbox_, kGradient, vs) : box(inbox_, kGradient, to.vs)) = std::move(dinput);
      }
      if (op.type == OpType::BW) compute_->backward_weight(op.chunk, op.mb, op.slot);
      return true;
    }
    case OpType::W:
      compute_->backward_weight(op.chunk, op.mb, op.slot);
      return true;
    default:
      break;
  }
  *err = "unknown op";
  return false;
}

}  // namespace zbpp
