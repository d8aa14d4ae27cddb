// MPI transport (see transport/mpi.h). Sends are MPI_Isend of a small header plus the floats,
// kept until complete; receives probe with a deadline so a missing peer becomes an error, not a
// hang. Tags are the message kind: MPI keeps messages of one tag between two ranks in order.
//
// A rank whose wait times out names the rank that stopped the pipeline, not just its silent
// neighbour: it asks that neighbour whom it waits on (a query tag), then that rank, and so on,
// until a rank does not answer within a grace period (it is stuck) or the chain closes (a
// deadlock). Every waiting loop answers queries, so only a rank that is stuck fails to.
//
// A rank that fails tells every other rank why (a failure tag) before it ends the job: each one
// waiting then stops with "stopped: rank R failed: WHY", prints it, acknowledges and waits; the
// failing rank ends the job (MPI_Abort) once all have, or after a grace period (a rank busy in an op).
#include "runtime/transport/mpi.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <list>
#include <thread>

namespace zbpp {

namespace {

using Clock = std::chrono::steady_clock;

// Tags of the who-waits-on-whom exchange and of a failure notice, apart from the message kinds (0..3).
constexpr int kQueryTag = 16, kAnswerTag = 17, kFailTag = 18, kFailAckTag = 19;
// What a rank answers when it is not waiting for one peer.
constexpr int kNotWaiting = -1, kInAllReduce = -2;

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

class MpiTransport final : public Transport {
 public:
  MpiTransport() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  ~MpiTransport() override {
    // Let queued sends finish; the peers are expected to receive them.
    for (auto& p : pending_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  bool send(int peer, MessageKind kind, Message msg, std::string* err) override {
    progress();
    if (msg.data.on_device()) {  // its bytes are on a GPU: the NCCL transport (transport/nccl.h) moves them
      *err = "the MPI transport carries host floats, not a device buffer (the CUDA backend runs over NCCL)";
      return false;
    }
    const std::vector<float>& floats = msg.data.host;
    Pending p;
    int header[3] = {msg.mb, msg.to_vs, static_cast<int>(floats.size())};
    p.bytes.resize(sizeof header + floats.size() * sizeof(float));
    std::memcpy(p.bytes.data(), header, sizeof header);
    std::memcpy(p.bytes.data() + sizeof header, floats.data(), floats.size() * sizeof(float));
    pending_.push_back(std::move(p));
    Pending& q = pending_.back();
    int rc = MPI_Isend(q.bytes.data(), static_cast<int>(q.bytes.size()), MPI_BYTE, peer, kind, MPI_COMM_WORLD, &q.request);
    if (rc != MPI_SUCCESS) {
      *err = "MPI_Isend to rank " + std::to_string(peer) + " failed";
      return false;
    }
    return true;
  }

  bool recv(int peer, MessageKind kind, Message* msg, double timeout_s, std::string* err) override {
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    MPI_Status status;
    int flag = 0;
    waiting_on_ = peer;
    while (true) {
      MPI_Iprobe(peer, kind, MPI_COMM_WORLD, &flag, &status);
      if (flag) break;
      progress();
      if (stopped(err)) return false;
      if (Clock::now() > deadline) {
        *err = "nothing after " + seconds_text(timeout_s) + "; " + blame(peer, timeout_s);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    waiting_on_ = kNotWaiting;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    std::vector<char> bytes(static_cast<size_t>(count));
    MPI_Recv(bytes.data(), count, MPI_BYTE, peer, kind, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int header[3];
    const std::string from = " from rank " + std::to_string(peer);
    if (count < static_cast<int>(sizeof header)) {
      *err = "a message of " + std::to_string(count) + " bytes" + from + ", shorter than its header";
      return false;
    }
    std::memcpy(header, bytes.data(), sizeof header);
    // The header's length must match what arrived: a truncated message is an error, not a read
    // past the buffer.
    const long long expected = static_cast<long long>(sizeof header) + 4LL * header[2];
    if (header[2] < 0 || expected != count) {
      *err = "a truncated message" + from + ": " + std::to_string(count) + " bytes, its header says " +
             std::to_string(expected);
      return false;
    }
    msg->mb = header[0];
    msg->to_vs = header[1];
    msg->data = Payload::of_host(std::vector<float>(static_cast<size_t>(header[2])));
    std::memcpy(msg->data.host.data(), bytes.data() + sizeof header, msg->data.host.size() * sizeof(float));
    return true;
  }

  bool allreduce_sum(std::vector<double>* values, double timeout_s, std::string* err) override {
    std::vector<double> out(values->size());
    MPI_Request request;
    MPI_Iallreduce(values->data(), out.data(), static_cast<int>(values->size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                   &request);
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    int done = 0;
    waiting_on_ = kInAllReduce;
    while (true) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) break;
      progress();
      if (stopped(err)) return false;
      if (Clock::now() > deadline) {
        *err = "all-reduce: not every rank arrived after " + seconds_text(timeout_s);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    waiting_on_ = kNotWaiting;
    *values = std::move(out);
    return true;
  }

  void abort(const std::string& why) override {
    if (failed_rank_ >= 0) {
      // Another rank failed first and ends the job: tell it this rank has said so, and wait here
      // for its MPI_Abort (mpirun can hang when some processes finalize while another aborts).
      send_int(failed_rank_, kFailAckTag, rank_);
      flush_sends(std::chrono::seconds(1));
      std::this_thread::sleep_for(std::chrono::seconds(10));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int r = 0; r < size_; ++r)
      if (r != rank_) send_bytes(r, kFailTag, why);
    int acks = 0;
    const auto until = Clock::now() + std::chrono::seconds(2);
    while (acks < size_ - 1 && Clock::now() < until) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kFailAckTag, MPI_COMM_WORLD, &flag, &status);
      if (flag) {
        int unused = 0;
        MPI_Recv(&unused, sizeof unused, MPI_BYTE, status.MPI_SOURCE, kFailAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ++acks;
        continue;
      }
      progress();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    // mpirun forwards the ranks' stderr; an abort right away can cut off the lines just printed.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  bool aborted() const override { return failed_rank_ >= 0; }

  void answer_queries(int peer) override {
    const int before = waiting_on_;
    waiting_on_ = peer;
    progress();
    waiting_on_ = before;
  }

  std::string who_stopped(int peer, double timeout_s) override { return blame(peer, timeout_s); }

 private:
  struct Pending {
    std::vector<char> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  // Drops sends that have completed, and answers queries of ranks that timed out.
  void progress() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
    int flag = 0;
    MPI_Status status;
    while (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, MPI_COMM_WORLD, &flag, &status) == MPI_SUCCESS && flag) {
      int unused = 0;  // queries carry one int, as bytes (send_int)
      MPI_Recv(&unused, sizeof unused, MPI_BYTE, status.MPI_SOURCE, kQueryTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      send_int(status.MPI_SOURCE, kAnswerTag, waiting_on_);
    }
    if (failed_rank_ < 0 && MPI_Iprobe(MPI_ANY_SOURCE, kFailTag, MPI_COMM_WORLD, &flag, &status) == MPI_SUCCESS && flag) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      std::vector<char> bytes(static_cast<size_t>(std::max(count, 0)));
      MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, kFailTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      failure_.assign(bytes.begin(), bytes.end());
      failed_rank_ = status.MPI_SOURCE;
    }
  }

  // Whether another rank's failure notice has come (then *err says whose and why).
  bool stopped(std::string* err) {
    if (failed_rank_ < 0) return false;
    waiting_on_ = kNotWaiting;
    *err = "stopped: " + failure_;
    return true;
  }

  void send_bytes(int peer, int tag, const std::string& text) {
    pending_.emplace_back();
    Pending& q = pending_.back();
    q.bytes.assign(text.begin(), text.end());
    MPI_Isend(q.bytes.data(), static_cast<int>(q.bytes.size()), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &q.request);
  }

  // Lets queued sends complete, for at most `limit` (a peer may be gone).
  void flush_sends(std::chrono::duration<double> limit) {
    const auto until = Clock::now() + limit;
    while (!pending_.empty() && Clock::now() < until) {
      progress();
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  void send_int(int peer, int tag, int value) {
    pending_.emplace_back();
    Pending& q = pending_.back();
    q.bytes.resize(sizeof value);
    std::memcpy(q.bytes.data(), &value, sizeof value);
    MPI_Isend(q.bytes.data(), static_cast<int>(q.bytes.size()), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &q.request);
  }

  // After a wait on `peer` timed out: asks along the chain of waits who stopped (see the top).
  // Each rank gets a grace period to answer; a rank busy in an op longer than that reads as stuck.
  std::string blame(int peer, double timeout_s) {
    const auto grace = std::chrono::duration<double>(std::clamp(timeout_s / 4, 0.2, 2.0));
    std::vector<int> chain{peer};
    while (true) {
      const int asked = chain.back();
      if (asked == rank_) {  // the chain came back here: this rank waits on the first
        return blame_text(chain, WaitEnd::kCycle);
      }
      send_int(asked, kQueryTag, 0);
      auto until = Clock::now() + grace;
      int flag = 0, next = kNotWaiting;
      MPI_Status status;
      while (true) {
        MPI_Iprobe(asked, kAnswerTag, MPI_COMM_WORLD, &flag, &status);
        if (flag) break;
        progress();
        if (Clock::now() > until) return blame_text(chain, WaitEnd::kNoAnswer);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      std::vector<char> bytes(sizeof next);
      MPI_Recv(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, asked, kAnswerTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      std::memcpy(&next, bytes.data(), sizeof next);
      if (next == kNotWaiting) return blame_text(chain, WaitEnd::kNotWaiting);
      if (next == kInAllReduce) return blame_text(chain, WaitEnd::kAllReduce);
      bool seen = std::find(chain.begin(), chain.end(), next) != chain.end();
      chain.push_back(next);
      if (seen) return blame_text(chain, WaitEnd::kCycle);
    }
  }

  int rank_ = 0, size_ = 1;
  std::list<Pending> pending_;
  int waiting_on_ = kNotWaiting;  ///< what this rank answers a query: the peer it waits for
  int failed_rank_ = -1;          ///< the rank whose failure notice came first, or -1
  std::string failure_;           ///< its why
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport() { return std::make_unique<MpiTransport>(); }

}  // namespace zbpp
