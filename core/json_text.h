// JSON text as every reader of the project's files takes it: the file read whole, parsed with
// located errors (file:line:col, the line and a caret; a key given twice refused), and the small
// helpers their messages use. The files' own readers (problem.h, schedule_json.h, layers.h,
// trace.h, runtime/model.h) build on it.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/diag.h"

namespace zbpp {

/// Reads a whole file as text; false with a diagnostic when it cannot be read: "not a regular
/// file", or kCannotOpen and the system's reason ("cannot open file: No such file or directory").
constexpr const char* kCannotOpen = "cannot open file";
bool read_text_file(const std::string& path, std::string* text, std::vector<Diag>* diags);

/// The elements of the lists nested `depth` deep under the root object's `key` (a schedule's ops:
/// key "stages", depth 2), handed to `take` one by one as the parser completes them instead of
/// kept in the DOM, which holds those lists empty. A file's bulk then costs what `take` keeps of
/// it, not a DOM node per element (about ten times the text). `take` gets the element and its index
/// in each list on the way (stage, op).
struct ElementSink {
  std::string key;
  size_t depth = 1;
  std::function<void(const nlohmann::json& element, const std::vector<size_t>& indices)> take;
};

/// Parses JSON text; a syntax error becomes `file:line:col: message` followed by the line and a caret.
/// With a sink, the elements it names go to it rather than into the result.
std::optional<nlohmann::json> parse_json_text(const std::string& text, const std::string& file, std::vector<Diag>* diags,
                                              const ElementSink* sink = nullptr);

/// A JSON value as error messages show it: at most about 80 characters, ending in "..." when cut.
/// Unlike dump() it does not recurse through the whole value (a file may nest 100000 lists deep).
std::string json_excerpt(const nlohmann::json& value);

/// An integer JSON value within [lo, hi]; nothing for a non-integer or one outside. An unsigned value
/// beyond long long (18446744073709551615) is outside, not wrapped to -1 as get<long long>() would.
std::optional<long long> json_integer(const nlohmann::json& value, long long lo, long long hi);

}  // namespace zbpp
