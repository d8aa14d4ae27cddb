// Formatting of diagnostics (see diag.h).
#include "core/diag.h"

namespace zbpp {

void add_diag(std::vector<Diag>* diags, Diag d) {
  if (d.more == 0 && diags->size() < kMaxDiags) {
    diags->push_back(std::move(d));
    return;
  }
  if (diags->empty() || diags->back().more == 0) diags->push_back({d.file, "", -1, -1, "", "", 0});
  diags->back().more += d.more == 0 ? 1 : d.more;
}

size_t diag_count(const std::vector<Diag>& diags) {
  size_t n = 0;
  for (const Diag& d : diags) n += d.more == 0 ? 1 : d.more;
  return n;
}

std::string format_diag(const Diag& d) {
  if (d.more > 0) return "... and " + std::to_string(d.more) + " more";
  std::string where;
  auto add = [&where](const std::string& part) {
    if (!where.empty()) where += ", ";
    where += part;
  };
  if (!d.json_pointer.empty()) add(d.json_pointer);
  if (d.stage >= 0) add("stage " + std::to_string(d.stage));
  if (d.op_index >= 0) add("op " + std::to_string(d.op_index) + (d.op.empty() ? "" : " (" + d.op + ")"));
  std::string out = d.file;
  if (!where.empty()) out += (out.empty() ? "" : ": ") + where;
  return out + (out.empty() ? "" : ": ") + (d.warning ? "warning: " : "") + d.message;
}

std::string format_diags(const std::vector<Diag>& diags) {
  std::string out;
  for (const Diag& d : diags) out += format_diag(d) + "\n";
  return out;
}

namespace {

// Bytes of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 when none starts there.
size_t utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (n == 2 && c < 0xC2) return 0;                                   // overlong
  if (n == 3 && c == 0xE0 && b(i + 1) < 0xA0) return 0;               // overlong
  if (n == 3 && c == 0xED && b(i + 1) >= 0xA0) return 0;              // surrogates
  if (n == 4 && (c > 0xF4 || (c == 0xF0 && b(i + 1) < 0x90) || (c == 0xF4 && b(i + 1) >= 0x90))) return 0;
  return n;
}

}  // namespace

std::string shown_text(const std::string& text, size_t max) {
  std::string out;
  size_t i = 0;
  for (; i < text.size() && out.size() < max;) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t n = utf8_length(text, i);
    if (n > 0 && c >= 0x20 && c != 0x7f) {
      out.append(text, i, n);
      i += n;
      continue;
    }
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
    ++i;
  }
  if (i < text.size()) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace zbpp
