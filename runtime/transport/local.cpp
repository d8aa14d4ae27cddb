// In-process transport (see transport/local.h): queues per (from, to, kind) under one mutex; the
// all-reduce collects every rank's values and sums them in rank order.
#include "runtime/transport/local.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>

namespace zbpp {

class LocalHub {
 public:
  explicit LocalHub(int ranks) : ranks_(ranks), contributions_(ranks), waiting_on_(ranks, kNone) {}

  int ranks() const { return ranks_; }

  void send(int from, int to, MessageKind kind, Message msg) {
    std::lock_guard<std::mutex> lock(mu_);
    queues_[{from, to, kind}].push_back(std::move(msg));
    cv_.notify_all();
  }

  bool recv(int from, int to, MessageKind kind, Message* msg, double timeout_s, std::string* err) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& q = queues_[{from, to, kind}];
    waiting_on_[to] = from;
    bool ready = cv_.wait_for(lock, seconds(timeout_s), [&] { return !q.empty() || !failure_.empty(); });
    if (!q.empty()) {
      waiting_on_[to] = kNone;
      *msg = std::move(q.front());
      q.pop_front();
      return true;
    }
    if (!ready && timed_out_ != kNone) {
      // Another rank timed out a moment ago and is about to stop the run: relay its finding (one
      // rank reports the timeout, the others name it) rather than report the same hang again.
      ready = cv_.wait_for(lock, seconds(std::min(timeout_s, 1.0)), [&] { return !failure_.empty(); });
    }
    if (!ready) timed_out_ = to;
    *err = ready ? "stopped: " + failure_ : "nothing after " + format_seconds(timeout_s) + "; " + blame(from);
    waiting_on_[to] = kNone;
    return false;
  }

  bool allreduce_sum(int rank, std::vector<double>* values, double timeout_s, std::string* err) {
    std::unique_lock<std::mutex> lock(mu_);
    long generation = generation_;
    contributions_[rank] = *values;
    waiting_on_[rank] = kAllReduce;
    if (++arrived_ == ranks_) {
      result_.assign(values->size(), 0.0);
      for (const auto& c : contributions_)
        for (size_t i = 0; i < c.size() && i < result_.size(); ++i) result_[i] += c[i];
      arrived_ = 0;
      ++generation_;
      waiting_on_[rank] = kNone;
      cv_.notify_all();
    } else {
      bool done = cv_.wait_for(lock, seconds(timeout_s), [&] { return generation_ != generation || !failure_.empty(); });
      waiting_on_[rank] = kNone;
      if (generation_ == generation) {
        *err = done ? "stopped: " + failure_ : "all-reduce: not every rank arrived after " + format_seconds(timeout_s);
        return false;
      }
    }
    *values = result_;
    return true;
  }

  void abort(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = why;
    cv_.notify_all();
  }

  bool aborted() {
    std::lock_guard<std::mutex> lock(mu_);
    return !failure_.empty();
  }

 private:
  static constexpr int kNone = -1, kAllReduce = -2;

  // Follows who waits on whom from `peer` (under the lock), to name the rank that stopped.
  std::string blame(int peer) const {
    std::vector<int> chain{peer};
    while (true) {
      int next = waiting_on_[chain.back()];
      if (next == kNone) return blame_text(chain, WaitEnd::kNotWaiting);
      if (next == kAllReduce) return blame_text(chain, WaitEnd::kAllReduce);
      bool seen = std::find(chain.begin(), chain.end(), next) != chain.end();
      chain.push_back(next);
      if (seen) return blame_text(chain, WaitEnd::kCycle);
    }
  }

  static std::chrono::duration<double> seconds(double s) { return std::chrono::duration<double>(s); }
  static std::string format_seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", s);
    return buf;
  }

  int ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<Message>> queues_;
  std::vector<std::vector<double>> contributions_;
  std::vector<double> result_;
  int arrived_ = 0;
  long generation_ = 0;
  std::string failure_;
  int timed_out_ = kNone;        ///< the first rank whose wait timed out (its stop follows)
  std::vector<int> waiting_on_;  ///< per rank: the peer whose message it waits for, kNone or kAllReduce
};

namespace {

class LocalTransport final : public Transport {
 public:
  LocalTransport(std::shared_ptr<LocalHub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_->ranks(); }
  bool send(int peer, MessageKind kind, Message msg, std::string*) override {
    hub_->send(rank_, peer, kind, std::move(msg));
    return true;
  }
  bool recv(int peer, MessageKind kind, Message* msg, double timeout_s, std::string* err) override {
    return hub_->recv(peer, rank_, kind, msg, timeout_s, err);
  }
  bool allreduce_sum(std::vector<double>* values, double timeout_s, std::string* err) override {
    return hub_->allreduce_sum(rank_, values, timeout_s, err);
  }
  void abort(const std::string& why) override { hub_->abort(why); }
  bool aborted() const override { return hub_->aborted(); }

 private:
  std::shared_ptr<LocalHub> hub_;
  int rank_;
};

}  // namespace

std::shared_ptr<LocalHub> make_local_hub(int ranks) { return std::make_shared<LocalHub>(ranks); }

std::unique_ptr<Transport> make_local_transport(std::shared_ptr<LocalHub> hub, int rank) {
  return std::make_unique<LocalTransport>(std::move(hub), rank);
}

}  // namespace zbpp
