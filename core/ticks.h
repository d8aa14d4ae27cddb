// Exact time and memory units for the planner.
// User inputs arrive as decimals (milliseconds, memory in any unit); they become
// integers here and nowhere else, so the simulator never accumulates rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace zbpp {

/// Time in ticks: one tick is a millionth of the user's time unit (1 ns when times are in ms).
using Ticks = std::int64_t;
/// Memory in quanta: one quantum is a millionth of the user's memory unit.
using Mem = std::int64_t;

inline constexpr std::int64_t kQuantaPerUnit = 1'000'000;

/// Converts a user value to quanta, rounding to the nearest quantum. Returns nothing when the
/// value is not finite or too large to represent (|v| > 1e12 units).
inline std::optional<std::int64_t> to_quanta(double v) {
  if (!std::isfinite(v) || std::fabs(v) > 1e12) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(v * static_cast<double>(kQuantaPerUnit)));
}

/// The largest time or memory figure a file records exactly: up to 2^50 quanta (about 1.1e9 units)
/// the shortest decimal of from_quanta(q) reads back through to_quanta to q itself (the double's
/// error times 1e6 stays under half a quantum). Problems are bounded so that every figure a plan
/// records (one iteration of all its work, a period, a wall clock, a latency) stays below it.
inline constexpr std::int64_t kMaxExactQuanta = std::int64_t{1} << 50;

/// Back to user units, for printing and files only.
inline double from_quanta(std::int64_t q) { return static_cast<double>(q) / kQuantaPerUnit; }

/// Formats a quantity exactly: the shortest decimal that is the quanta value ("18.522", "2", "0.3664").
inline std::string format_quanta(std::int64_t q) {
  std::string sign = q < 0 ? "-" : "";
  std::uint64_t a = q < 0 ? static_cast<std::uint64_t>(-(q + 1)) + 1 : static_cast<std::uint64_t>(q);
  std::string out = sign + std::to_string(a / kQuantaPerUnit);
  std::uint64_t frac = a % kQuantaPerUnit;
  if (frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, 6 - digits.size(), '0');
    while (!digits.empty() && digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out;
}

/// A ratio or a measured time for printing, with `digits` decimals ("0.0728" at 4): figures that are
/// not quanta (bubble rates, seconds).
inline std::string format_fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace zbpp
