// The Catch2 session every test binary's main runs (catch_impl.cpp), so that the mains need not
// compile Catch2's implementation.
#pragma once

namespace zbpp::test {

/// Runs the binary's test cases as Catch2's own main would; returns its exit code.
int run_catch(int argc, char** argv);

}  // namespace zbpp::test
