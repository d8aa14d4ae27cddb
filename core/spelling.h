// "Did you mean": the one rule both programs use to suggest a name for a mistyped one (methods,
// flags, subcommands, enum values, model presets).
#pragma once

#include <string>
#include <vector>

namespace zbpp {

/// Edit distance in which swapping two neighbouring letters costs 1 ("plna" is 1 from "plan").
size_t typo_distance(const std::string& a, const std::string& b);
/// The name in `known` closest to `given` (any case) when it is near enough to be a typo of it,
/// else "". Near enough: 1 edit for names up to 4 letters, 2 up to 8, 3 beyond.
std::string closest_name(const std::string& given, const std::vector<std::string>& known);
/// "a, b, c".
std::string join_names(const std::vector<std::string>& names);

}  // namespace zbpp
