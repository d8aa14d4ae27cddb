// The interpreter: replays one rank's op list from a lowered schedule, driving a Compute backend
// and a Transport. It never infers: every receive it performs is in the file. Errors come back as
// text naming the rank and the op; nothing here exits the process.
//
// The optimizer follows the file. sync: OPT_STEP all-reduces the gradient state and steps.
// post-validation (paper §4): OPT_STEP steps under the partial state that came forward
// (RECV_STATE/SEND_STATE), skipping when it already shows a NaN/inf or a norm over the clipping
// limit; in the next iteration VALIDATE gets the full state (RECV_VALID/SEND_VALID), rolls the step
// back in place and redoes it where the partial state misled it, and only then clears the
// gradients. The forwards a stage ran before VALIDATE used the speculative weights: when any
// stage's step was wrong, every rank finishes the iteration without its optimizer ops and runs it
// again (a replay), so training is the synchronous optimizer's. After a wrong step the next
// iteration post-validates before its forwards (no speculation) until a post-validation finds
// nothing wrong, so persistent clipping costs a wait for the state, not a replay every iteration.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/ir.h"
#include "runtime/compute.h"
#include "runtime/optimizer.h"
#include "runtime/transport.h"

namespace zbpp {

struct OpSpan {
  double start = 0, end = 0;  ///< seconds since the step began: the backend's OpTimer's where it has one, else the wall clock's
  int op_index = 0;
};

/// What one step measured, the same on every rank once the step's gradient state is complete
/// (after its all-reduce with sync, after its VALIDATE with post-validation).
struct StepReport {
  int step = 0;
  double loss = 0;               ///< mean over microbatches, added in microbatch order
  double seconds = 0;            ///< this rank's wall time for the step
  double measured_span_bubble_rate = 0;    ///< (max span - max busy) / max span over ranks, compute ops only
  double grad_norm = 0;
  bool skipped = false;          ///< a NaN/inf gradient: no rank stepped
  bool rolled_back = false;      ///< post-validation: this rank undid its speculative step (and redid it unless skipped)
  bool chain_start_rolled_back = false;  ///< post-validation: the state chain's first rank did (state_chain_start)
  int replays = 0;               ///< post-validation: times this step ran again after a wrong speculative step
  bool held = false;             ///< post-validation: post-validated before its forwards (the last one found a wrong step)
  std::vector<OpSpan> spans;     ///< this rank's compute ops (of the last run, if replayed)
  size_t peak_activation_bytes = 0;       ///< this rank, after any compute op
  double mem_after_f = 0, mem_after_b = 0;  ///< summed byte changes of F ops and of B ops (not BW)
  int f_ops = 0, b_ops = 0;
};

class Interpreter {
 public:
  /// `schedule` must be lowered and validated; `rank` picks its op list.
  /// `adamw` must be the backend's: post-validation decides by its clipping limit.
  Interpreter(const Schedule& schedule, int rank, Compute* compute, Transport* transport, const AdamWConfig& adamw,
              double timeout_s);
  /// Runs one iteration on `data` (the step's microbatches). False with *err on failure.
  bool run_step(const std::vector<std::vector<int>>& data, std::string* err);
  /// After the last step: with post-validation, post-validates it (its VALIDATE chain alone), so the
  /// weights are final. Nothing to do with sync.
  bool finish(std::string* err);
  /// Reports of the steps whose figures are complete since the last call, in step order. With
  /// post-validation step k's report completes during step k+1 (or in finish()).
  std::vector<StepReport> take_reports();
  /// The number of the next step (after resuming from a checkpoint of that many steps).
  void start_at(int step) { step_ = step; }
  /// Post-validation: the rank that starts the state chain, as the file's ops say (lower.h's
  /// state_chain starts it on the stage whose iteration starts first: 0 for every placement zbplan
  /// writes). It steps on the least of the state, so its speculative steps are the ones most often
  /// rolled back.
  int state_chain_start() const { return chain_start_; }
  /// Fault injection for tests, at the op at `index` (-1: none). kError: the op fails instead of
  /// running. kHang: the rank stops there, answering nothing, until another rank ends the run.
  /// kTruncate: the op (a send) sends only the first half of its message. kDevice: a kernel that
  /// faults on the GPU runs before the op, as a kernel bug would (Compute::inject_device_fault).
  enum class Fault { kError, kHang, kTruncate, kDevice };
  /// "error", "hang", "truncate", "device": as --fault names them.
  static const char* fault_name(Fault f) {
    return f == Fault::kHang ? "hang" : f == Fault::kTruncate ? "truncate" : f == Fault::kDevice ? "device" : "error";
  }
  void set_fault(int index, Fault fault) {
    fault_at_ = index;
    fault_ = fault;
  }
  /// Pacing: op i lasts at least min_seconds[i] (the rest is slept), so a run on too few cores
  /// still follows the plan's timing. Empty: no pacing.
  void set_pace(std::vector<double> min_seconds) { pace_ = std::move(min_seconds); }
  /// Fault injection: this rank's gradients get a NaN before the next step's optimizer step.
  void inject_nonfinite_next_step() { inject_nonfinite_ = true; }
  /// After run_step or finish failed: the index of the op that failed, and what went wrong there
  /// (the error text without its "rank R, op I (...)" place).
  int failed_op() const { return failed_op_; }
  const std::string& failure() const { return failure_; }

