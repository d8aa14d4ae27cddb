// zbplan: the schedule-search compiler's command line. All logic lives in zbpp_core.
#include <malloc.h>

#include <exception>
#include <iostream>
#include <string>

#include "cli/zbplan_cli.h"

int main(int argc, char** argv) {
  // Planning allocates and frees tables of a few MB pass after pass. glibc would map each one
  // afresh and give it back when freed, so every pass paid first-touch page faults again; kept in
  // the heap, freed memory is reused (a fifth fewer page faults at p=32, m=256).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  // One arena for all threads: a pass's second thread (the search's worker, the timing beside the
  // checks) then reuses what earlier passes freed instead of touching pages of an arena of its own.
  mallopt(M_ARENA_MAX, 1);
  // Last resort: every loader reports bad input as located diagnostics, so anything that reaches
  // here is a bug; say which command met it and exit 1 instead of ending in std::terminate.
  std::string command = "zbplan";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  try {
    return zbpp::run_zbplan(argc, argv, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "zbplan: internal error in '" << command << "': " << e.what() << " (please report it)\n";
  } catch (...) {
    std::cerr << "zbplan: internal error in '" << command << "': unknown exception (please report it)\n";
  }
  return 1;
}
