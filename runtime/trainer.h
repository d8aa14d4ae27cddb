// The runtime driver (issue 18): trains a loaded, validated schedule for a number of steps on one
// rank or on every rank, and returns what it measured as values — per step a StepReport, per run a
// RunSummary — and a failure as a RunError naming its rank, step and op. It prints nothing: a
// RunObserver sees each step and the summary as they complete (zbrun's command line prints and
// writes its files there). One function per launch mode; they share one step loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ir.h"
#include "core/problem.h"
#include "runtime/data.h"
#include "runtime/interpreter.h"
#include "runtime/model.h"
#include "runtime/optimizer.h"

namespace zbpp {

/// How to run: the command line's choices, with no command-line types.
struct RunOptions {
  int steps = 20;
  std::uint64_t seed = 1;
  double timeout_s = 10;  ///< the longest any wait may take
  AdamWConfig adamw;
  double pace = 0;  ///< > 0: each compute op lasts at least this many seconds per planned time unit
  // Fault injection (tests of error handling): rank `fail_rank` fails at op `fail_op` of step
  // `fail_step`; `inject_rank` gets a NaN gradient at `inject_step`.
  int fail_rank = -1, fail_op = -1, fail_step = 0;
  Interpreter::Fault fault = Interpreter::Fault::kError;
  int inject_step = -1, inject_rank = -1;
  std::string checkpoint;  ///< directory of checkpoints (checkpoint.h); empty: none
  int every = 0;           ///< with `checkpoint`: write one after every this many steps
  bool resume = false;     ///< start from the latest checkpoint every rank has
  std::uint64_t schedule_hash = 0;  ///< of the schedule file's text: ranks compare theirs at start-up
  std::string dump_weights;  ///< each rank writes its tensors as DIR/tensor<id>.f32; empty: none
  bool gather_trace = false;  ///< gather every rank's op spans of the last step into the summary
  bool profile = false;       ///< measure T_comm and per-op means into the summary (needs B and W apart)
};

/// A failed run, as the rank that met it saw it. `text` is the whole message (zbrun prints it after
/// "zbrun: "); the fields say the same for programs: -1 where the failure was not in a step or op.
struct RunError {
  int rank = -1;
  int step = -1;
  int op_index = -1;
  std::string op;       ///< the op as the file writes it ("F0.1", "SEND_F0.1"), when op_index >= 0
  std::string message;  ///< what went wrong, without the place
  std::string text;
};

/// What a finished run measured; every rank holds the same figures (gathered).
struct RunSummary {
  int first_step = 0;              ///< after a resume, the step it resumed at
  int measured_steps = 0;          ///< steps in the means (the first step allocates and is left out)
  double mean_seconds = 0, mean_span_bubble_rate = 0;
  int period_gaps = 0;             ///< iterations back to back in the period (0: too few steps)
  double measured_period = 0;      ///< seconds, the slowest rank's
  std::vector<double> peak_activation_bytes;  ///< per rank
  std::string weights_digest;      ///< 16 hex digits over every tensor's bits, in global order
  int rolled_back = 0, replays = 0, held = 0;  ///< post-validation, as StepReport counts them
  int state_chain_start = 0;
  /// gather_trace: every rank's compute ops' start and end seconds of the last step, rank after
  /// rank (rank r's at trace_offset[r]).
  std::vector<double> trace_spans;
  std::vector<size_t> trace_offset;
  /// profile: per rank t_f, t_b, t_w (ms per op) and mem_b, mem_w (MiB per microbatch); and the
  /// one-way neighbour latency of an activation-sized message (seconds).
  static constexpr int kProfileFields = 5;
  std::vector<double> profile;
  std::vector<double> link_seconds;  ///< --profile: one-way latency of each link r -> r + 1 (p - 1 values)
};

/// What one rank ran: its finished steps in order, and either its summary or its error.
struct RankResult {
  int rank = 0;
  std::vector<StepReport> steps;
  std::optional<RunError> error;
  RunSummary summary;
};

/// Sees a run as it goes. Each call comes from the rank's own thread (several at once with
/// threads); a non-empty return stops the run on that rank with that reason.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  /// A line worth telling (which GPU partitions the stages got, say).
  virtual void note(const std::string& /*line*/) {}
  /// A line for stderr, from rank 0: something the run did or will not do that was not asked for
  /// (temporary files it removed, say).
  virtual void warn(const std::string& /*line*/) {}
  /// Before the first step; `first_step` > 0 after a resume.
  virtual std::string started(int /*rank*/, int /*first_step*/) { return ""; }
  /// A step whose figures are complete, in step order (with post-validation, a step later).
  virtual std::string step_done(int /*rank*/, const StepReport& /*report*/) { return ""; }
  /// With gather_trace, once every rank's spans are gathered (before the rest of the summary).
  virtual std::string trace_gathered(int /*rank*/, const RunSummary& /*summary*/) { return ""; }
  /// With profile, once every rank's profile is gathered (before the rest of the summary).
  virtual std::string profile_gathered(int /*rank*/, const RunSummary& /*summary*/) { return ""; }
  /// After the last step, with the figures gathered from every rank.
  virtual std::string finished(int /*rank*/, const RunSummary& /*summary*/) { return ""; }
  /// A failure to report, before the other ranks are told of it.
  virtual void failed(const RunError& /*error*/) {}
};

/// What every launch mode trains: a lowered, validated schedule (with its problem, for --pace),
/// the model and the data.
struct TrainInputs {
  const Schedule& schedule;
  const Problem& problem;
  const GptConfig& model;
  const DataSource& data;
};

/// Every rank as a thread of this process on the CPU backend, over the in-process transport.
std::vector<RankResult> train_local_threads(const TrainInputs& in, const RunOptions& o, RunObserver& observer);

#ifdef ZBPP_HAVE_MPI
/// This process as its MPI rank on the CPU backend (MPI is initialised by the caller).
RankResult train_mpi_rank(const TrainInputs& in, const RunOptions& o, RunObserver& observer);
#endif

#ifdef ZBPP_HAVE_CUDA
/// Every rank as a thread on GPU 0: with `single_gpu` each in its own SM partition (green
/// contexts) where the GPU has them, else each on its own stream.
std::vector<RankResult> train_cuda_threads(const TrainInputs& in, const RunOptions& o, bool single_gpu,
                                           RunObserver& observer);
#endif

#if defined(ZBPP_HAVE_NCCL) && defined(ZBPP_HAVE_MPI)
/// This process as its MPI rank on its GPU, NCCL between ranks.
RankResult train_nccl_rank(const TrainInputs& in, const RunOptions& o, RunObserver& observer);
#endif

/// 0 when every rank succeeded, else 1 (zbrun's exit code).
int exit_code(const std::vector<RankResult>& ranks);

}  // namespace zbpp
