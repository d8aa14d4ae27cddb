// NCCL transport (see transport/nccl.h).
#include "runtime/transport/nccl.h"

#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "the NCCL transport needs ncclCommSplit: NCCL 2.18 or newer (CMake leaves this file out for older NCCL)"
#endif

#include "runtime/cuda/check.h"
#include "runtime/cuda/device_buffers.h"
#include "runtime/transport/mpi.h"
#include "runtime/transport/nccl_wire.h"

namespace zbpp {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string kind_name(MessageKind k) { return k == kActivation ? "activations" : "gradients"; }

std::string channel_name(const NcclChannel& c) {
  return kind_name(c.kind) + " rank " + std::to_string(c.from) + " -> " + std::to_string(c.to);
}

void nccl_check(ncclResult_t rc, const char* call, const std::string& what) {
  if (rc != ncclSuccess && rc != ncclInProgress)
    throw std::runtime_error(std::string(call) + " (" + what + "): " + ncclGetErrorString(rc));
}

class NcclTransport final : public Transport {
 public:
  NcclTransport(const std::vector<NcclChannel>& channels, double timeout_s, int* device)
      : mpi_(make_mpi_transport()), timeout_s_(timeout_s) {
    rank_ = mpi_->rank();
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    int local_rank = 0, gpus = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    ZBPP_CK(cudaGetDeviceCount(&gpus), "counting GPUs on rank " + std::to_string(rank_));
    if (gpus == 0) throw std::runtime_error("rank " + std::to_string(rank_) + " sees no GPU");
    *device = local_rank % gpus;
    ZBPP_CK(cudaSetDevice(*device), "rank " + std::to_string(rank_) + " selecting GPU " + std::to_string(*device));
    cuda::configure_default_pool(*device);

    ncclUniqueId id;
    if (rank_ == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId", "rank 0");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // every wait below is ours, with a deadline
    // Every channel's kernel may spin at once (see the header): together they take at most half
    // the SMs, so each can become resident beside the others and beside the compute kernels.
    // Each rank's own bound depends on its channel count (an end rank of the pipeline has fewer
    // than a middle one) and its GPU, so two ranks of one communicator would ask for different
    // maxCTAs: NCCL then sets up each side's channels from its own value, and nothing promises
    // that the two sides agree. So every rank proposes its bound and all take the least
    // (nccl_wire.h), which keeps every rank within its own half.
    int sms = 0, mine = 0;
    ZBPP_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, *device), where());
    for (const NcclChannel& c : channels) mine += c.from == rank_ || c.to == rank_;
    int proposal = nccl_wire::propose_max_ctas(sms, mine);
    std::vector<int> proposals(mpi_->size());
    MPI_Allgather(&proposal, 1, MPI_INT, proposals.data(), 1, MPI_INT, MPI_COMM_WORLD);
    config.maxCTAs = nccl_wire::agree_max_ctas(proposals);
    config.minCTAs = 1;
    auto deadline = after(timeout_s);
    nccl_check(ncclCommInitRankConfig(&world_, mpi_->size(), id, rank_, &config), "ncclCommInitRankConfig", where());
    wait_comm(world_, deadline, "creating the world communicator");
    for (const NcclChannel& c : channels) {
      bool member = c.from == rank_ || c.to == rank_;
      Channel ch{c, nullptr, nullptr};
      nccl_check(ncclCommSplit(world_, member ? 0 : NCCL_SPLIT_NOCOLOR, c.from == rank_ ? 0 : 1, &ch.comm, &config),
                 "ncclCommSplit", channel_name(c));
      wait_comm(world_, deadline, "splitting the communicator for " + channel_name(c));
      if (!member) continue;
      wait_comm(ch.comm, deadline, "splitting the communicator for " + channel_name(c));
      ZBPP_CK(cudaStreamCreateWithFlags(&ch.stream, cudaStreamNonBlocking), channel_name(c));
      channels_.push_back(ch);
    }
    // Connect every channel now, in the one global order, so no first transfer waits on a peer
    // that is busy connecting another channel.
    for (Channel& ch : channels_) {
      void* byte = cuda::device_alloc(1, ch.stream, "channel warm-up");
      enqueue(ch, byte, 1, deadline);
      wait_stream(ch, deadline, "connecting " + channel_name(ch.id), peer_of(ch));
      cuda::device_free(byte, ch.stream);
    }
  }

