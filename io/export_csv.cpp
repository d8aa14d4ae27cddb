// PyTorch schedule CSV export (see export_csv.h).
#include "io/export_csv.h"

#include <sstream>

#include "io/pytorch_actions.h"

namespace zbpp {

std::string export_pytorch_csv(const Schedule& s) {
  std::ostringstream out;
  for (int st = 0; st < s.p; ++st) {
    bool first = true;
    for (const Op& op : s.stages[st]) {
      if (!is_compute(op.type)) continue;
      out << (first ? "" : ",") << s.placement[st][op.chunk] << pytorch::action_name(op.type) << op.mb;
      first = false;
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace zbpp
