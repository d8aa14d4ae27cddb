// A disk that fills up half way through a write, made reproducible: for its lifetime, writes past
// `bytes` fail with EFBIG (SIGXFSZ ignored). Shared by the planner's and the runtime's output tests.
#pragma once

#include <sys/resource.h>

#include <csignal>

namespace zbpp::test {

struct FileSizeLimit {
  rlimit old{};
  void (*old_handler)(int);
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old);
    old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit now = old;
    now.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &now);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
  }
};

}  // namespace zbpp::test
