// The partition search (partition.h). A partition's busy bound, m x its busiest stage's F + B + W,
// bounds the cost of any of its schedules from below, so partitions are planned in order of that
// bound and the search stops at the first whose bound cannot beat the best plan so far: the same
// winner as planning every partition, at a fraction of the plans.
#include "planner/partition.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "core/simulate.h"
#include "planner/methods.h"

namespace zbpp {

namespace {

constexpr Ticks kNever = std::numeric_limits<Ticks>::max();

// Per-layer F + B + W in ticks, as prefix sums: the load of layers [a, b) is at[b] - at[a]. Never
// more than the stage's figures (which lift a zero T_F or T_B to one tick), so m x it is a bound.
struct Loads {
  std::vector<Ticks> at;
  explicit Loads(const LayerCosts& costs) : at(costs.layers.size() + 1, 0) {
    const std::vector<Ticks> loads = layer_loads(costs);
    for (size_t l = 0; l < loads.size(); ++l) at[l + 1] = at[l] + loads[l];
  }
  Ticks range(int a, int b) const { return at[static_cast<size_t>(b)] - at[static_cast<size_t>(a)]; }
  int layers() const { return static_cast<int>(at.size()) - 1; }
};

struct Candidate {
  Ticks busiest = 0;  // the busiest stage's load
  std::vector<int> counts;
  bool operator<(const Candidate& o) const { return busiest != o.busiest ? busiest < o.busiest : counts < o.counts; }
};

// Every partition into the map's virtual stages whose busiest device (the sum of its virtual
// stages' ranges) is below `below`, depth first in virtual-stage order with ranges that make a
// device too heavy (or leave more load than the devices still to come can take) cut early. Keeps
// at most `keep` (the lightest) and counts the rest in *left_out; stops after kMaxVisits ranges
// tried (*cut set), so a flat profile over many layers cannot run away.
constexpr long kMaxVisits = 20'000'000;
void enumerate(const Loads& loads, const VirtualStageMap& map, Ticks below, size_t keep, std::vector<Candidate>* out,
               long* left_out, bool* cut) {
  long visits = 0;
  const int n = loads.layers(), stages = map.virtual_stages(), p = static_cast<int>(map.placement.size());
  std::vector<int> counts(static_cast<size_t>(stages));
  std::vector<Ticks> device(static_cast<size_t>(p), 0);
  // last_vs[d]: the device's last virtual stage; a device whose last has passed takes no more.
  std::vector<int> last_vs(static_cast<size_t>(p), 0);
  for (int vs = 0; vs < stages; ++vs) last_vs[static_cast<size_t>(map.stage_of[vs])] = vs;
  auto trim = [&] {
    std::nth_element(out->begin(), out->begin() + static_cast<long>(keep), out->end());
    *left_out += static_cast<long>(out->size() - keep);
    out->resize(keep);
  };
  auto busiest = [&] { return *std::max_element(device.begin(), device.end()); };
  auto go = [&](auto&& self, int vs, int first) -> void {
    auto& mine = device[static_cast<size_t>(map.stage_of[vs])];
    if (vs == stages - 1) {
      const Ticks load = loads.range(first, n);
      if (mine + load >= below) return;
      counts[static_cast<size_t>(vs)] = n - first;
      mine += load;
      out->push_back({busiest(), counts});
      mine -= load;
      if (out->size() >= 2 * keep) trim();
      return;
    }
    const int rest = stages - vs - 1;  // virtual stages after this one, one layer each at least
    for (int end = first + 1; end <= n - rest; ++end) {
      if (++visits > kMaxVisits) {
        *cut = true;
        return;
      }
      const Ticks load = loads.range(first, end);
      if (mine + load >= below) break;  // longer ranges only weigh more
      mine += load;
      // The layers left must fit below the bar on the devices still to come.
      long double room = 0;
      for (int d = 0; d < p; ++d)
        if (last_vs[static_cast<size_t>(d)] > vs) room += below - device[static_cast<size_t>(d)];
      if (static_cast<long double>(loads.range(end, n)) < room) {
        counts[static_cast<size_t>(vs)] = end - first;
        self(self, vs + 1, end);
      }
      mine -= load;
    }
  };
  go(go, 0, 0);
  if (out->size() > keep) trim();
}

// One partition planned: its cost, or nothing when the method cannot plan it (memory, say).
struct Planned {
  Partition partition;
  PlanResult plan;
  Ticks cost = 0;
};

std::optional<Planned> plan_one(const LayerCosts& costs, const ProblemInput& base, const Partition& partition,
                                const std::string& method, const PlanOptions& options,
                                const std::vector<double>& device_bytes, std::vector<Diag>* diags) {
  const ProblemInput input = problem_for_partition(costs, partition, base, device_bytes);
  auto problem = build_problem(input, "", diags);
  if (!problem) return std::nullopt;
  auto plan = plan_schedule(*problem, method, diags, options);
  if (!plan) return std::nullopt;
  const Ticks cost = plan->solver.value;
  return Planned{partition, std::move(*plan), cost};
}

// "embedding..h2, h3..h6, head".
std::string ranges_text(const LayerCosts& costs, const Partition& partition) {
  std::string out;
  for (size_t vs = 0; vs < partition.counts.size(); ++vs)
    out += (vs ? ", " : "") + shown_text(partition_range_text(costs, partition, static_cast<int>(vs)));
  return out;
}

// The search with one method: the balanced partition (of the virtual stages' loads) first, then,
// lightest bound first, every partition whose bound is below the best cost so far.
struct SearchOutcome {
  std::vector<Planned> best;  // the best few, cheapest first (ties: the lighter bound, then counts)
  long enumerated = 0, planned = 0, left_out = 0;
  bool cut = false;  // the enumeration stopped at its budget
  std::vector<Diag> first_failure;  // why the balanced partition could not be planned
};

SearchOutcome search(const LayerCosts& costs, const ProblemInput& base, const std::string& method,
                     const PlanOptions& options, const PartitionSearchOptions& so, size_t keep_best) {
  SearchOutcome out;
  const Loads loads(costs);
  const VirtualStageMap map(base.chunks > 1 ? base.placement : interleaved_placement(base.p, 1));
  const auto started = std::chrono::steady_clock::now();
  auto last_said = started;
  auto consider = [&](const Partition& partition) {
    ++out.planned;
    std::vector<Diag> why;
    auto planned = plan_one(costs, base, partition, method, options, so.device_bytes, &why);
    if (!planned) {
      if (out.planned == 1) out.first_failure = why;
      return;
    }
    out.best.push_back(std::move(*planned));
    std::stable_sort(out.best.begin(), out.best.end(), [](const Planned& a, const Planned& b) { return a.cost < b.cost; });
    if (out.best.size() > keep_best) out.best.resize(keep_best);
  };
  auto bar = [&] { return out.best.size() < keep_best ? kNever : out.best.back().cost; };
  const Partition balanced = balanced_partition(costs, map.virtual_stages());
  consider(balanced);
  std::vector<Candidate> candidates;
  // A plan costs m x its busiest load at least: only lighter partitions than best / m can beat it
  // (those kept beside the best are the best found among these).
  const Ticks first_bar = out.best.empty() ? kNever : out.best.front().cost;
  const Ticks below = first_bar == kNever ? kNever : first_bar / base.m + (first_bar % base.m != 0);
  enumerate(loads, map, below, static_cast<size_t>(std::max<long>(1, so.max_plans)), &candidates, &out.left_out,
            &out.cut);
  std::sort(candidates.begin(), candidates.end());
  out.enumerated = static_cast<long>(candidates.size()) + out.left_out -
                   std::count_if(candidates.begin(), candidates.end(),
                                 [&](const Candidate& c) { return c.counts == balanced.counts; });
  for (const Candidate& c : candidates) {
    if (c.counts == balanced.counts) continue;
    const Ticks b = bar();
    if (b != kNever && static_cast<long double>(c.busiest) * base.m >= b) break;  // cannot beat the bar
    consider(Partition{c.counts});
    if (so.progress && std::chrono::steady_clock::now() - last_said > std::chrono::seconds(1)) {
      last_said = std::chrono::steady_clock::now();
      so.progress("partition search: " + std::to_string(out.planned) + " of at most " +
                  std::to_string(candidates.size()) + " partitions planned" +
                  (out.best.empty() ? "" : ", best " + counts_text(out.best.front().partition) + " at " +
                                               format_quanta(out.best.front().cost)));
    }
  }
  return out;
}

// "one chunk: partition 4/4/5/1, activation peak [..] of [..] MiB, period 676.54, wall 684.4": one
// of auto's shapes, as its line says it.
std::string shape_line(const std::string& shape, const PartitionPlan& found, const std::vector<double>& device_bytes) {
  const PlanResult& plan = found.plan;
  std::vector<Diag> unused;
  const auto t = simulate_timeline(plan.schedule, plan.problem, &unused);
  std::string peaks, limits;
  for (int st = 0; st < plan.problem.p; ++st) {
    peaks += (st ? ", " : "") + (t ? format_quanta(t->peak_memory[static_cast<size_t>(st)]) : std::string("?"));
    const auto limit = plan.problem.limit(st);
    limits += (st ? ", " : "") + (limit ? format_quanta(*limit) : std::string("none"));
  }
  std::string line = "auto: " + shape + ": partition " + counts_text(found.partition) + ", activation peak per device [" +
                     peaks + "] " + kMemUnitName +
                     (plan.problem.limited() ? " of limits [" + limits + "]" : std::string(" (no limit)"));
  if (!device_bytes.empty()) line += " (device " + bytes_text(device_bytes[0]) + (device_bytes.size() > 1 ? ", ..." : "") + ")";
  if (plan.iterations)
    line += ", period " + format_quanta(plan.iterations->period) + ", wall " + format_quanta(plan.iterations->wall);
  return line + ", cost " + format_quanta(plan.solver.value);
}

}  // namespace

// auto with --layers: the partition searched for one chunk per stage (auto itself on the best
// few), for the V (the V search) and for 2 chunks interleaved (the interleaved search), where the
// layers give every virtual stage one; the cheapest wins, each shape's line says what it found.
std::optional<PartitionPlan> plan_auto_partitioned(const LayerCosts& costs, const ProblemInput& base,
                                                   std::vector<Diag>* diags, const PlanOptions& options,
                                                   const PartitionSearchOptions& so) {
  struct Shape {
    const char* name;
    const char* method;
    int chunks;
    bool v;
  };
  const int n = static_cast<int>(costs.layers.size());
  std::optional<PartitionPlan> best;
  std::vector<std::string> lines;
  std::vector<Diag> first_failure;
  for (const Shape& shape : {Shape{"one chunk per stage", "auto", 1, false}, Shape{"V (2 chunks)", "heuristic-v", 2, true},
                             Shape{"interleaved (2 chunks)", "heuristic", 2, false}}) {
    if (base.p * shape.chunks > n || (shape.chunks > 1 && base.p < 2)) {
      lines.push_back("auto: " + std::string(shape.name) + ": left out: " +
                      (base.p < 2 ? std::string("one stage has no other to place chunks on")
                                  : std::to_string(n) + " layers, fewer than its " +
                                        std::to_string(base.p * shape.chunks) + " virtual stages"));
      continue;
    }
    ProblemInput shaped = base;
    shaped.chunks = shape.chunks;
    shaped.placement = shape.chunks == 1 ? std::vector<std::vector<int>>{}
                       : shape.v         ? v_shape_placement(base.p)
                                         : interleaved_placement(base.p, shape.chunks);
    std::vector<Diag> why;
    PartitionSearchOptions one = so;
    one.one_shape = true;
    auto found = plan_partitioned(costs, shaped, shape.method, &why, options, one);
    if (!found) {
      if (first_failure.empty()) first_failure = why;
      lines.push_back("auto: " + std::string(shape.name) + ": no partition fits (" +
                      (why.empty() ? std::string("failed") : format_diag(why.back())) + ")");
      continue;
    }
    lines.push_back(shape_line(shape.name, *found, so.device_bytes));
    if (!best || found->plan.solver.value < best->plan.solver.value) best = std::move(found);
  }
  if (!best) {
    add_diag(diags, {"", "", -1, -1, "", "no shape of the layers fits:"});
    for (const auto& l : lines) add_diag(diags, {"", "", -1, -1, "", l});
    return std::nullopt;
  }
  lines.push_back("auto: best over the partitions of each shape: " + counts_text(best->partition) + " layers, " +
                  (best->plan.problem.chunks == 1 ? "one chunk per stage"
                   : best->plan.schedule.placement == v_shape_placement(best->plan.problem.p) ? "V (2 chunks)"
                                                                                             : "interleaved (2 chunks)"));
  // The bound over every shape's partitions is the weakest of theirs.
  best->bound = std::min(best->bound, static_cast<Ticks>(base.m) * partition_load_bound(costs, base.p, 2));
  best->plan.notes.insert(best->plan.notes.begin(), lines.begin(), lines.end());
  return best;
}

std::optional<PartitionShape> partition_shape(const std::string& method, int p, int chunks,
                                              const std::vector<std::vector<int>>& placement, std::string* why) {
  const Method* m = find_method(method);
  if (!m) {
    *why = "unknown method '" + method + "'";
    return std::nullopt;
  }
  // The searches screen every partition with their placement's fast generator (zb-v, 1f1b-i; the
  // heuristic for one chunk) and plan the best few themselves.
  const bool searches = m->runs != Runs::kGenerator;
  const bool any_placement = m->placing == Placing::kAsGiven;
  const auto v = v_shape_placement(p);
  if (m->placing == Placing::kV || (any_placement && chunks == 2 && (placement.empty() || placement == v))) {
    if (chunks > 2 || (!placement.empty() && placement != v)) {
      *why = method + " plans the V placement (2 chunks, stage r holding virtual stages r and 2p-1-r)";
      return std::nullopt;
    }
    return PartitionShape{2, v, searches ? "zb-v" : ""};
  }
  if (m->placing == Placing::kInterleaved || (any_placement && chunks > 1)) {
    if (chunks < 2) {
      *why = interleaves_chunks_text(method);
      return std::nullopt;
    }
    const auto interleaved = interleaved_placement(p, chunks);
    if (!placement.empty() && placement != interleaved) {
      *why = method + " plans the V placement (2 chunks) or the interleaved one (stage s holding s, s+p, ...)";
      return std::nullopt;
    }
    return PartitionShape{chunks, interleaved, searches ? "1f1b-i" : ""};
  }
  if (chunks <= 1) return PartitionShape{1, {}, searches ? "heuristic" : ""};
  *why = method + " with --layers plans one chunk per stage: drop --chunks";
  return std::nullopt;
}

Partition balanced_partition(const LayerCosts& costs, int stages) {
  Partition out;
  lightest_heaviest_range(layer_loads(costs), stages, &out);
  return out;
}

std::optional<PartitionPlan> plan_partitioned(const LayerCosts& costs, const ProblemInput& base, const std::string& method,
                                              std::vector<Diag>* diags, const PlanOptions& options,
                                              const PartitionSearchOptions& so) {
  const int n = static_cast<int>(costs.layers.size());
  if (method == "auto" && !so.fixed && !so.one_shape && base.chunks <= 1 && base.placement.empty())
    return plan_auto_partitioned(costs, base, diags, options, so);
  std::string why_not;
  const auto shape = partition_shape(method, base.p, base.chunks, base.placement, &why_not);
  if (!shape) {
    add_diag(diags, {"", "", -1, -1, "", why_not});
    return std::nullopt;
  }
  ProblemInput shaped = base;
  shaped.chunks = shape->chunks;
  shaped.placement = shape->placement;
  const int virtual_stages = base.p * shape->chunks;
  if (virtual_stages > n) {
    add_diag(diags, {"", "", -1, -1, "",
                     "more " + std::string(shape->chunks > 1 ? "virtual stages" : "stages") + " than layers: " +
                         (shape->chunks > 1 ? "p x chunks = " + std::to_string(base.p) + " x " +
                                                  std::to_string(shape->chunks) + " = "
                                            : "p = ") +
                         std::to_string(virtual_stages) + ", but the layer file has " + std::to_string(n) +
                         " layers; every " + (shape->chunks > 1 ? "virtual stage" : "stage") + " needs at least one"});
    return std::nullopt;
  }
  PlanOptions planning = options;
  planning.single_chunk = shape->chunks == 1;
  const Ticks bound = static_cast<Ticks>(base.m) * partition_load_bound(costs, base.p, shape->chunks);
  if (so.fixed) {
    if (std::string why = check_partition(costs, *so.fixed, virtual_stages); !why.empty()) {
      add_diag(diags, {"", "", -1, -1, "", "--partition " + counts_text(*so.fixed) + " " + why});
      return std::nullopt;
    }
    auto planned = plan_one(costs, shaped, *so.fixed, method, planning, so.device_bytes, diags);
    if (!planned) return std::nullopt;
    PartitionPlan out{std::move(planned->plan), *so.fixed, 1, 1, bound};
    out.plan.notes.insert(out.plan.notes.begin(), "partition: " + counts_text(out.partition) + " layers (" +
                                                      ranges_text(costs, out.partition) + "), as --partition gives; no "
                                                      "partition's plan costs less than " + format_quanta(out.bound));
    return out;
  }
  // auto, the ILPs and the searches over chunks cost seconds a plan: screen every partition with a
  // quick method of the same placement, then plan the best few with the method itself.
  const std::string screen = shape->screen.empty() ? "" : shape->chunks == 1 ? so.screen : shape->screen;
  bool screened = !screen.empty();
  const size_t keep = static_cast<size_t>(std::max(1, so.refine));
  SearchOutcome outcome = search(costs, shaped, screened ? screen : method, planning, so, screened ? keep : 1);
  if (outcome.best.empty() && screened) {
    // Nothing fits as the screen plans it (its memory, say): the method itself, unscreened.
    screened = false;
    outcome = search(costs, shaped, method, planning, so, 1);
  }
  if (outcome.best.empty()) {
    add_diag(diags, {"", "", -1, -1, "",
                     "no partition of the " + std::to_string(n) + " layers over " + std::to_string(virtual_stages) +
                         (shape->chunks > 1 ? " virtual" : "") + " stages could be planned with " + method +
                         "; the balanced one (" + counts_text(balanced_partition(costs, virtual_stages)) +
                         " layers) failed with:"});
    for (const auto& d : outcome.first_failure) add_diag(diags, d);
    return std::nullopt;
  }
  std::optional<Planned> winner;
  long planned = outcome.planned;
  if (screened) {
    for (const Planned& c : outcome.best) {
      ++planned;
      std::vector<Diag> why;
      auto refined = plan_one(costs, shaped, c.partition, method, planning, so.device_bytes, &why);
      if (refined && (!winner || refined->cost < winner->cost)) winner = std::move(refined);
    }
    if (!winner) winner = std::move(outcome.best.front());  // the screen's plan stands
  } else {
    winner = std::move(outcome.best.front());
  }
  PartitionPlan out{std::move(winner->plan), winner->partition, outcome.enumerated, planned, bound};
  const std::string layers = ranges_text(costs, out.partition);
  out.plan.notes.insert(out.plan.notes.begin(),
                        "partition: " + counts_text(out.partition) + " layers (" + layers + "), the best of " +
                            std::to_string(planned) + " planned: the balanced one, then, lightest bound first, of the " +
                            std::to_string(outcome.enumerated) + " others whose bound could beat it, those that still could" +
                            (outcome.left_out ? " (" + std::to_string(outcome.left_out) + " heaviest left out past " +
                                                        std::to_string(so.max_plans) + ")"
                                              : "") +
                            (outcome.cut ? " (the enumeration stopped after " + std::to_string(kMaxVisits) +
                                               " ranges tried: the winner is the best found, the bound still holds)"
                                         : "") +
                            (screened ? "; screened with " + screen + ", the best " + std::to_string(outcome.best.size()) +
                                            " planned with " + method
                                      : "") +
                            "; no partition's plan costs less than " + format_quanta(out.bound));
  return out;
}

}  // namespace zbpp
