// Catch2's implementation, compiled once for every test binary; each main_*.cpp holds only its
// main, which calls run_catch. The single header's implementation is the heaviest translation unit
// of the build, and it is compiled without optimisation (tests/CMakeLists.txt): half the time, and
// it only runs tests.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/catch_run.h"

int zbpp::test::run_catch(int argc, char** argv) { return Catch::Session().run(argc, argv); }
