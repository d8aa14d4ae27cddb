// The transport interface the interpreter uses to move activations and input gradients between
// ranks, and to reduce the few scalars the optimizer needs. Implementations: in-process threads
// (transport_local.h) and MPI (transport_mpi.h).
#pragma once

#include <cstring>
#include <string>
#include <vector>

namespace zbpp {

/// Message kinds: activations flow forward (F), input gradients backward (B); with optimizer
/// post-validation the partial gradient state flows forward and the full state back.
enum MessageKind { kActivation = 0, kGradient = 1, kPartialState = 2, kFullState = 3 };

struct Message {
  int mb = -1;       ///< microbatch
  int to_vs = -1;    ///< the virtual stage that consumes it (checked by the receiver)
  std::vector<float> data;
};

/// Optimizer state travels as doubles, bit for bit, in a message's floats (two per double).
inline std::vector<float> pack_doubles(const std::vector<double>& values) {
  std::vector<float> out(values.size() * 2);
  std::memcpy(out.data(), values.data(), values.size() * sizeof(double));
  return out;
}
inline std::vector<double> unpack_doubles(const std::vector<float>& data) {
  std::vector<double> out(data.size() / 2);
  std::memcpy(out.data(), data.data(), out.size() * sizeof(double));
  return out;
}

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Never blocks: the transport holds the message until it is delivered.
  virtual bool send(int peer, MessageKind kind, Message msg, std::string* err) = 0;
  /// The next message of `kind` from `peer` (messages of one kind between two ranks keep their
  /// order). False with *err when none arrives within timeout_s or the run failed elsewhere.
  virtual bool recv(int peer, MessageKind kind, Message* msg, double timeout_s, std::string* err) = 0;
  /// Element-wise sum over all ranks, added in rank order, so every rank gets the same bits.
  virtual bool allreduce_sum(std::vector<double>* values, double timeout_s, std::string* err) = 0;
  /// Tells the other ranks this one failed, so they stop waiting for it.
  virtual void abort(const std::string& why) = 0;
};

}  // namespace zbpp
