// The Catch2 main of planner_tests (Catch2's implementation: catch_impl.cpp).
#include "tests/catch_run.h"

int main(int argc, char** argv) { return zbpp::test::run_catch(argc, argv); }
