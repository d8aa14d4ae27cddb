// NCCL transport for multi-GPU runs: one process per GPU under mpirun. Payloads (device buffer
// handles, device_buffers.h) move with ncclSend/ncclRecv; the small headers (microbatch, virtual
// stage, bytes), the all-reduce of the optimizer's scalars and abort go through MPI
// (transport_mpi.h), which the headers' checks and the exact all-reduce already rely on.
//
// Deadlock freedom: each directed channel (from, to, kind) the schedule uses gets its own
// two-rank communicator and stream, split from the world communicator at start-up. On a channel
// only `from` sends and only `to` receives, in the same order on both sides (the transport's
// per-kind FIFO contract), so no send can wait behind a receive of the other direction — the
// deadlock that grouping send and receive pairs avoids on a shared communicator. Each call is
// still issued inside ncclGroupStart/End, as NCCL's non-blocking mode asks.
//
// Timeouts: communicators are non-blocking; every wait polls ncclCommGetAsyncError and
// cudaEventQuery against a deadline, and on expiry aborts every communicator (ncclCommAbort)
// and reports which transfer timed out, so a run never hangs silently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/transport.h"

namespace zbpp {

struct NcclChannel {
  int from = 0, to = 0;
  MessageKind kind = kActivation;
  bool operator<(const NcclChannel& o) const {
    return from != o.from ? from < o.from : to != o.to ? to < o.to : kind < o.kind;
  }
  bool operator==(const NcclChannel& o) const { return from == o.from && to == o.to && kind == o.kind; }
};

/// Collective over MPI_COMM_WORLD (MPI must be initialised): picks this rank's GPU (local rank
/// modulo the GPUs of the node) into *device, and opens every channel in `channels` (the same list,
/// in the same order, on every rank). Null with *err on failure or when setup exceeds timeout_s.
std::unique_ptr<Transport> make_nccl_transport(const std::vector<NcclChannel>& channels, double timeout_s,
                                               int* device, std::string* err);

}  // namespace zbpp
