// Formatting of diagnostics (see diag.h).
#include "planner/diag.h"

namespace zbpp {

std::string format_diag(const Diag& d) {
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
  return out + (out.empty() ? "" : ": ") + d.message;
}

std::string format_diags(const std::vector<Diag>& diags) {
  std::string out;
  for (const Diag& d : diags) out += format_diag(d) + "\n";
  return out;
}

}  // namespace zbpp
