// zbpp benchmarks: prints figures, asserts nothing. Run with `cmake --build build --target bench`
// or `build/tools/zbpp_bench`. Results and the machine they came from are recorded in docs/benchmarks.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/schedule_json.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "planner/gen_baseline.h"
#include "planner/pipeline.h"
#include "planner/search_heuristic.h"

using namespace zbpp;

namespace {

// Runs `fn` `reps` times and returns the min and median wall time in microseconds.
std::pair<double, double> time_us(int reps, const std::function<void()>& fn) {
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  return {us.front(), us[us.size() / 2]};
}

// The paper's 28.3B times (Table 6) on p stages and m microbatches, with an optional memory limit.
Problem table5_problem(int p, int m, const std::string& mem_limit = "") {
  ProblemInput in;
  in.p = p;
  in.m = m;
  in.t_f = {10.402};
  in.t_b = {10.248};
  in.t_w = {7.698};
  in.t_comm = {0.460};
  in.mem_b = {1};
  in.mem_w = {0.3664};
  in.mem_limit = mem_limit;
  std::vector<Diag> diags;
  return *build_problem(in, "", &diags);
}

}  // namespace

int main() {
  std::printf("%-34s %8s %12s %12s\n", "benchmark", "ops", "min (us)", "median (us)");
  for (auto [p, m] : {std::pair{8, 24}, std::pair{16, 128}, std::pair{32, 256}}) {
    Problem pr = table5_problem(p, m);
    for (const char* method : {"1f1b", "zb-h1", "zb-h2"}) {
      Schedule s = std::string(method) == "1f1b" ? generate_1f1b(pr)
                   : std::string(method) == "zb-h1" ? generate_zb_h1(pr) : generate_zb_h2(pr);
      size_t ops = 0;
      for (const auto& st : s.stages) ops += st.size();
      volatile Ticks sink = 0;
      auto [min_sim, med_sim] = time_us(200, [&] {
        std::vector<Diag> diags;
        sink = simulate_timeline(s, pr, &diags)->span;
      });
      auto [min_span, med_span] = time_us(200, [&] { sink = simulate_span(s, pr); });
      auto [min_val, med_val] = time_us(100, [&] { sink = static_cast<Ticks>(validate(s, pr).size()); });
      char name[64];
      std::snprintf(name, sizeof name, "p=%d m=%d %s", p, m, method);
      std::printf("%-34s %8zu %12.1f %12.1f\n", (std::string(name) + " simulate").c_str(), ops, min_sim, med_sim);
      std::printf("%-34s %8zu %12.1f %12.1f\n", (std::string(name) + " span only").c_str(), ops, min_span, med_span);
      std::printf("%-34s %8zu %12.1f %12.1f\n", (std::string(name) + " validate").c_str(), ops, min_val, med_val);
    }
  }
  std::printf("\n%-34s %8s %12s %12s %12s\n", "heuristic grid search (2p limit)", "ops", "min (ms)", "median (ms)",
              "max (ms)");
  for (auto [p, m] : {std::pair{8, 24}, std::pair{16, 128}, std::pair{32, 256}, std::pair{64, 512}}) {
    Problem pr = table5_problem(p, m, "2p");
    std::vector<Diag> diags;
    for (int threads : {1, 2}) {
      std::vector<double> ms;
      for (int rep = 0; rep < 41; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        auto found = search_heuristic(pr, &diags, threads);
        auto t1 = std::chrono::steady_clock::now();
        if (!found) return 1;
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      char name[64];
      std::snprintf(name, sizeof name, "p=%d m=%d, %d thread%s", p, m, threads, threads > 1 ? "s" : "");
      std::printf("%-34s %8d %12.2f %12.2f %12.2f\n", name, 3 * p * m, ms.front(), ms[ms.size() / 2], ms.back());
    }
  }
  // The passes of `zbplan plan --method heuristic --mem-limit 2p` (post-validation) after the
  // search, in one process: what the whole-process figures (tools/process_bench.sh) add to it,
  // besides start-up, first-touch page faults and the file's write, fsync and rename.
  std::printf("\n%-34s %8s %12s %12s %12s\n", "zbplan plan passes (lowered ops)", "ops", "min (ms)", "median (ms)",
              "max (ms)");
  for (auto [p, m] : {std::pair{32, 256}, std::pair{64, 512}}) {
    Problem pr = table5_problem(p, m, "2p");
    const LowerOptions lowering{Optimizer::kPostValidation, PostValidationAt::kFirstBackward};
    IterationOptions figures;
    figures.op_times = false;
    std::vector<Diag> diags;
    auto planned = plan_schedule(pr, "heuristic", &diags);
    if (!planned) return 1;
    PlanResult lowered = *planned;
    if (!lower_planned(&lowered, &diags, lowering)) return 1;
    const Schedule& s = lowered.schedule;
    size_t ops = 0;
    for (const auto& st : s.stages) ops += st.size();
    auto timeline = simulate_timeline(s, pr, &diags);
    auto iterations = simulate_iterations(s, pr, figures, &diags);
    if (!timeline || !iterations) return 1;
    volatile size_t sink = 0;
    const std::vector<std::pair<const char*, std::function<void()>>> passes = {
        {"search+validate+bound", [&] { sink = plan_schedule(pr, "heuristic", &diags)->schedule.stages.size(); }},
        {"lower+validate", [&] {
           PlanResult copy = *planned;
           sink = lower_planned(&copy, &diags, lowering);
         }},
        {"simulate 1 iteration", [&] { sink = simulate_timeline(s, pr, &diags)->ops.size(); }},
        {"simulate 3 iterations", [&] { sink = simulate_iterations(s, pr, figures, &diags)->ops.size(); }},
        {"schedule text", [&] {
           size_t bytes = 0;
           write_schedule_json(s, pr, *timeline, [&](std::string_view piece) { return (bytes += piece.size()) > 0; },
                               &*iterations, "period", 0, &planned->solver);
           sink = bytes;
         }},
    };
    for (const auto& [what, fn] : passes) {
      std::vector<double> ms;
      for (int rep = 0; rep < 21; ++rep) ms.push_back(time_us(1, fn).first / 1000);
      std::sort(ms.begin(), ms.end());
      char name[64];
      std::snprintf(name, sizeof name, "p=%d m=%d %s", p, m, what);
      std::printf("%-34s %8zu %12.2f %12.2f %12.2f\n", name, ops, ms.front(), ms[ms.size() / 2], ms.back());
    }
  }
  return 0;
}