  // Never hangs a run at exit: waiting for the channels' streams and closing the communicators
  // share one --timeout deadline; past it (or on an error) every communicator is aborted, and
  // stderr says which channel and why, since a destructor cannot throw.
  ~NcclTransport() override {
    auto deadline = after(timeout_s_);
    bool clean = !aborted_;
    std::string why;
    for (Channel& ch : channels_) {
      if (!clean || !ch.stream) continue;
      why = drain(ch, deadline);
      clean = why.empty();
    }
    try {
      if (clean)
        for (ncclComm_t c : comms()) {
          ncclCommFinalize(c);
          wait_comm(c, deadline, "closing communicators");
        }
    } catch (const std::exception& e) {
      clean = false;
      why = e.what();
    }
    if (!why.empty()) {
      if (why.find("communicators aborted") == std::string::npos) why += "; NCCL communicators aborted";
      std::fprintf(stderr, "zbrun: rank %d: at exit, %s\n", rank_, why.c_str());
    }
    for (ncclComm_t c : comms()) clean ? ncclCommDestroy(c) : ncclCommAbort(c);
    for (Channel& ch : channels_)
      if (ch.stream) cudaStreamDestroy(ch.stream);
  }

  int rank() const override { return rank_; }
  int size() const override { return mpi_->size(); }

  bool send(int peer, MessageKind kind, Message msg, std::string* err) override {
    if (!cuda::carries_device_buffer(kind)) return mpi_->send(peer, kind, std::move(msg), err);  // optimizer state
    try {
      Channel& ch = channel({rank_, peer, kind});
      cuda::DeviceTensor t = cuda::registry().take(cuda::device_id(&msg.data, "sending " + channel_name(ch.id)));
      Message header{msg.mb, msg.to_vs, Payload::of_host(nccl_wire::encode_header(t.bytes))};
      if (!mpi_->send(peer, kind, std::move(header), err)) return false;
      if (t.ready) {
        ZBPP_CK(cudaStreamWaitEvent(ch.stream, t.ready, 0), channel_name(ch.id));
        ZBPP_CK(cudaEventDestroy(t.ready), channel_name(ch.id));
      }
      enqueue(ch, t.ptr, t.bytes, after(timeout_s_));
      cuda::device_free(t.ptr, ch.stream);  // stream-ordered: after the send has read it
      return true;
    } catch (const std::exception& e) {
      *err = e.what();
      return false;
    }
  }

  bool recv(int peer, MessageKind kind, Message* msg, double timeout_s, std::string* err) override {
    auto deadline = after(timeout_s);
    Message header;
    if (!mpi_->recv(peer, kind, &header, timeout_s, err)) return false;
    if (!cuda::carries_device_buffer(kind)) {
      *msg = std::move(header);
      return true;
    }
    try {
      Channel& ch = channel({peer, rank_, kind});
      const std::uint64_t bytes = nccl_wire::decode_header(header.data.host, channel_name(ch.id));
      void* buf = cuda::device_alloc(bytes, ch.stream, "receive buffer");
      enqueue(ch, buf, bytes, deadline);
      wait_stream(ch, deadline, "receiving " + channel_name(ch.id), peer);
      msg->mb = header.mb;
      msg->to_vs = header.to_vs;
      msg->data = Payload::of_device(cuda::registry().put({buf, bytes, nullptr}));
      return true;
    } catch (const std::exception& e) {
      *err = e.what();
      return false;
    }
  }

  bool allreduce_sum(std::vector<double>* values, double timeout_s, std::string* err) override {
    return mpi_->allreduce_sum(values, timeout_s, err);
  }

  void abort(const std::string& why) override {
    abort_comms();
    mpi_->abort(why);
  }

 private:
  struct Channel {
    NcclChannel id;
    ncclComm_t comm;
    cudaStream_t stream;
  };

  std::string where() const { return "rank " + std::to_string(rank_); }
  int peer_of(const Channel& ch) const { return ch.id.from == rank_ ? ch.id.to : ch.id.from; }

  std::vector<ncclComm_t> comms() const {
    std::vector<ncclComm_t> out;
    for (const Channel& ch : channels_)
      if (ch.comm) out.push_back(ch.comm);
    if (world_) out.push_back(world_);
    return out;
  }

  Channel& channel(const NcclChannel& id) {
    for (Channel& ch : channels_)
      if (ch.id == id) return ch;
    throw std::runtime_error("no NCCL channel for " + channel_name(id) + " (channels come from the schedule's sends)");
  }

