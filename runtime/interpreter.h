// The interpreter: replays one rank's op list from a lowered schedule, driving a Compute backend
// and a Transport. It never infers: every receive it performs is in the file. Errors come back as
// text naming the rank and the op; nothing here exits the process.
#pragma once

#include <string>
#include <vector>

#include "planner/ir.h"
#include "runtime/compute.h"
#include "runtime/optimizer.h"
#include "runtime/transport.h"

namespace zbpp {

struct OpSpan {
  double start = 0, end = 0;  ///< seconds since the step began
  int op_index = 0;
};

/// What one step measured, the same on every rank after the step's all-reduce.
struct StepReport {
  double loss = 0;               ///< mean over microbatches, added in microbatch order
  double seconds = 0;            ///< this rank's wall time for the step
  double measured_bubble = 0;    ///< (max span - max busy) / max span over ranks, compute ops only
  double grad_norm = 0;
  bool skipped = false;          ///< a NaN/inf gradient: no rank stepped
  std::vector<OpSpan> spans;     ///< this rank's compute ops
  size_t peak_activation_bytes = 0;       ///< this rank, after any compute op
  double mem_after_f = 0, mem_after_b = 0;  ///< summed byte changes of F ops and of B ops (not BW)
  int f_ops = 0, b_ops = 0;
};

class Interpreter {
 public:
  /// `schedule` must be lowered and validated; `rank` picks its op list.
  Interpreter(const Schedule& schedule, int rank, Compute* compute, Transport* transport, double timeout_s);
  /// Runs one iteration on `data` (the step's microbatches). False with *err on failure.
  bool run_step(const std::vector<std::vector<int>>& data, StepReport* report, std::string* err);
  /// Fault injection for tests: the op at `index` fails instead of running.
  void fail_at(int index) { fail_at_ = index; }
  /// Fault injection: this rank's gradients get a NaN before the next step's optimizer step.
  void inject_nonfinite_next_step() { inject_nonfinite_ = true; }

 private:
  bool run_op(int index, std::string* err);
  std::string where(int index) const;

  const Schedule& schedule_;
  VirtualStageMap map_;
  int rank_;
  Compute* compute_;
  Transport* transport_;
  double timeout_s_;
  // Tensors between ops: [kind][vs * m + mb] -> data. inbox: waiting for their consumer op on this
  // rank; outbox: made here, waiting for their SEND.
  std::vector<std::vector<std::vector<float>>> inbox_, outbox_;
  StepReport* report_ = nullptr;
  int fail_at_ = -1;
  bool inject_nonfinite_ = false;
};

}  // namespace zbpp
