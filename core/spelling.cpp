// "Did you mean" (see spelling.h).
#include "core/spelling.h"

#include <algorithm>
#include <cctype>

namespace zbpp {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

size_t typo_distance(const std::string& a, const std::string& b) {
  // Levenshtein with adjacent transpositions (optimal string alignment), over three rows.
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
    }
    before.swap(prev);
    prev.swap(row);
  }
  return prev[b.size()];
}

std::string closest_name(const std::string& given, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = 0;
  const std::string g = lower(given);
  for (const auto& name : known) {
    const size_t d = typo_distance(g, lower(name));
    const size_t near = name.size() <= 4 ? 1 : name.size() <= 8 ? 2 : 3;
    if (d <= near && (best.empty() || d < best_distance)) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace zbpp
