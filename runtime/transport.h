// The transport interface the interpreter uses to move activations and input gradients between
// ranks, and to reduce the few scalars the optimizer needs. Implementations: in-process threads
// (transport/local.h) and MPI (transport/mpi.h), which carry host payloads; on the GPU the device
// (transport/device.h) and NCCL (transport/nccl.h) transports, which move device buffers.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/ir.h"  // MessageKind
#include "runtime/payload.h"

namespace zbpp {

struct Message {
  int mb = -1;       ///< microbatch
  int to_vs = -1;    ///< the virtual stage that consumes it (checked by the receiver)
  Payload data;
};

/// Optimizer state travels as doubles, bit for bit, in a host payload's floats (two per double).
inline Payload pack_doubles(const std::vector<double>& values) {
  std::vector<float> out(values.size() * 2);
  std::memcpy(out.data(), values.data(), values.size() * sizeof(double));
  return Payload::of_host(std::move(out));
}
inline std::vector<double> unpack_doubles(const Payload& data) {
  std::vector<double> out(data.host.size() / 2);
  std::memcpy(out.data(), data.host.data(), out.size() * sizeof(double));
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
  /// Tells the other ranks this one failed and why ("rank R failed: WHY"), so they stop waiting for
  /// it and each names it: their waits return false with "stopped: WHY".
  virtual void abort(const std::string& why) = 0;
  /// Whether another rank has failed. In-process, a rank stuck outside the transport polls this to
  /// stop; under MPI the failing rank ends every process soon after its notice.
  virtual bool aborted() const { return false; }
  /// For a transport layered on this one that waits outside recv (the NCCL transport waiting for a
  /// transfer whose header has arrived): answers other ranks' who-waits-on-whom queries as a recv
  /// from `peer` would, so this rank is not blamed as stuck. Call it in every polling loop.
  virtual void answer_queries(int /*peer*/) {}
  /// After a wait on `peer` timed out outside recv: who stopped the pipeline, as recv's own
  /// timeout message says it ("rank 1 waits on rank 0, ..."); empty where the transport cannot ask.
  virtual std::string who_stopped(int /*peer*/, double /*timeout_s*/) { return ""; }
};

/// What a rank that timed out learns by following who waits on whom: `chain` starts at the silent
/// peer, each next entry is the rank the previous one waits on.
enum class WaitEnd {
  kNotWaiting,  ///< the chain's last rank waits for no message (stuck in an op, or gone)
  kNoAnswer,    ///< the chain's last rank did not answer a query (hung, busy for too long, or unreachable)
  kCycle,       ///< the chain's last rank is one already in it: the ranks wait on each other
  kAllReduce,   ///< the chain's last rank waits in the all-reduce, for every rank
};

/// "rank 1 waits on rank 0, which waits for no message: rank 0 is stuck", so the message of every
/// rank that times out names the rank that stopped the pipeline, not merely its own neighbour.
inline std::string blame_text(const std::vector<int>& chain, WaitEnd end) {
  if (chain.empty()) return "";
  auto rank = [](int r) { return "rank " + std::to_string(r); };
  std::string text;
  for (size_t i = 0; i + 1 < chain.size(); ++i) text += (i ? ", " : "") + rank(chain[i]) + " waits on " + rank(chain[i + 1]);
  const std::string last = rank(chain.back());
  const std::string which = chain.size() > 1 ? ", which" : last;
  switch (end) {
    case WaitEnd::kNotWaiting:
      return text + which + " waits for no message: " + last + " is stuck";
    case WaitEnd::kNoAnswer:
      // Across hosts a rank behind a lost link answers no more than a hung one: both are said.
      return text + which + " does not answer: " + last +
             " is stuck or out of reach (hung, or its host or the link to it is down)";
    case WaitEnd::kAllReduce:
      return text + which + " waits in the all-reduce";
    case WaitEnd::kCycle: {
      // The loop: from after the earlier visit of the last rank, or the whole chain when the last
      // rank is the one asking (it waits on the chain's first).
      auto earlier = std::find(chain.begin(), chain.end() - 1, chain.back());
      std::vector<int> loop(earlier == chain.end() - 1 ? chain.begin() : earlier + 1, chain.end());
      std::sort(loop.begin(), loop.end());
      std::string names;
      for (size_t i = 0; i < loop.size(); ++i) names += (i ? ", " : "") + std::to_string(loop[i]);
      return text + ": ranks " + names + " wait on each other (deadlock)";
    }
  }
  return text;
}

}  // namespace zbpp
