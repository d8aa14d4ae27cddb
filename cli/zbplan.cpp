// zbplan: the schedule-search compiler's command line. All logic lives in zbpp_core.
#include <malloc.h>

#include <iostream>

#include "cli/run_main.h"
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
  // Last resort: bad input is reported where it is met, so what escapes is a bug, or the
  // process running out of memory; run_main says which.
  return zbpp::run_main("zbplan", argc, argv, [&] { return zbpp::run_zbplan(argc, argv, std::cout, std::cerr); });
}
