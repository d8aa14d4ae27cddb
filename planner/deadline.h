// When a planning call must end (zbplan plan --time-limit): the searches stop taking new work once
// it has passed and return the best they have, saying what they left out; the ILP gets what is left.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace zbpp {

struct Deadline {
  std::optional<std::chrono::steady_clock::time_point> at;  ///< none: no limit

  static Deadline in(double seconds) { return {std::chrono::steady_clock::now() + to_duration(seconds)}; }
  bool passed() const { return at && std::chrono::steady_clock::now() >= *at; }
  /// Seconds left (0 once passed); a large number without a limit.
  double left() const {
    if (!at) return 1e18;
    return std::max(0.0, std::chrono::duration<double>(*at - std::chrono::steady_clock::now()).count());
  }
  /// The earlier of this and `seconds` from now.
  Deadline within(double seconds) const {
    const auto other = std::chrono::steady_clock::now() + to_duration(seconds);
    return {at ? std::min(*at, other) : other};
  }

 private:
  static std::chrono::steady_clock::duration to_duration(double seconds) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  }
};

/// Progress lines of long work (zbplan plan without --quiet): at most one a second, each made only
/// when it is said; nothing without a sink. Not thread-safe: tick from one thread.
class ProgressTicker {
 public:
  explicit ProgressTicker(std::function<void(const std::string&)> sink)
      : sink_(std::move(sink)), start_(std::chrono::steady_clock::now()), last_(start_) {}
  template <typename Make>
  void tick(Make&& make) {
    if (!sink_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    sink_(make(std::chrono::duration<double>(now - start_).count()));
  }

 private:
  std::function<void(const std::string&)> sink_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace zbpp
