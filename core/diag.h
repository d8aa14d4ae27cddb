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
  size_t more = 0;           ///< non-zero on the entry that stands for that many findings not kept
  bool warning = false;      ///< a broken promise, not an error: printed as "warning: ..."
};

/// The findings kept for one input: a badly broken file could yield millions, the first thousand say
/// enough, and the rest cost a count, not memory.
inline constexpr size_t kMaxDiags = 1000;

/// Appends `d` while fewer than kMaxDiags are kept; after that counts it in a last "... and N more"
/// entry. A counting entry passed in adds its count (lists merge without losing the total).
void add_diag(std::vector<Diag>* diags, Diag d);
/// How many findings `diags` stands for, those only counted included.
size_t diag_count(const std::vector<Diag>& diags);

/// One line: `file: stage 3, op 17 (W5): message` with the parts that are known ("warning: message").
std::string format_diag(const Diag& d);
/// All diagnostics, one per line.
std::string format_diags(const std::vector<Diag>& diags);

/// Text a file gave (a method's name, a layer's) as a terminal, an SVG or a JSON writer may show it:
/// control characters, DEL and bytes that are not UTF-8 as \xNN escapes (tab and newline as \t,
/// \n), cut after `max` bytes with "...(N bytes)". Files may hold anything; what is shown is text.
std::string shown_text(const std::string& text, size_t max = 200);

}  // namespace zbpp
