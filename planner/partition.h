// The partition search: which contiguous layers each stage runs, chosen together with the schedule
// (zbplan plan --layers). Every partition whose busy bound could still beat the best plan found is
// planned with the method asked for and ranked by the plan's own cost (the true period or wall when
// lowered), so the result equals exhaustive search over all partitions with the same method.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/diag.h"
#include "core/layers.h"
#include "core/problem.h"
#include "planner/pipeline.h"

namespace zbpp {

/// The methods --layers plans: those with one chunk per stage (a partition gives each stage one
/// range of layers; the V and interleaved placements need times per virtual stage).
bool plans_one_chunk(const std::string& method);

struct PartitionSearchOptions {
  /// Partitions planned at most; beyond, the least promising by their bound are left out (said in
  /// the notes, and the bound over all partitions still holds).
  long max_plans = 20000;
  /// How auto and the ILPs are searched: every partition with the cheap `screen` method first,
  /// then `method` itself on the `refine` best of them.
  std::string screen = "heuristic";
  int refine = 3;
  std::function<void(const std::string&)> progress;  ///< a line now and then on long searches
  /// Plan this partition only (zbplan plan --partition): no search, the bound over all still said.
  std::optional<Partition> fixed;
  /// Device memory in bytes (one for all stages or one per stage): each stage's activation limit is
  /// it less the stage's static bytes (problem_for_partition), in place of the base's limit.
  std::vector<double> device_bytes;
};

struct PartitionPlan {
  PlanResult plan;          ///< the best partition's plan (its problem: the partition's sums)
  Partition partition;
  long enumerated = 0;      ///< partitions whose bound could beat the first plan
  long planned = 0;         ///< partitions planned
  Ticks bound = 0;          ///< m x the best busiest-stage load over all partitions: no plan of any partition costs less
};

/// Plans `method` on the best partition of `costs` into `base.p` stages. `base` holds m, T_comm and
/// the memory limit; its times and memory are replaced by each partition's sums.
std::optional<PartitionPlan> plan_partitioned(const LayerCosts& costs, const ProblemInput& base, const std::string& method,
                                              std::vector<Diag>* diags, const PlanOptions& options,
                                              const PartitionSearchOptions& search = {});

/// The partition of `layers` over `stages` that minimises the busiest stage's F + B + W (the first
/// such in lexicographic order of counts).
Partition balanced_partition(const LayerCosts& costs, int stages);

}  // namespace zbpp
