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

}  // namespace zbpp
