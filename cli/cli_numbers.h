// The one number parser behind every command-line flag of zbplan and zbrun (issue 19, class 10):
// decimal only, the whole token, finite, in range. A leading zero ("010") is refused, not read:
// CLI11 read it as octal (8), and decimal would silently differ from that; the message says to
// write 10. Used as CLI11 validators, so a malformed value is a command-line error (exit 2).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace zbpp {

constexpr double kAnyReal = std::numeric_limits<double>::max();

/// "" if `text` is a decimal integer in lo..hi (then *value holds it), else why.
std::string parse_integer(const std::string& text, long long lo, long long hi, long long* value);
/// "" if `text` is a finite decimal number in lo..hi (above lo, not at it, when `above_lo`), else why.
std::string parse_real(const std::string& text, double lo, double hi, bool above_lo, double* value);
/// "a,b,c": one or more parse_real values, comma-separated, none empty; "" or why.
std::string parse_real_list(const std::string& text, double lo, double hi, std::vector<double>* values);
/// "a,b,c" of parse_integer values; "" or why.
std::string parse_integer_list(const std::string& text, long long lo, long long hi, std::vector<long long>* values);

/// CLI11 validators over the parsers above: CLI11 converts the value only once it passed.
CLI::Validator integer_in(long long lo, long long hi);
CLI::Validator real_in(double lo, double hi, bool above_lo = false);
CLI::Validator real_list_in(double lo, double hi);
CLI::Validator integer_list_in(long long lo, long long hi);

}  // namespace zbpp
