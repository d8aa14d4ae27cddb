// How often, and by how much, the ILP refinement beats the heuristic on random problems with
// per-stage times. Prints one line per problem and a summary; asserts nothing.
//
// Generator (seeded, reproducible): p from {4, 6, 8}; m = p * {1, 1.5, 2, 3} (rounded); per stage
// T_F = U[0.8, 1.2], T_B = U[0.8, 1.3], T_W = U[0.4, 0.8] (the paper's T_B + T_W ~ 2 T_F, with a
// spread between stages as uneven layer splits give), T_comm = U[0, 0.1] for the whole pipeline;
// M_B = 1, M_W = U[0.3, 0.5] per stage; limit from {1p, 1.5p, 2p, 3p}. Times have 3 decimals.
//
// Usage: zbpp_ilp_random [problems=30] [seconds per ILP=10] [seed=1]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "core/bounds.h"
#include "planner/refine_ilp.h"
#include "planner/search_heuristic.h"

using namespace zbpp;

int main(int argc, char** argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 30;
  double seconds = argc > 2 ? std::atof(argv[2]) : 10;
  unsigned seed = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 1;
  std::mt19937 rng(seed);
  auto uniform = [&](double a, double b) {
    return std::round(std::uniform_real_distribution<double>(a, b)(rng) * 1000) / 1000;
  };
  const int ps[] = {4, 6, 8};
  const double ms[] = {1, 1.5, 2, 3};
  const char* limits[] = {"1p", "1.5p", "2p", "3p"};
  int solved = 0, better = 0, optimal_before = 0, optimal_after = 0;
  double sum_gain = 0, max_gain = 0, sum_gap_before = 0, sum_gap_after = 0;
  std::printf("%3s %2s %3s %5s | %9s %9s | %9s %9s | %7s | %s\n", "#", "p", "m", "limit", "heur.bub", "ilp.bub",
              "bound.bub", "gain %", "gap %", "status");
  for (int i = 0; i < count; ++i) {
    ProblemInput in;
    in.p = ps[std::uniform_int_distribution<int>(0, 2)(rng)];
    in.m = static_cast<int>(std::lround(in.p * ms[std::uniform_int_distribution<int>(0, 3)(rng)]));
    in.t_f.clear(), in.t_b.clear(), in.t_w.clear(), in.mem_b.clear(), in.mem_w.clear();
    for (int s = 0; s < in.p; ++s) {
      in.t_f.push_back(uniform(0.8, 1.2));
      in.t_b.push_back(uniform(0.8, 1.3));
      in.t_w.push_back(uniform(0.4, 0.8));
      in.mem_b.push_back(1);
      in.mem_w.push_back(uniform(0.3, 0.5));
    }
    in.t_comm = {uniform(0, 0.1)};
    in.mem_limit = limits[std::uniform_int_distribution<int>(0, 3)(rng)];
    std::vector<Diag> diags;
    auto pr = build_problem(in, "", &diags);
    if (!pr) continue;
    auto heuristic = search_heuristic(*pr, &diags);
    if (!heuristic) {
      std::printf("%3d %2d %3d %5s | no schedule fits the limit\n", i, in.p, in.m, in.mem_limit.c_str());
      continue;
    }
    IlpOptions options;
    options.seconds = seconds;
    auto r = refine_ilp(*pr, heuristic->schedule, options, &diags);
    if (!r) continue;
    ++solved;
    Ticks bound = span_lower_bounds(*pr).best;
    double gain = 1.0 - static_cast<double>(r->cost) / static_cast<double>(heuristic->span);
    double gap_before = relative_gap(heuristic->span, static_cast<double>(bound));
    double gap_after = relative_gap(r->cost, r->lower_bound * kQuantaPerUnit);
    better += r->cost < heuristic->span;
    optimal_before += heuristic->span <= bound;
    optimal_after += r->proven_optimal;
    sum_gain += gain;
    max_gain = std::max(max_gain, gain);
    sum_gap_before += gap_before;
    sum_gap_after += gap_after;
    std::printf("%3d %2d %3d %5s | %9.6f %9.6f | %9.6f %9.4f | %7.4f | %s, %.1f s\n", i, in.p, in.m,
                in.mem_limit.c_str(), bubble_rate_of(*pr, heuristic->span), bubble_rate_of(*pr, r->cost),
                bubble_rate_of(*pr, bound), 100 * gain, 100 * gap_after, solve_status_name(r->status), r->seconds);
    std::fflush(stdout);
  }
  std::printf("\n%d problems: the ILP beats the heuristic in %d (mean span gain %.3f %%, max %.3f %%)\n", solved,
              better, solved ? 100 * sum_gain / solved : 0.0, 100 * max_gain);
  std::printf("certified optimal: %d by the bounds alone, %d after the ILP; mean gap %.3f %% -> %.3f %%\n",
              optimal_before, optimal_after, solved ? 100 * sum_gap_before / solved : 0.0,
              solved ? 100 * sum_gap_after / solved : 0.0);
  return 0;
}
