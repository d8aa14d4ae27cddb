// NCCL transport for multi-GPU runs: one process per GPU under mpirun. Payloads (device buffers,
// runtime/payload.h) move with ncclSend/ncclRecv; the small headers (microbatch, virtual
// stage, bytes), the all-reduce of the optimizer's scalars and abort go through MPI
// (transport/mpi.h), which the headers' checks and the exact all-reduce already rely on.
//
// Design (docs/gpu.md, "NCCL: communicators and ordering"). Each directed channel (from, to, kind)
// the schedule uses gets its own two-rank communicator and stream, split from the world
// communicator at start-up and connected there in one global order. On a channel only `from`
// sends and only `to` receives, in the same order on both sides (the transport's per-kind FIFO
// contract), so no operation on a channel waits behind one of the other direction, and send()
// never blocks, as the lowered schedule requires (planner/lower.h). One communicator per rank pair
// instead would put both directions on one stream, where a rank's send of activation k+1 and its
// neighbour's send of gradient k — every 1F1B steady state — wait on each other; completing each
// send before the next operation would block send() with the same result.
// NCCL asks that kernels of different communicators never need to progress at once; here they
// may, so every way one spinning NCCL kernel could hold back another is closed: modules load
// eagerly (CUDA_MODULE_LOADING=EAGER), streams get their own hardware queues
// (CUDA_DEVICE_MAX_CONNECTIONS=32), a rank's channels together use at most half the SMs (maxCTAs),
// the memory pool never makes an allocation wait on another stream (device_buffers.h), and nothing
// in the run loop synchronises the whole device (no cudaMalloc/cudaFree/legacy-stream copies).
//
// Timeouts: communicators are non-blocking; every wait polls ncclCommGetAsyncError and
// cudaEventQuery against a deadline, and on expiry aborts every communicator (ncclCommAbort)
// and reports which transfer timed out, so a run never hangs silently. The destructor too waits
// at most --timeout for the channels and communicators to close, then aborts them and says so.
// Headers carry 64-bit byte counts, and every rank configures the same maxCTAs (nccl_wire.h).
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
