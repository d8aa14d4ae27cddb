// Command-line numbers (see cli_numbers.h).
#include "cli/cli_numbers.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace zbpp {

namespace {

std::string g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

// Digits, a '.' with digits after it (reals), an exponent (reals): the decimal shapes strtod and
// strtoll agree on. No sign but a leading '-', no hex, no inf or nan, no spaces, no leading zero.
std::string decimal_shape(const std::string& text, bool real) {
  if (text.empty()) return "empty; expected a number";
  size_t i = text[0] == '-' ? 1 : 0;
  auto digits = [&] {
    size_t from = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - from;
  };
  const size_t first = i, whole = digits();
  const std::string expected = real ? "expected a decimal number like 2 or 0.5" : "expected a decimal integer";
  // "--tcomm -o x.json": CLI11 hands the next word to a flag that needs a value, even another flag.
  const std::string rest = text.size() > 1 ? text.substr(1) : "";
  if (whole == 0 && first == 1 && (rest[0] == '-' || std::isalpha(static_cast<unsigned char>(rest[0]))) &&
      rest != "inf" && rest != "nan")
    return quoted(text) + " looks like a flag, not a number (the flag's value must follow it)";
  if (whole == 0) return quoted(text) + " is not a number; " + expected;
  if (whole > 1 && text[first] == '0') {
    size_t nonzero = first;
    while (nonzero + 1 < first + whole && text[nonzero] == '0') ++nonzero;
    return quoted(text) + " has a leading zero (octal or decimal?); write " + text.substr(0, first) +
           text.substr(nonzero);
  }
  if (real && i < text.size() && text[i] == '.') {
    ++i;
    if (digits() == 0) return quoted(text) + ": digits must follow the '.'; " + expected;
  }
  if (real && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return quoted(text) + ": digits must follow the exponent; " + expected;
  }
  if (i != text.size()) return quoted(text) + " has '" + text.substr(i) + "' after the number; " + expected;
  return "";
}

std::string range_text(double lo, double hi, bool above_lo) {
  if (lo <= -kAnyReal && hi >= kAnyReal) return "a finite number";
  if (hi >= kAnyReal) return above_lo ? "above " + g(lo) : "at least " + g(lo);
  return above_lo ? "above " + g(lo) + " and at most " + g(hi) : g(lo) + ".." + g(hi);
}

template <typename T, typename Parse>
std::string parse_list(const std::string& text, std::vector<T>* values, Parse parse) {
  values->clear();
  if (text.empty()) return "empty; expected a number or a comma-separated list like 1,2,3";
  size_t from = 0;
  while (true) {
    size_t comma = text.find(',', from);
    std::string item = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    if (item.empty())
      return quoted(text) + ": an empty item " +
             (comma == std::string::npos ? "at the end" : "at position " + std::to_string(values->size() + 1)) +
             "; expected numbers separated by single commas";
    T v{};
    if (std::string bad = parse(item, &v); !bad.empty())
      return text == item ? bad : quoted(text) + ", item " + std::to_string(values->size() + 1) + ": " + bad;
    values->push_back(v);
    if (comma == std::string::npos) return "";
    from = comma + 1;
  }
}

template <typename Parse>
CLI::Validator validator(Parse parse, const std::string& name) {
  return CLI::Validator([parse](std::string& text) { return parse(text); }, name);
}

}  // namespace

std::string parse_integer(const std::string& text, long long lo, long long hi, long long* value) {
  if (std::string bad = decimal_shape(text, false); !bad.empty()) return bad;
  errno = 0;
  long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi)
    return quoted(text) + " is out of range; expected an integer " + std::to_string(lo) + ".." + std::to_string(hi);
  *value = v;
  return "";
}

std::string parse_real(const std::string& text, double lo, double hi, bool above_lo, double* value) {
  if (std::string bad = decimal_shape(text, true); !bad.empty()) return bad;
  double v = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(v) || v < lo || v > hi || (above_lo && v == lo))
    return quoted(text) + " is out of range; expected " + range_text(lo, hi, above_lo);
  *value = v;
  return "";
}

std::string parse_real_list(const std::string& text, double lo, double hi, std::vector<double>* values) {
  return parse_list(text, values,
                    [&](const std::string& item, double* v) { return parse_real(item, lo, hi, false, v); });
}

std::string parse_integer_list(const std::string& text, long long lo, long long hi, std::vector<long long>* values) {
  return parse_list(text, values, [&](const std::string& item, long long* v) { return parse_integer(item, lo, hi, v); });
}

CLI::Validator integer_in(long long lo, long long hi) {
  return validator([lo, hi](const std::string& text) {
    long long v;
    return parse_integer(text, lo, hi, &v);
  }, "INT");
}

CLI::Validator real_in(double lo, double hi, bool above_lo) {
  return validator([lo, hi, above_lo](const std::string& text) {
    double v;
    return parse_real(text, lo, hi, above_lo, &v);
  }, "NUMBER");
}

CLI::Validator real_list_in(double lo, double hi) {
  return validator([lo, hi](const std::string& text) {
    std::vector<double> v;
    return parse_real_list(text, lo, hi, &v);
  }, "LIST");
}

CLI::Validator integer_list_in(long long lo, long long hi) {
  return validator([lo, hi](const std::string& text) {
    std::vector<long long> v;
    return parse_integer_list(text, lo, hi, &v);
  }, "LIST");
}

}  // namespace zbpp
