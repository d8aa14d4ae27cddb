// The compute backend interface the interpreter drives: one object per rank, holding the model
// chunks that rank runs. CPU (runtime/backend/cpu) and CUDA (runtime/backend/cuda) backends implement the same contract.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "runtime/payload.h"

namespace zbpp {

/// The compute backends, as --backend names them.
enum class Backend { kCpu, kCuda };
inline const char* backend_name(Backend b) { return b == Backend::kCuda ? "cuda" : "cpu"; }

/// Per-tensor squared gradient norms in global tensor order (zero for tensors this rank does not
/// hold) and whether any gradient is not finite: what a global clip and NaN check need.
struct GradStats {
  std::vector<double> squared_norms;
  bool nonfinite = false;
};

/// How a backend whose ops run after the call returns (the CUDA backend enqueues them on its
/// stream and does not wait) times them: the caller marks each op's begin and end around the call,
/// and reads the times once it needs them. A backend whose calls return with the work done has
/// none (Compute::timer() is null) and is timed by the wall clock.
class OpTimer {
 public:
  virtual ~OpTimer() = default;
  /// Times count from here, and marks left from a failed step are forgotten.
  virtual void start() = 0;
  /// Around one op's calls.
  virtual void begin() = 0;
  virtual void end() = 0;
  /// Waits for every op marked since the last collect; *times gets their [begin, end] in seconds
  /// since start(), in marking order. False with *err when the device failed.
  virtual bool collect(std::vector<std::pair<double, double>>* times, std::string* err) = 0;
  /// After an error: whether the device itself failed, and then in *first the first op marked
  /// since the last collect not known to have finished (the fault lies in it or a later one).
  virtual bool device_failed(int* first) = 0;
};

class Compute {
 public:
  virtual ~Compute() = default;
  /// Why `p` cannot be an input activation or output gradient of this backend's (the other kind
  /// of payload, or not one activation's size: a truncated message), or "" when it can.
  virtual std::string refuses(const Payload& p) const = 0;
  /// Tokens of this step's microbatches: [mb] -> batch * (seq + 1) tokens (inputs and next-token targets).
  virtual void set_step_data(const std::vector<std::vector<int>>* microbatches) = 0;
  /// F of `chunk` for microbatch `mb`, stashing what B and W need in `slot`. `input` is the previous
  /// virtual stage's output (null on virtual stage 0; a device buffer it names passes to the
  /// backend); `output` is set to this one's (null on the last).
  virtual void forward(int chunk, int mb, int slot, const Payload* input, Payload* output) = 0;
  /// B: `dinput` is set to the gradient w.r.t. the chunk's input (null on virtual stage 0).
  /// `doutput` is the next virtual stage's input gradient (null on the last, which starts from the
  /// loss; a device buffer it names passes to the backend).
  virtual void backward_input(int chunk, int mb, int slot, const Payload* doutput, Payload* dinput) = 0;
  /// W: weight gradients of `chunk` for `mb`, accumulated (+=) into the chunk's gradients; frees the slot.
  virtual void backward_weight(int chunk, int mb, int slot) = 0;
  /// Loss of microbatch `mb` this step, if this rank computed it (last virtual stage).
  virtual bool loss(int mb, double* out) const = 0;
  virtual void zero_grad() = 0;
  virtual GradStats grad_stats() const = 0;
  /// AdamW on this rank's parameters; `global_norm` is the whole model's gradient norm, which the
  /// backend clips to its configured limit.
  virtual void optimizer_step(double global_norm) = 0;
  /// Undoes the last optimizer_step in place (paper Algorithm 1, no saved copy), given the same
  /// global norm; the gradients must still be those that step used. Post-validation calls it when
  /// a speculative step turns out wrong.
  virtual void optimizer_rollback(double global_norm) = 0;
  /// Bytes of activations held now: microbatches whose F ran and whose W has not (what the
  /// planner calls M_B after F and M_W after B).
  virtual size_t activation_bytes() const = 0;
  /// Fault injection (tests, demos): makes one of this rank's gradients NaN before the optimizer step.
  virtual void inject_nonfinite() = 0;
  /// Fault injection: queues a kernel that faults on the device, as a kernel bug would (the error
  /// surfaces at a later call). False where the backend has no device.
  virtual bool inject_device_fault() { return false; }
  /// Checkpointing: this rank's parameters and optimizer state (AdamW m, v and step count) as
  /// bytes, and back. A backend that cannot returns false.
  virtual bool save_state(std::string* bytes) const {
    (void)bytes;
    return false;
  }
  virtual bool load_state(const std::string& bytes, std::string* err) {
    (void)bytes;
    *err = "this backend cannot load checkpoints";
    return false;
  }
  /// Null where the calls return with the work done (see OpTimer).
  virtual OpTimer* timer() { return nullptr; }
  /// This rank's parameter tensors with their global ids (model.h), for comparing runs.
  virtual std::vector<std::pair<int, std::vector<float>>> parameters() const = 0;
  /// This rank's gradients (fp32, as W accumulated them since zero_grad), ids as parameters():
  /// what the oracle tests compare tensor by tensor.
  virtual std::vector<std::pair<int, std::vector<float>>> gradients() const = 0;
};

}  // namespace zbpp
