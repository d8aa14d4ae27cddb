// See run_main.h.
#include "cli/run_main.h"

#include <exception>
#include <iostream>
#include <new>

namespace zbpp {

int run_main(const std::string& program, int argc, const char* const* argv, const std::function<int()>& body) {
  std::string command = program;
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  try {
    return body();
  } catch (const std::bad_alloc&) {
    std::cerr << program << ": out of memory in '" << command << "': the process reached the memory it may use "
              << "(ulimit -v, or the machine's); give it more, or a smaller input\n";
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error in '" << command << "': " << e.what() << " (please report it)\n";
  } catch (...) {
    std::cerr << program << ": internal error in '" << command << "': unknown exception (please report it)\n";
  }
  return 1;  // kExitFailed (cli_common.h)
}

}  // namespace zbpp
