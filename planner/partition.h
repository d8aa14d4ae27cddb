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
#include "core/partition.h"
#include "core/problem.h"
#include "planner/pipeline.h"

namespace zbpp {

/// How --layers partitions the model for a method: into `chunks` virtual stages per device, placed
/// as `placement` (empty for one chunk), screened with `screen` where the method costs seconds a
/// plan (then the best few are planned with the method itself; empty: every one with the method).
struct PartitionShape {
  int chunks = 1;
  std::vector<std::vector<int>> placement;
  std::string screen;
};
/// The shape `method` plans on p devices with the chunks and placement given (chunks 1 and no
/// placement when not given); nothing, with *why set, for a method --layers does not plan or a
/// placement it does not run.
std::optional<PartitionShape> partition_shape(const std::string& method, int p, int chunks,
                                              const std::vector<std::vector<int>>& placement, std::string* why);

struct PartitionSearchOptions {
  /// Partitions planned at most; beyond, the least promising by their bound are left out (said in
  /// the notes, and the bound over all partitions still holds).
  long max_plans = 20000;
  /// How auto and the one-chunk ILP are searched: every partition with the cheap `screen` method
  /// first, then `method` itself on the `refine` best of them (other shapes screen as
  /// partition_shape says, keeping `refine` too).
  std::string screen = "heuristic";
  int refine = 3;
  std::function<void(const std::string&)> progress;  ///< a line now and then on long searches
  /// Plan this partition only (zbplan plan --partition): no search, the bound over all still said.
  std::optional<Partition> fixed;
  /// Device memory in bytes (one for all stages or one per stage): each stage's activation limit is
  /// it less the stage's static bytes (problem_for_partition), in place of the base's limit.
  std::vector<double> device_bytes;
  /// auto: plan one chunk per stage only, not also the V and interleaved shapes (plan_auto_partitioned).
  bool one_shape = false;
};

struct PartitionPlan {
  PlanResult plan;          ///< the best partition's plan (its problem: the partition's sums)
  Partition partition;
  long enumerated = 0;      ///< partitions whose bound could beat the first plan
  long planned = 0;         ///< partitions planned
  Ticks bound = 0;          ///< m x partition_load_bound: no plan of any partition costs less
};

/// Plans `method` on the best partition of `costs` into `base.p` devices of the chunks the method
/// plans (partition_shape). `base` holds m, T_comm and the memory limit; its times and memory are
/// replaced by each partition's sums.
std::optional<PartitionPlan> plan_partitioned(const LayerCosts& costs, const ProblemInput& base, const std::string& method,
                                              std::vector<Diag>* diags, const PlanOptions& options,
                                              const PartitionSearchOptions& search = {});

/// auto with --layers (plan_partitioned calls it): the partition searched for one chunk per stage,
/// for the V and for 2 chunks interleaved; the cheapest plan of all, a line per shape in its notes.
std::optional<PartitionPlan> plan_auto_partitioned(const LayerCosts& costs, const ProblemInput& base,
                                                   std::vector<Diag>* diags, const PlanOptions& options,
                                                   const PartitionSearchOptions& search = {});

/// The partition of `layers` over `stages` that minimises the busiest stage's F + B + W (the first
/// such in lexicographic order of counts).
Partition balanced_partition(const LayerCosts& costs, int stages);

}  // namespace zbpp
