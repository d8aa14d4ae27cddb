// zbplan: the schedule-search compiler's command line. All logic lives in zbpp_core.
#include <iostream>

#include "planner/zbplan_cli.h"

int main(int argc, char** argv) { return zbpp::run_zbplan(argc, argv, std::cout, std::cerr); }
