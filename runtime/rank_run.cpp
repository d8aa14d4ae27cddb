// One rank's run (see rank_run.h): start-up checks, resume, the step loop, checkpoints, the
// gathered summary.
#include "runtime/rank_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "core/deps.h"
#include "core/output_file.h"
#include "runtime/checkpoint.h"
#include "runtime/checkpoint_owner.h"
#include "runtime/run_identity.h"
#include "runtime/weights_dump.h"

namespace zbpp {

namespace {

// A 48-bit digest per parameter tensor (in global order, exact in a double) so ranks can compare
// weights through the same all-reduce that carries everything else.
std::vector<double> weight_digests(const Compute& compute, int tensors) {
  std::vector<double> out(tensors, 0.0);
  for (const auto& [id, values] : compute.parameters()) {
    std::uint64_t h = 1469598103934665603ULL;
    for (float f : values) {
      std::uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      h = (h ^ bits) * 1099511628211ULL;
    }
    out[id] = static_cast<double>(h >> 16);
  }
  return out;
}

// Per-op means a rank measures over the steps after the first: what RunOptions::profile gathers.
struct Profile {
  double sum[3] = {0, 0, 0};  // seconds of F, B, W ops
  int count[3] = {0, 0, 0};
  double mem_f = 0, mem_b = 0;  // bytes an F adds, bytes a B adds
  int mem_f_ops = 0, mem_b_ops = 0;
  void add(const std::vector<Op>& ops, const StepReport& r) {
    for (const OpSpan& span : r.spans) {
      OpType t = ops[span.op_index].type;
      int k = t == OpType::F ? 0 : t == OpType::B ? 1 : t == OpType::W ? 2 : -1;
      if (k < 0) continue;
      sum[k] += span.end - span.start;
      ++count[k];
    }
    mem_f += r.mem_after_f;
    mem_b += r.mem_after_b;
    mem_f_ops += r.f_ops;
    mem_b_ops += r.b_ops;
  }
};

// One rank's whole run. Every failure is recorded as the result's error, reported to the
// observer, and told to the other ranks (so each of their errors names this one).
class RankRun {
 public:
  RankRun(const TrainInputs& in, const RunOptions& o, const RankBackend& backend, Transport* transport,
          RunObserver& observer)
      : in_(in), s_(in.schedule), o_(o), backend_(backend), transport_(transport), observer_(observer),
        rank_(transport->rank()) {
    result_.rank = rank_;
  }

  // Anything thrown below (an allocation that fails, say) becomes an error and a stopped run, not
  // an abort.
  RankResult run() {
    try {
      run_unguarded();
    } catch (const std::exception& e) {
      stop(e.what());
    }
    return std::move(result_);
  }

 private:
  // Records and reports `error`, then tells the other ranks `abort_text`. Returns false.
  bool fail(RunError error, const std::string& abort_text) {
    observer_.failed(error);
    transport_->abort(abort_text);
    result_.error = std::move(error);
    return false;
  }
  // "rank R: why", not in a step.
  bool stop(const std::string& why) {
    const std::string who = "rank " + std::to_string(rank_);
    return fail(RunError{rank_, -1, -1, "", why, who + ": " + why}, who + " failed: " + why);
  }
  // "rank R, what: why": a collective step of the run (`what`) failed.
  bool stop_in(const std::string& what, const std::string& why) {
    const std::string text = "rank " + std::to_string(rank_) + ", " + what + ": " + why;
    return fail(RunError{rank_, -1, -1, "", why, text}, "rank " + std::to_string(rank_) + " failed, " + what + ": " + why);
  }
  // The interpreter failed during `what` of step `step`: its message names the rank and the op
  // ("step 3, rank 1, op 7 (F0.3): ...").
  bool failed_op(int step, const std::string& what, const std::string& why) {
    const int index = interp_->failed_op();
    RunError error{rank_, step, index, index >= 0 ? op_short(s_.stages[rank_][index]) : "",
                   index >= 0 ? interp_->failure() : why, what + ", " + why};
    std::string abort_text = "rank " + std::to_string(rank_) + " failed: " + error.text;
    return fail(std::move(error), abort_text);
  }
  // This rank's run, as the checkpoint manifest and the other ranks see it.
  RunIdentity identity() const {
    return run_identity(o_.schedule_hash, in_.model, s_.p * s_.chunks, o_.seed, in_.data, o_.adamw);
  }
  // All-reduces `values` (each rank fills its own part).
  bool gather(std::vector<double>* values, const char* what) {
    std::string why;
    return transport_->allreduce_sum(values, o_.timeout_s, &why) || stop_in(what, why);
  }

