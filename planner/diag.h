// Diagnostics: one error or warning with the place it refers to.
// Every checker returns a list of these; the CLI prints them one per line and exits non-zero.
#pragma once

#include <string>
#include <vector>

namespace zbpp {

struct Diag {
  std::string file;          ///< the file the problem is in; empty for flags or in-memory schedules
  std::string json_pointer;  ///< e.g. "/stages/3/17/mb"; empty when the place is a stage/op
  int stage = -1;            ///< stage (rank) index, or -1 when not about one stage
  int op_index = -1;         ///< position of the op in its stage's list, or -1
  std::string op;            ///< the op's short form ("W5", "F3:1"), or empty
  std::string message;       ///< what is wrong, lower case, no trailing period
};

/// One line: `file: stage 3, op 17 (W5): message` with the parts that are known.
std::string format_diag(const Diag& d);
/// All diagnostics, one per line.
std::string format_diags(const std::vector<Diag>& diags);

}  // namespace zbpp
