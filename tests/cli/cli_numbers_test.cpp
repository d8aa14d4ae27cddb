// Issue 19, class 10: one number parser for every flag: decimal, whole token, finite, in range;
// a malformed value is a command-line error (exit 2) naming the flag.
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli/cli_numbers.h"
#include "cli/zbplan_cli.h"

using namespace zbpp;

TEST_CASE("parse_integer and parse_real: decimal, whole token, finite, in range") {
  long long i = 0;
  double x = 0;
  CHECK(parse_integer("10", 1, 100, &i) == "");
  CHECK(i == 10);
  CHECK(parse_integer("0", 0, 1, &i) == "");
  CHECK(parse_integer("-7", -10, 0, &i) == "");
  CHECK(i == -7);
  CHECK(parse_integer("010", 1, 100, &i) == "'010' has a leading zero (octal or decimal?); write 10");
  CHECK(parse_integer("-007", -10, 0, &i) == "'-007' has a leading zero (octal or decimal?); write -7");
  CHECK(parse_integer("0x10", 1, 100, &i) == "'0x10' has 'x10' after the number; expected a decimal integer");
  CHECK(parse_integer("8junk", 1, 100, &i) == "'8junk' has 'junk' after the number; expected a decimal integer");
  CHECK(parse_integer(" 8", 1, 100, &i) == "' 8' is not a number; expected a decimal integer");
  CHECK(parse_integer("+8", 1, 100, &i) == "'+8' is not a number; expected a decimal integer");
  CHECK(parse_integer("1e3", 1, 10000, &i) == "'1e3' has 'e3' after the number; expected a decimal integer");
  CHECK(parse_integer("101", 1, 100, &i) == "'101' is out of range; expected an integer 1..100");
  CHECK(parse_integer("99999999999999999999", 1, 100, &i) ==
        "'99999999999999999999' is out of range; expected an integer 1..100");
  CHECK(parse_integer("", 1, 100, &i) == "empty; expected a number");
  CHECK(parse_real("0.5", 0, 1, false, &x) == "");
  CHECK(x == 0.5);
  CHECK(parse_real("2.5e-3", 0, 1, false, &x) == "");
  CHECK(x == 0.0025);
  CHECK(parse_real("00.5", 0, 1, false, &x) == "'00.5' has a leading zero (octal or decimal?); write 0.5");
  CHECK(parse_real("nan", 0, 1, false, &x) == "'nan' is not a number; expected a decimal number like 2 or 0.5");
  CHECK(parse_real("inf", 0, 1, false, &x) == "'inf' is not a number; expected a decimal number like 2 or 0.5");
  CHECK(parse_real("1e999", -kAnyReal, kAnyReal, false, &x) == "'1e999' is out of range; expected a finite number");
  CHECK(parse_real("1.", 0, 9, false, &x) == "'1.': digits must follow the '.'; expected a decimal number like 2 or 0.5");
  CHECK(parse_real("1e", 0, 9, false, &x) ==
        "'1e': digits must follow the exponent; expected a decimal number like 2 or 0.5");
  CHECK(parse_real("0", 0, 9, true, &x) == "'0' is out of range; expected above 0 and at most 9");
  CHECK(parse_real("-1", 0, kAnyReal, true, &x) == "'-1' is out of range; expected above 0");
  CHECK(parse_real("-o", 0, kAnyReal, true, &x) == "'-o' looks like a flag, not a number (the flag's value must follow it)");
  CHECK(parse_real("-inf", 0, kAnyReal, true, &x) == "'-inf' is not a number; expected a decimal number like 2 or 0.5");
}

TEST_CASE("parse_real_list: every item a number, no empty item, nothing after") {
  std::vector<double> v;
  CHECK(parse_real_list("1,2.5,3", -kAnyReal, kAnyReal, &v) == "");
  CHECK(v == std::vector<double>{1, 2.5, 3});
  CHECK(parse_real_list("1,", -kAnyReal, kAnyReal, &v) ==
        "'1,': an empty item at the end; expected numbers separated by single commas");
  CHECK(parse_real_list("1,,2", -kAnyReal, kAnyReal, &v) ==
        "'1,,2': an empty item at position 2; expected numbers separated by single commas");
  CHECK(parse_real_list("", -kAnyReal, kAnyReal, &v) == "empty; expected a number or a comma-separated list like 1,2,3");
  CHECK(parse_real_list("1,nan", -kAnyReal, kAnyReal, &v) ==
        "'1,nan', item 2: 'nan' is not a number; expected a decimal number like 2 or 0.5");
  std::vector<long long> n;
  CHECK(parse_integer_list("1,3,", 0, 9, &n) == "'1,3,': an empty item at the end; expected numbers separated by single commas");
}

TEST_CASE("zbplan: every number flag refuses octal, junk, nan and out-of-range values with exit 2") {
  auto zbplan = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"zbplan", "plan", "--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "1",
                                     "--tb",   "1",    "--tw",     "1",     "-o", std::string(ZBPP_TEST_TMP) + "/n.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    int code = run_zbplan(static_cast<int>(argv.size()), argv.data(), out, err);
    return std::make_pair(code, err.str());
  };
  const std::string usage = "\nrun 'zbplan plan --help' for usage\n";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-m", "010"}, "zbplan: --microbatches: '010' has a leading zero (octal or decimal?); write 10"},
      {{"-p", "2x"}, "zbplan: --stages: '2x' has 'x' after the number; expected a decimal integer"},
      {{"--tf", "1,"}, "zbplan: --tf: '1,': an empty item at the end; expected numbers separated by single commas"},
      {{"--tf", ""}, "zbplan: --tf: empty; expected a number or a comma-separated list like 1,2,3"},
      {{"--tcomm", "nan"}, "zbplan: --tcomm: 'nan' is not a number; expected a decimal number like 2 or 0.5"},
      {{"--allreduce-latency", "nan"},
       "zbplan: --allreduce-latency: 'nan' is not a number; expected a decimal number like 2 or 0.5"},
      {{"--time-limit", "nan"}, "zbplan: --time-limit: 'nan' is not a number; expected a decimal number like 2 or 0.5"},
      {{"--time-limit", "1e9"}, "zbplan: --time-limit: '1e9' is out of range; expected 0..86400"},
      {{"--iterations", "0x10"}, "zbplan: --iterations: '0x10' has 'x10' after the number; expected a decimal integer"},
      // A flag where a value belongs: the value was left out.
      {{"--tcomm", "--quiet"}, "zbplan: --tcomm: '--quiet' looks like a flag, not a number (the flag's value must follow it)"},
      {{"--tf", "-o"}, "zbplan: --tf: '-o' looks like a flag, not a number (the flag's value must follow it)"},
  };
  for (const auto& [extra, message] : cases) {
    INFO(extra[0] << " " << extra[1]);
    auto [code, err] = zbplan(extra);
    CHECK(code == 2);
    CHECK(err == message + usage);
  }
}
