// MPI transport (see transport_mpi.h). Sends are MPI_Isend of a small header plus the floats,
// kept until complete; receives probe with a deadline so a missing peer becomes an error, not a
// hang. Tags are the message kind: MPI keeps messages of one tag between two ranks in order.
#include "runtime/transport_mpi.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <list>
#include <thread>

namespace zbpp {

namespace {

using Clock = std::chrono::steady_clock;

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
    Pending p;
    int header[3] = {msg.mb, msg.to_vs, static_cast<int>(msg.data.size())};
    p.bytes.resize(sizeof header + msg.data.size() * sizeof(float));
    std::memcpy(p.bytes.data(), header, sizeof header);
    std::memcpy(p.bytes.data() + sizeof header, msg.data.data(), msg.data.size() * sizeof(float));
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
    while (true) {
      MPI_Iprobe(peer, kind, MPI_COMM_WORLD, &flag, &status);
      if (flag) break;
      progress();
      if (Clock::now() > deadline) {
        *err = "nothing after " + seconds_text(timeout_s);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    std::vector<char> bytes(static_cast<size_t>(count));
    MPI_Recv(bytes.data(), count, MPI_BYTE, peer, kind, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int header[3];
    if (count < static_cast<int>(sizeof header)) {
      *err = "malformed message from rank " + std::to_string(peer);
      return false;
    }
    std::memcpy(header, bytes.data(), sizeof header);
    msg->mb = header[0];
    msg->to_vs = header[1];
    msg->data.resize(static_cast<size_t>(header[2]));
    std::memcpy(msg->data.data(), bytes.data() + sizeof header, msg->data.size() * sizeof(float));
    return true;
  }

  bool allreduce_sum(std::vector<double>* values, double timeout_s, std::string* err) override {
    std::vector<double> out(values->size());
    MPI_Request request;
    MPI_Iallreduce(values->data(), out.data(), static_cast<int>(values->size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                   &request);
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    int done = 0;
    while (true) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) break;
      progress();
      if (Clock::now() > deadline) {
        *err = "all-reduce: not every rank arrived after " + seconds_text(timeout_s);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    *values = std::move(out);
    return true;
  }

  void abort(const std::string&) override { MPI_Abort(MPI_COMM_WORLD, 1); }

 private:
  struct Pending {
    std::vector<char> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  // Drops sends that have completed.
  void progress() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
  }

  int rank_ = 0, size_ = 1;
  std::list<Pending> pending_;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport() { return std::make_unique<MpiTransport>(); }

}  // namespace zbpp