  // The channel's sender posts ncclSend, its receiver ncclRecv (peer ranks 1 and 0 of the pair).
  void enqueue(Channel& ch, void* buf, size_t bytes, Clock::time_point deadline) {
    bool sender = ch.id.from == rank_;
    nccl_check(ncclGroupStart(), "ncclGroupStart", channel_name(ch.id));
    ncclResult_t rc = sender ? ncclSend(buf, bytes, ncclUint8, 1, ch.comm, ch.stream)
                             : ncclRecv(buf, bytes, ncclUint8, 0, ch.comm, ch.stream);
    nccl_check(rc, sender ? "ncclSend" : "ncclRecv", channel_name(ch.id));
    nccl_check(ncclGroupEnd(), "ncclGroupEnd", channel_name(ch.id));
    wait_comm(ch.comm, deadline, (sender ? "enqueueing a send of " : "enqueueing a receive of ") + channel_name(ch.id));
  }

  // Waits until the communicator has no operation in progress on the host side.
  void wait_comm(ncclComm_t comm, Clock::time_point deadline, const std::string& what) {
    while (true) {
      ncclResult_t state = ncclSuccess;
      nccl_check(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError", what);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) {
        abort_comms();
        throw std::runtime_error(what + ": NCCL reports " + ncclGetErrorString(state));
      }
      expire(deadline, what);
    }
  }

  // Waits until the channel's stream has run everything enqueued (the transfer arrived). Meanwhile
  // this rank answers who-waits-on-whom queries as waiting on `peer`, as a recv would: a healthy
  // rank blocked in an NCCL receive must not read as stuck to the rank that asks.
  void wait_stream(Channel& ch, Clock::time_point deadline, const std::string& what, int peer) {
    cudaEvent_t done = cuda::make_event(what.c_str());
    ZBPP_CK(cudaEventRecord(done, ch.stream), what);
    while (true) {
      cudaError_t rc = cudaEventQuery(done);
      if (rc == cudaSuccess) break;
      if (rc != cudaErrorNotReady) {
        cudaEventDestroy(done);
        ZBPP_CK(rc, what);
      }
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(ch.comm, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        cudaEventDestroy(done);
        abort_comms();
        throw std::runtime_error(what + ": NCCL reports " + ncclGetErrorString(state));
      }
      mpi_->answer_queries(peer);
      try {
        expire(deadline, what, peer);
      } catch (...) {
        cudaEventDestroy(done);
        throw;
      }
    }
    cudaEventDestroy(done);
  }

  // Waits until everything enqueued on the channel's stream has run, or until `deadline`: "" when
  // done, else why not (the destructor's wait; no wait-chain queries, the run is over).
  std::string drain(Channel& ch, Clock::time_point deadline) {
    while (true) {
      cudaError_t rc = cudaStreamQuery(ch.stream);
      if (rc == cudaSuccess) return "";
      if (rc != cudaErrorNotReady)
        return channel_name(ch.id) + ": cudaStreamQuery: " + cudaGetErrorString(rc);
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(ch.comm, &state);
      if (state != ncclSuccess && state != ncclInProgress)
        return channel_name(ch.id) + ": NCCL reports " + ncclGetErrorString(state);
      if (Clock::now() > deadline) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g s", timeout_s_);
        return channel_name(ch.id) + ": transfers still in flight after the timeout (" + buf + ")";
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // Past the deadline: aborts and throws, naming the rank that stopped the pipeline when `peer`
  // (the rank waited on; -1: none) lets MPI ask along the chain of waits.
  void expire(Clock::time_point deadline, const std::string& what, int peer = -1) {
    if (Clock::now() > deadline) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g s", timeout_s_);
      const std::string chain = peer >= 0 ? mpi_->who_stopped(peer, timeout_s_) : "";
      abort_comms();
      throw std::runtime_error(what + ": not done within the timeout (" + buf + ")" +
                               (chain.empty() ? "" : "; " + chain) + "; NCCL communicators aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

  // Stops every NCCL kernel of this rank so nothing on the GPU waits for a peer that is gone.
  void abort_comms() {
    if (aborted_) return;
    aborted_ = true;
    for (Channel& ch : channels_)
      if (ch.comm) ncclCommAbort(ch.comm), ch.comm = nullptr;
    if (world_) ncclCommAbort(world_), world_ = nullptr;
  }

  std::unique_ptr<Transport> mpi_;
  double timeout_s_;
  int rank_ = 0;
  ncclComm_t world_ = nullptr;
  std::vector<Channel> channels_;
  bool aborted_ = false;
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(const std::vector<NcclChannel>& channels, double timeout_s, int* device,
                                               std::string* err) {
  try {
    std::vector<NcclChannel> sorted(channels);
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    return std::make_unique<NcclTransport>(sorted, timeout_s, device);
  } catch (const std::exception& e) {
    *err = e.what();
    return nullptr;
  }
}

}  // namespace zbpp
