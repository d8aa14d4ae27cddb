// Shared by the libFuzzer harnesses: a broken invariant aborts (libFuzzer saves the input).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/diag.h"

namespace zbpp::fuzz {

// Every rejection must say why: a failed load with no diagnostic would leave the user guessing.
inline void require(bool ok, const char* what, const std::vector<Diag>& diags = {}) {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant broken: %s\n%s\n", what, format_diags(diags).c_str());
  std::abort();
}

}  // namespace zbpp::fuzz