  bool run_unguarded();
  bool gather_texts(const std::string& mine, std::vector<std::string>* all, const char* what);
  bool check_identity();
  bool start(int* first_step);
  bool claim_checkpoints();
  bool report_finished();
  bool measure_comm(std::vector<double>* link_seconds);
  bool summarise();

  const TrainInputs& in_;
  const Schedule& s_;
  const RunOptions& o_;
  const RankBackend& backend_;
  Transport* transport_;
  RunObserver& observer_;
  const int rank_;
  std::unique_ptr<Compute> compute_;
  std::unique_ptr<Interpreter> interp_;
  RankResult result_;
  Profile profile_;
  // When each step's run_step returned: the steady-state period is the mean gap after the first.
  std::vector<std::chrono::steady_clock::time_point> step_ends_;
  double span_bubble_rate_sum_ = 0, seconds_sum_ = 0;
  size_t peak_bytes_ = 0;
};

bool RankRun::run_unguarded() {
  // Before anything is allocated: a rank started with another model could not even build it.
  if (!check_identity()) return false;
  std::vector<int> vss;
  for (int c = 0; c < s_.chunks; ++c) vss.push_back(s_.placement[rank_][c]);
  compute_ = backend_.make_compute(vss);
  interp_ = std::make_unique<Interpreter>(s_, rank_, compute_.get(), transport_, o_.adamw, o_.timeout_s);
  if (o_.pace > 0) {
    std::vector<double> min_seconds;
    for (const Op& op : s_.stages[rank_])
      min_seconds.push_back(is_compute(op.type) ? o_.pace * from_quanta(op_duration(op, rank_, in_.problem)) : 0.0);
    interp_->set_pace(std::move(min_seconds));
  }
  // An earlier dump's tensors go before this run writes its own, so none stays stale beside them
  // (every rank's dump comes after rank 0's first message, so after this).
  if (!o_.dump_weights.empty() && rank_ == 0) {
    std::string why;
    if (!clear_weights_dir(o_.dump_weights, &why)) return stop(why);
  }
  // Held for the whole run: another run given this directory is refused, naming this one.
  std::unique_ptr<CheckpointLock> checkpoint_lock;
  if (!o_.checkpoint.empty()) {
    std::string why;
    if (!(checkpoint_lock = lock_checkpoints(o_.checkpoint, rank_, &why))) return stop(why);
  }
  int first_step = 0;
  if (!start(&first_step)) return false;
  result_.summary.first_step = first_step;
  // Checkpoints fall after steps that are multiples of --every (--every above --steps: zbrun says so).
  if (rank_ == 0 && !o_.checkpoint.empty() && first_step > 0 && o_.every <= o_.steps &&
      o_.steps / o_.every * o_.every <= first_step)
    observer_.warn("warning: no checkpoint will be written: this run resumes after step " + std::to_string(first_step - 1) +
                   " (from step" + std::to_string(first_step) + ".rank*.ckpt) and ends at --steps " +
                   std::to_string(o_.steps) + ", before the next multiple of --every " + std::to_string(o_.every));
  if (std::string why = observer_.started(rank_, first_step); !why.empty()) return stop(why);
  if (o_.profile && !measure_comm(&result_.summary.link_seconds)) return false;
  for (int step = first_step; step < o_.steps; ++step) {
    std::string why;
    if (step == o_.inject_step && rank_ == o_.inject_rank) interp_->inject_nonfinite_next_step();
    interp_->set_fault(rank_ == o_.fail_rank && step == o_.fail_step ? o_.fail_op : -1, o_.fault);
    if (!interp_->run_step(in_.data.step_batches(in_.model, step, s_.m), &why))
      return failed_op(step, "step " + std::to_string(step), why);
    step_ends_.push_back(std::chrono::steady_clock::now());
    if (!report_finished()) return false;
    if (!o_.checkpoint.empty() && (step + 1) % o_.every == 0) {
      // Post-validate the last step first, so the checkpoint holds final weights.
      std::string state;
      if (!interp_->finish(&why))
        return failed_op(step, "post-validating step " + std::to_string(step) + " for its checkpoint", why);
      if (!report_finished()) return false;
      if (!compute_->save_state(&state)) return stop("this backend cannot write checkpoints");
      if (!write_checkpoint(o_.checkpoint, rank_, step + 1, o_.schedule_hash, state, &why)) return stop(why);
    }
  }
  std::string why;
  if (!interp_->finish(&why)) return failed_op(o_.steps - 1, "post-validating the last step", why);
  if (!report_finished()) return false;
  // A failed output stops every rank at once (stop tells them), whichever rank it was on.
  if (!o_.dump_weights.empty() && !write_weights(o_.dump_weights, *compute_, &why)) return stop(why);
  if (!o_.dump_weights.empty() && rank_ == 0 && !write_weights_manifest(o_.dump_weights, in_.model, o_.steps, &why))
    return stop(why);
  if (!summarise()) return false;
  if (std::string why = observer_.finished(rank_, result_.summary); !why.empty()) return stop(why);
  return true;
}

// Claims the checkpoint directory and, with `resume`, loads the checkpoint every rank has;
// *first_step is the step to run first.
bool RankRun::start(int* first_step) {
  if (!o_.checkpoint.empty() && !claim_checkpoints()) return false;
  *first_step = 0;
  if (!o_.resume) return true;
  // Resume where every rank has a checkpoint: the smallest of the ranks' latest.
  std::vector<int> steps = checkpoint_steps(o_.checkpoint, rank_);
  std::vector<double> latest(s_.p, 0.0);
  latest[rank_] = steps.empty() ? -1 : steps.back();
  if (!gather(&latest, "finding the checkpoint to resume")) return false;
  *first_step = static_cast<int>(*std::min_element(latest.begin(), latest.end()));
  if (*first_step < 0) return stop(o_.checkpoint + ": no checkpoint of this rank or another to resume from");
  if (*first_step >= o_.steps) {
    // Every rank gathered the same step, so every rank ends here alike: no one waits, rank 0 says why.
    const std::string why = "--resume: " + o_.checkpoint + " holds the state after " + std::to_string(*first_step) +
                            " steps, and --steps " + std::to_string(o_.steps) + " asks for no more; give --steps above " +
                            std::to_string(*first_step);
    result_.error = RunError{rank_, -1, -1, "", why, why};
    if (rank_ == 0) observer_.failed(*result_.error);
    return false;
  }
  std::string state, why;
  if (!read_checkpoint(o_.checkpoint, rank_, *first_step, o_.schedule_hash, &state, &why) ||
      !compute_->load_state(state, &why))
    return stop("cannot resume: " + why);
  interp_->start_at(*first_step);
  return true;
}

// Every rank's `mine`, in rank order, through the all-reduce: first the lengths, then the bytes
// (one per double, each rank filling its own part).
bool RankRun::gather_texts(const std::string& mine, std::vector<std::string>* all, const char* what) {
  const int p = transport_->size();
  std::vector<double> lengths(p, 0.0);
  lengths[rank_] = static_cast<double>(mine.size());
  if (!gather(&lengths, what)) return false;
  std::vector<size_t> offset(p + 1, 0);
  for (int r = 0; r < p; ++r) offset[r + 1] = offset[r] + static_cast<size_t>(lengths[r]);
  std::vector<double> bytes(offset[p], 0.0);
  for (size_t i = 0; i < mine.size(); ++i) bytes[offset[rank_] + i] = static_cast<unsigned char>(mine[i]);
  if (!gather(&bytes, what)) return false;
  all->assign(p, "");
  for (int r = 0; r < p; ++r)
    for (size_t i = offset[r]; i < offset[r + 1]; ++i) (*all)[r] += static_cast<char>(static_cast<int>(bytes[i]));
  return true;
}

// Every rank must train the same run (issue 34): under an MPMD mpirun each rank has its own flags,
// and ranks that differ in anything but the schedule would train a wrong model and succeed. The
// ranks gather each other's identity (run_identity.h) and compare it with rank 0's.
bool RankRun::check_identity() {
  std::vector<std::string> all;
  if (!gather_texts(identity_json(identity()).dump(), &all, "comparing the ranks' runs")) return false;
  const std::string why = ranks_disagree(all);
  if (why.empty()) return true;
  // Every rank gathered the same texts, so every rank ends here alike: no one waits, rank 0 says why.
  result_.error = RunError{rank_, -1, -1, "", why, why};
  if (rank_ == 0) observer_.failed(*result_.error);
  return false;
}

// Before anything is written to --checkpoint DIR: rank 0 checks that this run may use it (its
// manifest, checkpoint_owner.h) and every rank ends alike when not; then each rank removes what
// interrupted writes of its files left, and a fresh run's rank 0 writes the manifest.
bool RankRun::claim_checkpoints() {
  const RunIdentity me = identity();
  const std::string refusal = rank_ == 0 ? check_checkpoint_owner(o_.checkpoint, me, o_.resume) : "";
  std::vector<double> refused(1, refusal.empty() ? 0.0 : 1.0);
  if (!gather(&refused, "checking the checkpoint directory")) return false;
  if (refused[0] > 0) {
    // Rank 0 says why; the others end with it, waiting for no one.
    const std::string why = rank_ == 0 ? refusal : "rank 0 refused the checkpoint directory " + o_.checkpoint;
    result_.error = RunError{rank_, -1, -1, "", why, why};
    if (rank_ == 0) observer_.failed(*result_.error);
    return false;
  }
  std::vector<double> removed(1, remove_checkpoint_temporaries(o_.checkpoint, rank_));
  if (!gather(&removed, "cleaning the checkpoint directory")) return false;
  if (rank_ != 0) return true;
  if (const int n = static_cast<int>(removed[0]); n > 0)
    observer_.warn("--checkpoint: removed " + std::to_string(n) + " temporary file" + (n == 1 ? "" : "s") +
                   " that interrupted checkpoint writes left in " + o_.checkpoint);
  std::string why;
  if (!o_.resume && !write_checkpoint_manifest(o_.checkpoint, me, &why)) return stop(why);
  return true;
}

// Keeps and sums the steps whose figures are complete (with post-validation, a step later).
bool RankRun::report_finished() {
  RunSummary& sum = result_.summary;
  for (StepReport& report : interp_->take_reports()) {
    const int step = report.step;
    peak_bytes_ = std::max(peak_bytes_, report.peak_activation_bytes);
    sum.rolled_back += report.chain_start_rolled_back ? 1 : 0;
    sum.replays += report.replays;
    sum.held += report.held ? 1 : 0;
    // The first step this run makes (step 0, or the first after a resume) includes allocation: left
    // out of the averages, so they cover the same steps the summary names.
    const int first = sum.first_step;
    if (step > first || o_.steps - first == 1) profile_.add(s_.stages[rank_], report);
    if (step > first) {
      span_bubble_rate_sum_ += report.measured_span_bubble_rate;
      seconds_sum_ += report.seconds;
      ++sum.measured_steps;
    }
    result_.steps.push_back(std::move(report));
    if (std::string why = observer_.step_done(rank_, result_.steps.back()); !why.empty()) return stop(why);
  }
  return true;
}

// One-way latency of an activation-sized message over each link r -> r + 1 (the profile's t_comm
// per link, problem.h): rank r first answers its left neighbour's pings, then pings its right
// neighbour, so the chain cannot deadlock. The first rounds are not timed (the neighbour may still
// be setting up, the first transfers allocate), and the median round is taken, so a late neighbour
// or one slow round does not count as latency.
bool RankRun::measure_comm(std::vector<double>* link_seconds) {
  const int p = transport_->size(), warmup = 3, rounds = 20;
  std::string why;
  bool ok = true;
  Message got;
  if (rank_ > 0)
    for (int i = 0; i < warmup + rounds && ok; ++i)
      ok = transport_->recv(rank_ - 1, kActivation, &got, o_.timeout_s, &why) &&
           transport_->send(rank_ - 1, kGradient, got, &why);
  double one_way = 0;
  if (ok && rank_ + 1 < p) {
    std::vector<double> round_trip;
    for (int i = 0; i < warmup + rounds && ok; ++i) {
      auto start = std::chrono::steady_clock::now();
      ok = transport_->send(rank_ + 1, kActivation, Message{0, 0, backend_.payload()}, &why) &&
           transport_->recv(rank_ + 1, kGradient, &got, o_.timeout_s, &why) && (backend_.release(got.data), true);
      if (i >= warmup) round_trip.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (ok) {
      std::nth_element(round_trip.begin(), round_trip.begin() + rounds / 2, round_trip.end());
      one_way = round_trip[rounds / 2] / 2.0;
    }
  }
  std::vector<double> all(p, 0.0);
  all[rank_] = one_way;
  if (ok) ok = transport_->allreduce_sum(&all, o_.timeout_s, &why);
  if (!ok) return stop_in("measuring T_comm", why);
  all.pop_back();  // rank p - 1 has no next rank
  *link_seconds = std::move(all);
  return true;
}

// Gathers what the summary shows of every rank, in the order every rank gathers it.
bool RankRun::summarise() {
  RunSummary& sum = result_.summary;
  sum.state_chain_start = interp_->state_chain_start();
  if (sum.measured_steps > 0) {
    sum.mean_seconds = seconds_sum_ / sum.measured_steps;
    sum.mean_span_bubble_rate = span_bubble_rate_sum_ / sum.measured_steps;
  }
  if (o_.gather_trace) {
    // The last step's compute-op spans, each rank filling its own part of one all-reduced vector.
    std::vector<size_t>& offset = sum.trace_offset;
    offset.assign(s_.p + 1, 0);
    for (int r = 0; r < s_.p; ++r) {
      size_t ops = std::count_if(s_.stages[r].begin(), s_.stages[r].end(), [](const Op& op) { return is_compute(op.type); });
      offset[r + 1] = offset[r] + 2 * ops;
    }
    sum.trace_spans.assign(offset[s_.p], 0.0);
    const std::vector<OpSpan> none;
    const std::vector<OpSpan>& spans = result_.steps.empty() ? none : result_.steps.back().spans;
    for (size_t k = 0; k < spans.size() && 2 * k + 1 < offset[rank_ + 1] - offset[rank_]; ++k) {
      sum.trace_spans[offset[rank_] + 2 * k] = spans[k].start;
      sum.trace_spans[offset[rank_] + 2 * k + 1] = spans[k].end;
    }
    if (!gather(&sum.trace_spans, "gathering the trace")) return false;
    // Written now, so a failed write stops the other ranks in the gathers that follow.
    if (std::string why = observer_.trace_gathered(rank_, sum); !why.empty()) return stop(why);
  }
  if (o_.profile) {
    const int fields = RunSummary::kProfileFields;
    sum.profile.assign(static_cast<size_t>(s_.p) * fields, 0.0);
    auto mean = [](double total, int n) { return n > 0 ? total / n : 0.0; };
    double* mine = &sum.profile[static_cast<size_t>(rank_) * fields];
    for (int k = 0; k < 3; ++k) mine[k] = mean(profile_.sum[k], profile_.count[k]) * 1e3;
    mine[3] = mean(profile_.mem_f, profile_.mem_f_ops) / (1 << 20);
    mine[4] = mine[3] + mean(profile_.mem_b, profile_.mem_b_ops) / (1 << 20);
    if (!gather(&sum.profile, "gathering the profile")) return false;
    if (std::string why = observer_.profile_gathered(rank_, sum); !why.empty()) return stop(why);
  }
  // Measured steady-state period per rank (iterations back to back, the first left out: it
  // allocates); the slowest rank's is the run's.
  std::vector<double> periods(s_.p, 0.0);
  sum.period_gaps = static_cast<int>(step_ends_.size()) - 1;
  if (sum.period_gaps > 0)
    periods[rank_] = std::chrono::duration<double>(step_ends_.back() - step_ends_.front()).count() / sum.period_gaps;
  else
    sum.period_gaps = 0;
  if (!gather(&periods, "gathering measured periods")) return false;
  sum.measured_period = *std::max_element(periods.begin(), periods.end());
  sum.peak_activation_bytes.assign(s_.p, 0.0);
  sum.peak_activation_bytes[rank_] = static_cast<double>(peak_bytes_);
  if (!gather(&sum.peak_activation_bytes, "gathering peak memory")) return false;
  // Final weights, digested per tensor and gathered, so runs can be compared exactly.
  std::vector<double> digests = weight_digests(*compute_, global_tensor_count(in_.model));
  if (!gather(&digests, "final weight digest")) return false;
  std::uint64_t h = 1469598103934665603ULL;
  for (double d : digests) h = (h ^ static_cast<std::uint64_t>(d)) * 1099511628211ULL;
  char digest[32];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h));
  sum.weights_digest = digest;
  return true;
}

}  // namespace

RankResult run_rank(const TrainInputs& in, const RunOptions& o, const RankBackend& backend, Transport* transport,
                    RunObserver& observer) {
  return RankRun(in, o, backend, transport, observer).run();
}

}  // namespace zbpp