 private:
  enum class Pass { kAll, kSkipPostValidation, kPostValidationOnly };
  bool run_ops(Pass pass, std::string* err);
  void start_clock();
  bool fail(int index, std::string* err);
  bool settle_spans(std::string* err);
  bool run_op(int index, std::string* err);
  bool run_optimizer_op(const Op& op, std::string* err);
  void add_own_state();
  void post_validate_previous();
  void inject_fault();
  void cut(Payload* data);
  std::string where(int index) const;

  const Schedule& schedule_;
  VirtualStageMap map_;
  int rank_;
  Compute* compute_;
  Transport* transport_;
  AdamWConfig adamw_;
  double timeout_s_;
  bool post_validation_;
  // The state chain's ends, as the file's ops say: the rank that receives no state starts it, the
  // one that sends none ends it with the complete state, so its step is exact.
  int chain_start_ = 0;
  bool chain_end_ = false;  ///< this rank ends the chain
  int tensors_;  ///< gradient tensors in the whole model (the state vector's first part)
  std::chrono::steady_clock::time_point start_;
  // Tensors between ops: [kind][vs * m + mb] -> data. inbox: waiting for their consumer op on this
  // rank; outbox: made here, waiting for their SEND.
  std::vector<std::vector<Payload>> inbox_, outbox_;
  StepReport report_;                // the step running now
  size_t settled_ = 0;               // report_.spans before this hold their final times (settle_spans)
  std::vector<StepReport> finished_;
  int step_ = 0;
  int fault_at_ = -1;
  Fault fault_ = Fault::kError;
  bool truncate_ = false;      ///< the send running now sends half its message (Fault::kTruncate)
  std::vector<double> pace_;  ///< per op: the least seconds it lasts (set_pace)
  bool inject_nonfinite_ = false;
  int failed_op_ = -1;
  std::string failure_;

  // Post-validation. The state vector: per-tensor squared norms, then per rank a NaN/inf flag,
  // per microbatch its loss, per rank span and busy seconds, per rank its speculative decision.
  std::vector<double> state_;        // this step's state as it travels forward
  bool own_state_added_ = false;
  bool pending_ = false;             // a speculative step awaits post-validation
  std::vector<double> pending_state_;  // the state it stepped under (complete on the last rank)
  double pending_norm_ = 0;          // the partial norm it stepped with
  int pending_decision_ = 0;
  StepReport pending_report_;
  std::vector<double> full_state_;   // the previous step's full state, as it travels back
  bool compute_ran_ = false;         // compute ops ran in this attempt (before VALIDATE, they may be wrong)
  bool replay_ = false;              // this attempt must run again: skip its optimizer ops
  bool hold_next_ = false;           // the last post-validation found a wrong step: post-validate before the forwards
};

}  // namespace zbpp
