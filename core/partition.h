// Partitions of a model's layers (core/layers.h) into virtual stages: each virtual stage a
// contiguous range of layers, its figures the sums of its layers'. The problem a partition makes,
// the bound over all partitions, and what a schedule file records of one ("partition"), which
// readers recompute. planner/partition.h searches them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/diag.h"
#include "core/layers.h"
#include "core/problem.h"
#include "core/ticks.h"

namespace zbpp {

/// Layers per virtual stage, in virtual-stage order; every count >= 1, summing to the layers.
struct Partition {
  std::vector<int> counts;
  /// The first layer of each virtual stage.
  std::vector<int> firsts() const;
};

/// A partition's per-virtual-stage figures in exact units: each layer's figure quantised, then summed.
struct StageCosts {
  std::vector<Ticks> t_f, t_b, t_w;
  std::vector<Mem> mem_b, mem_w;          ///< activation memory in MiB quanta
  std::vector<double> static_bytes;       ///< parameters, gradients and optimizer state
};
StageCosts stage_costs(const LayerCosts& costs, const Partition& partition);

/// The problem with a partition's sums as its figures per virtual stage, the rest of `base` (m,
/// T_comm, memory limit, and its chunks and placement: p = virtual stages / chunks; more than one
/// chunk without a placement is interleaved) kept. `base` is the user's input for everything but
/// times and memory. With `device_bytes` (one capacity for every device, or one per stage), each
/// stage's memory limit is its device's bytes less the static bytes of all its chunks, in MiB, in
/// place of base's limit.
ProblemInput problem_for_partition(const LayerCosts& costs, const Partition& partition, const ProblemInput& base,
                                   const std::vector<double>& device_bytes = {});
/// Each stage's static bytes (all its chunks) from a partition's sums, with `shape`'s p, chunks and placement.
std::vector<double> static_bytes_per_stage(const StageCosts& sums, const ProblemInput& shape);

/// The smallest device memory (bytes, the same on every stage) that holds some partition's static
/// bytes and one microbatch's activations on every stage, and that partition: below it, no plan of
/// any partition fits. The busiest stage's need is additive over layers, so a min-max as for times.
/// With more than one chunk a device's ranges need not be neighbours: then a bound that holds for
/// every partition (the largest of an even share and the largest layer), and no partition.
std::pair<double, Partition> least_device_memory(const LayerCosts& costs, int stages, int chunks = 1);

/// The partition of `weights` (one per layer) into `stages` non-empty contiguous ranges whose
/// heaviest range is lightest, and that weight (exact: a binary search on the weight, a greedy pass
/// a step, O(n log total)). 0 when the stages are not 1..n.
std::int64_t lightest_heaviest_range(const std::vector<std::int64_t>& weights, int stages, Partition* out);
/// Each layer's F + B + W in ticks.
std::vector<std::int64_t> layer_loads(const LayerCosts& costs);
/// The smallest, over every partition of the layers into `stages` non-empty contiguous ranges, of
/// the busiest range's F + B + W time in ticks. m times it bounds the span and period of every
/// schedule of every partition from below.
Ticks best_partition_load(const LayerCosts& costs, int stages);

/// m times it bounds every plan of every partition into `stages` devices of `chunks` virtual stages
/// each: one chunk, best_partition_load; more, where a device's ranges need not be neighbours, the
/// larger of the heaviest layer and an even share of all the load.
Ticks partition_load_bound(const LayerCosts& costs, int stages, int chunks);
/// m x partition_load_bound for the problem's devices and chunks: what the file records as the
/// bound over all partitions, and every reader recomputes.
Ticks partition_bound(const LayerCosts& costs, const Problem& problem);

/// Whether a partition fits the layers: `stages` counts, each >= 1, summing to the layer count.
/// Empty string when it does, else why not.
std::string check_partition(const LayerCosts& costs, const Partition& partition, int stages);

/// What a schedule file planned from layer costs records ("partition"): the layers, their counts per
/// virtual stage, and the bound over all partitions with the plan's gap to it. Readers recompute the
/// problem's per-stage figures, the bound and the gap from the layers (check_partition_record).
struct PartitionRecord {
  LayerCosts costs;
  Partition partition;
  std::vector<double> device_bytes;  ///< the device memory planned for, per stage; empty: none given
  std::optional<double> bound, gap;  ///< as recorded (time units; a ratio)
};
nlohmann::json partition_record_to_json(const PartitionRecord& record, Ticks bound, Ticks cost);
std::optional<PartitionRecord> partition_record_from_json(const nlohmann::json& j, const std::string& file,
                                                         const std::string& pointer, std::vector<Diag>* diags);
/// The record against the problem it claims to have made: a partition that fits the layers and the
/// virtual stages, the problem's T_F, T_B, T_W, M_B and M_W those of its ranges, the bound m times
/// best_partition_load and the gap that of `cost` (the plan's cost, as its solver report measures it);
/// with device memory, each stage's limit that memory less its static bytes.
std::vector<Diag> check_partition_record(const PartitionRecord& record, const Problem& problem, Ticks cost,
                                         const std::string& path);

/// "4/4/5/1": layers per virtual stage, as messages and notes write a partition.
std::string counts_text(const Partition& partition);

/// "embedding..h4" or "h5": a virtual stage's layers by name.
std::string partition_range_text(const LayerCosts& costs, const Partition& partition, int vs);

/// The partition in Megatron-LM's --pipeline-model-parallel-layout notation: stages separated by
/// '|', "E" the embedding, "t" a transformer block (runs written "t*5"), "L" the loss (head), e.g.
/// "Et*5|t*4|t*3|L". Empty, with *err set, where a layer is neither (kind other).
std::string megatron_layout(const LayerCosts& costs, const Partition& partition, std::string* err);

}  // namespace zbpp
