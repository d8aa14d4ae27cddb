// Partitions of layers into virtual stages (partition.h).
#include "core/partition.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/ir.h"  // VirtualStageMap
#include "core/json_text.h"

namespace zbpp {

namespace {

Ticks ticks_of(double ms) { return to_quanta(ms).value_or(0); }  // checked in range when read
Mem mem_of(double bytes) { return to_quanta(bytes / kBytesPerMemUnit).value_or(0); }

}  // namespace

std::vector<int> Partition::firsts() const {
  std::vector<int> out;
  int at = 0;
  for (int c : counts) {
    out.push_back(at);
    at += c;
  }
  return out;
}

StageCosts stage_costs(const LayerCosts& costs, const Partition& partition) {
  StageCosts out;
  const auto firsts = partition.firsts();
  for (size_t vs = 0; vs < partition.counts.size(); ++vs) {
    Ticks f = 0, b = 0, w = 0;
    Mem mb = 0, mw = 0;
    double fixed = 0;
    for (int l = firsts[vs]; l < firsts[vs] + partition.counts[vs]; ++l) {
      const LayerCost& layer = costs.layers[static_cast<size_t>(l)];
      f += ticks_of(layer.t_f), b += ticks_of(layer.t_b), w += ticks_of(layer.t_w);
      mb += mem_of(layer.activation_bytes), mw += mem_of(layer.activation_bytes_w);
      fixed += layer.static_bytes();
    }
    // The problem asks for T_F, T_B > 0; an embedding alone has no input gradient to compute.
    f = std::max<Ticks>(f, 1), b = std::max<Ticks>(b, 1);
    out.t_f.push_back(f), out.t_b.push_back(b), out.t_w.push_back(w);
    out.mem_b.push_back(mb), out.mem_w.push_back(mw), out.static_bytes.push_back(fixed);
  }
  return out;
}

ProblemInput problem_for_partition(const LayerCosts& costs, const Partition& partition, const ProblemInput& base,
                                   const std::vector<double>& device_bytes) {
  const StageCosts sums = stage_costs(costs, partition);
  ProblemInput in = base;
  in.chunks = std::max(1, base.chunks);
  in.p = static_cast<int>(partition.counts.size()) / in.chunks;
  if (in.chunks == 1) in.placement.clear();
  else if (in.placement.empty()) in.placement = interleaved_placement(in.p, in.chunks);
  auto values = [](const std::vector<std::int64_t>& q) {
    std::vector<double> v;
    for (auto x : q) v.push_back(from_quanta(x));
    return v;
  };
  // One value per virtual stage (build_problem places them with the placement).
  in.t_f = values(sums.t_f), in.t_b = values(sums.t_b), in.t_w = values(sums.t_w);
  in.mem_b = values(sums.mem_b), in.mem_w = values(sums.mem_w);
  if (!device_bytes.empty()) {
    in.mem_limit.clear();
    in.stage_mem_limits.clear();
    const std::vector<double> fixed = static_bytes_per_stage(sums, in);
    for (int s = 0; s < in.p; ++s) {
      const double device = device_bytes.size() == 1 ? device_bytes[0] : device_bytes.at(static_cast<size_t>(s));
      in.stage_mem_limits.push_back(from_quanta(mem_of(device - fixed[static_cast<size_t>(s)])));
    }
  }
  return in;
}

std::vector<double> static_bytes_per_stage(const StageCosts& sums, const ProblemInput& shape) {
  std::vector<double> out(static_cast<size_t>(shape.p), 0.0);
  for (int s = 0; s < shape.p; ++s)
    for (int c = 0; c < shape.chunks; ++c) {
      const int vs = shape.chunks == 1 ? s : shape.placement[static_cast<size_t>(s)][static_cast<size_t>(c)];
      out[static_cast<size_t>(s)] += sums.static_bytes[static_cast<size_t>(vs)];
    }
  return out;
}

std::int64_t lightest_heaviest_range(const std::vector<std::int64_t>& weights, int stages, Partition* out) {
  const int n = static_cast<int>(weights.size());
  if (stages < 1 || stages > n) return 0;
  // The fewest ranges of at most `cap` each, greedily from the left: feasible when they are at most
  // `stages` (a range can always be split further, each piece still within the cap).
  auto ranges_within = [&](std::int64_t cap, std::vector<int>* counts) {
    if (counts) counts->clear();
    int ranges = 0, in_range = 0;
    std::int64_t sum = 0;
    for (std::int64_t w : weights) {
      if (in_range > 0 && sum + w > cap) {
        if (counts) counts->push_back(in_range);
        ++ranges, sum = 0, in_range = 0;
      }
      sum += w, ++in_range;
    }
    if (counts) counts->push_back(in_range);
    return ranges + 1;
  };
  std::int64_t lo = *std::max_element(weights.begin(), weights.end()), hi = 0;
  for (std::int64_t w : weights) hi += w;
  while (lo < hi) {  // the least cap the greedy fits in `stages` ranges
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (ranges_within(mid, nullptr) <= stages) hi = mid;
    else lo = mid + 1;
  }
  if (out) {
    ranges_within(lo, &out->counts);
    // Fewer ranges than stages: split the first range of several layers until there are enough.
    while (static_cast<int>(out->counts.size()) < stages) {
      auto at = std::find_if(out->counts.begin(), out->counts.end(), [](int c) { return c > 1; });
      const int first = *at - 1;
      *at = 1;
      out->counts.insert(at + 1, first);
    }
  }
  return lo;
}

namespace {

// What any partition of `weights` into `stages` devices puts on its busiest device at least when a
// device's ranges need not be neighbours (V, interleaved): an even share of the whole, or the
// heaviest single layer.
std::int64_t even_share_or_heaviest(const std::vector<std::int64_t>& weights, int stages) {
  std::int64_t total = 0, heaviest = 0;
  for (std::int64_t w : weights) total += w, heaviest = std::max(heaviest, w);
  return std::max(heaviest, (total + stages - 1) / stages);
}

}  // namespace

std::pair<double, Partition> least_device_memory(const LayerCosts& costs, int stages, int chunks) {
  // Each layer's static bytes and one microbatch's M_B, in whole bytes.
  std::vector<std::int64_t> need;
  for (const LayerCost& layer : costs.layers)
    need.push_back(static_cast<std::int64_t>(std::ceil(layer.static_bytes() + layer.activation_bytes)));
  Partition out;
  if (chunks > 1) {
    return {static_cast<double>(even_share_or_heaviest(need, stages)), out};
  }
  const std::int64_t least = lightest_heaviest_range(need, stages, &out);
  return {static_cast<double>(least), out};
}

std::vector<std::int64_t> layer_loads(const LayerCosts& costs) {
  std::vector<std::int64_t> loads;
  for (const LayerCost& layer : costs.layers) loads.push_back(ticks_of(layer.t_f) + ticks_of(layer.t_b) + ticks_of(layer.t_w));
  return loads;
}

Ticks best_partition_load(const LayerCosts& costs, int stages) {
  return lightest_heaviest_range(layer_loads(costs), stages, nullptr);
}

Ticks partition_load_bound(const LayerCosts& costs, int stages, int chunks) {
  if (chunks <= 1) return best_partition_load(costs, stages);
  return even_share_or_heaviest(layer_loads(costs), stages);
}

std::string check_partition(const LayerCosts& costs, const Partition& partition, int stages) {
  const int n = static_cast<int>(costs.layers.size());
  if (static_cast<int>(partition.counts.size()) != stages)
    return "gives " + std::to_string(partition.counts.size()) + " layer counts for " + std::to_string(stages) +
           " virtual stages";
  long sum = 0;
  for (size_t vs = 0; vs < partition.counts.size(); ++vs) {
    if (partition.counts[vs] < 1) return "virtual stage " + std::to_string(vs) + " has no layers";
    sum += partition.counts[vs];
  }
  if (sum != n) return "covers " + std::to_string(sum) + " layers, but there are " + std::to_string(n);
  return "";
}

Ticks partition_bound(const LayerCosts& costs, const Problem& problem) {
  return static_cast<Ticks>(problem.m) * partition_load_bound(costs, problem.p, problem.chunks);
}

nlohmann::json partition_record_to_json(const PartitionRecord& record, Ticks bound, Ticks cost) {
  nlohmann::json ranges = nlohmann::json::array();
  for (size_t vs = 0; vs < record.partition.counts.size(); ++vs)
    ranges.push_back(partition_range_text(record.costs, record.partition, static_cast<int>(vs)));
  nlohmann::json j = {{"counts", record.partition.counts},
                      {"ranges", ranges},
                      {"bound", from_quanta(bound)},
                      {"gap", cost > 0 ? static_cast<double>(cost - bound) / static_cast<double>(cost) : 0.0},
                      {"layers", layer_costs_to_json(record.costs)}};
  if (!record.device_bytes.empty()) j["device_memory"] = record.device_bytes;
  return j;
}

std::optional<PartitionRecord> partition_record_from_json(const nlohmann::json& j, const std::string& file,
                                                         const std::string& pointer, std::vector<Diag>* diags) {
  auto error = [&](const std::string& where, const std::string& msg) { add_diag(diags, {file, where, -1, -1, "", msg}); };
  if (!j.is_object()) {
    error(pointer, "expected an object {counts, ranges, bound, gap, layers}, got " + json_excerpt(j));
    return std::nullopt;
  }
  bool ok = true;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "counts" && it.key() != "ranges" && it.key() != "bound" && it.key() != "gap" && it.key() != "layers" &&
        it.key() != "device_memory") {
      error(pointer + "/" + it.key(), "unknown field '" + it.key() + "'");
      ok = false;
    }
  for (const char* required : {"counts", "layers"})
    if (!j.contains(required)) {
      error(pointer, std::string("missing required field '") + required + "'");
      ok = false;
    }
  if (!ok) return std::nullopt;
  PartitionRecord out;
  const auto& counts = j["counts"];
  if (!counts.is_array() || counts.empty()) {
    error(pointer + "/counts", "expected a list of layer counts, one per virtual stage, got " + json_excerpt(counts));
    ok = false;
  } else {
    for (size_t i = 0; i < counts.size(); ++i) {
      auto c = json_integer(counts[i], 1, 1'000'000);
      if (!c) {
        error(pointer + "/counts/" + std::to_string(i), "expected a layer count 1..1000000, got " + json_excerpt(counts[i]));
        ok = false;
      } else {
        out.partition.counts.push_back(static_cast<int>(*c));
      }
    }
  }
  if (j.contains("ranges")) {
    if (!j["ranges"].is_array() || !std::all_of(j["ranges"].begin(), j["ranges"].end(), [](const auto& v) { return v.is_string(); })) {
      error(pointer + "/ranges", "expected a list of layer names, one per virtual stage, got " + json_excerpt(j["ranges"]));
      ok = false;
    }
  }
  for (auto [field, target] : {std::pair{"bound", &out.bound}, {"gap", &out.gap}}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_number() || !(j[field].get<double>() >= 0) || j[field].get<double>() > 1e12) {
      error(pointer + "/" + field, "expected a non-negative number, got " + json_excerpt(j[field]));
      ok = false;
    } else {
      *target = j[field].get<double>();
    }
  }
  if (j.contains("device_memory")) {
    const auto& v = j["device_memory"];
    if (!v.is_array() || v.empty() ||
        !std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number() && x.template get<double>() > 0 && x.template get<double>() <= 1e18; })) {
      error(pointer + "/device_memory", "expected a list of device memory sizes in bytes, one per stage, got " + json_excerpt(v));
      ok = false;
    } else {
      for (const auto& x : v) out.device_bytes.push_back(x.get<double>());
    }
  }
  auto costs = layer_costs_from_json(j["layers"], file, pointer + "/layers", diags);
  if (!costs || !ok) return std::nullopt;
  out.costs = std::move(*costs);
  // The ranges are the layers' names: checked here, where both are at hand.
  if (j.contains("ranges") && check_partition(out.costs, out.partition, static_cast<int>(out.partition.counts.size())).empty()) {
    const auto& ranges = j["ranges"];
    for (size_t vs = 0; vs < out.partition.counts.size(); ++vs) {
      const std::string want = partition_range_text(out.costs, out.partition, static_cast<int>(vs));
      if (vs >= ranges.size() || ranges[vs] != want) {
        error(pointer + "/ranges/" + std::to_string(vs), "recorded " + (vs < ranges.size() ? json_excerpt(ranges[vs]) : std::string("nothing")) +
                                                            ", but counts give \"" + want + "\"");
        return std::nullopt;
      }
    }
  }
  return out;
}

std::vector<Diag> check_partition_record(const PartitionRecord& record, const Problem& problem, Ticks cost,
                                         const std::string& path) {
  std::vector<Diag> out;
  auto say = [&](const std::string& pointer, const std::string& msg) { out.push_back({path, pointer, -1, -1, "", msg}); };
  if (problem.chunks > 1 && problem.placement.empty()) {
    say("/problem/placement", "a partition into " + std::to_string(problem.virtual_stages()) +
                                  " virtual stages needs the problem's placement (which stage runs each)");
    return out;
  }
  if (std::string why = check_partition(record.costs, record.partition, problem.virtual_stages()); !why.empty()) {
    say("/partition/counts", "the partition " + why);
    return out;
  }
  const StageCosts sums = stage_costs(record.costs, record.partition);
  const VirtualStageMap map(problem.chunks > 1 ? problem.placement : interleaved_placement(problem.p, 1));
  using Figure = std::int64_t (Problem::*)(int, int) const;
  struct Field {
    const char* name;
    Figure problem;
    const std::vector<std::int64_t>& layers;
  };
  for (const Field& f : {Field{"t_f", &Problem::f_time, sums.t_f}, Field{"t_b", &Problem::b_time, sums.t_b},
                         Field{"t_w", &Problem::w_time, sums.t_w}, Field{"mem_b", &Problem::b_mem, sums.mem_b},
                         Field{"mem_w", &Problem::w_mem, sums.mem_w}})
    for (int vs = 0; vs < problem.virtual_stages(); ++vs) {
      const std::int64_t planned = (problem.*f.problem)(map.stage_of[vs], map.chunk_of[vs]);
      if (planned != f.layers[static_cast<size_t>(vs)]) {
        say(std::string("/problem/") + f.name,
            std::string(f.name) + " of " + (problem.chunks > 1 ? "virtual stage " : "stage ") + std::to_string(vs) +
                " is " + format_quanta(planned) + ", but its layers (" +
                partition_range_text(record.costs, record.partition, vs) + ") sum to " +
                format_quanta(f.layers[static_cast<size_t>(vs)]) + " (the file was edited after it was written: plan it again)");
        return out;
      }
    }
  if (!record.device_bytes.empty()) {
    if (record.device_bytes.size() != static_cast<size_t>(problem.p)) {
      say("/partition/device_memory", "gives " + std::to_string(record.device_bytes.size()) + " sizes for " +
                                          std::to_string(problem.p) + " stages");
      return out;
    }
    // Each stage's limit: its device's bytes less its layers' static bytes, in MiB quanta.
    ProblemInput shape;
    shape.chunks = problem.chunks;
    shape.placement = problem.placement;
    const ProblemInput expected = problem_for_partition(record.costs, record.partition, shape, record.device_bytes);
    const std::vector<double> fixed = static_bytes_per_stage(sums, expected);
    for (int st = 0; st < problem.p; ++st) {
      const auto want = to_quanta(expected.stage_mem_limits[static_cast<size_t>(st)]);
      if (problem.limit(st) != want) {
        say("/problem/mem_limit", "stage " + std::to_string(st) + "'s memory limit is " +
                                      (problem.limit(st) ? format_quanta(*problem.limit(st)) : std::string("none")) +
                                      ", but its device's " + bytes_text(record.device_bytes[static_cast<size_t>(st)]) +
                                      " less its layers' static " + bytes_text(fixed[static_cast<size_t>(st)]) +
                                      " leave " + format_quanta(want.value_or(0)) + " MiB (the file was edited after it was written: plan it again)");
        return out;
      }
    }
  }
  const Ticks bound = partition_bound(record.costs, problem);
  if (record.bound && to_quanta(*record.bound) != bound)
    say("/partition/bound", "recorded " + format_quanta(to_quanta(*record.bound).value_or(0)) + ", recomputed " + format_quanta(bound) +
                                " (the file was edited after it was written: plan it again)");
  const double gap = cost > 0 ? static_cast<double>(cost - bound) / static_cast<double>(cost) : 0.0;
  if (record.gap && !(std::fabs(*record.gap - gap) <= 1e-9))
    say("/partition/gap", "recorded " + nlohmann::json(*record.gap).dump() + ", recomputed " + nlohmann::json(gap).dump() +
                              " (the file was edited after it was written: plan it again)");
  return out;
}

std::string counts_text(const Partition& partition) {
  std::string s;
  for (size_t i = 0; i < partition.counts.size(); ++i) s += (i ? "/" : "") + std::to_string(partition.counts[i]);
  return s;
}

std::string partition_range_text(const LayerCosts& costs, const Partition& partition, int vs) {
  const int first = partition.firsts()[static_cast<size_t>(vs)], count = partition.counts[static_cast<size_t>(vs)];
  const std::string& a = costs.layers[static_cast<size_t>(first)].name;
  if (count == 1) return a;
  return a + ".." + costs.layers[static_cast<size_t>(first + count - 1)].name;
}

std::string megatron_layout(const LayerCosts& costs, const Partition& partition, std::string* err) {
  std::string out;
  const auto firsts = partition.firsts();
  for (size_t vs = 0; vs < partition.counts.size(); ++vs) {
    if (vs) out += "|";
    int blocks = 0;
    auto flush = [&] {
      if (blocks == 1) out += "t";
      if (blocks > 1) out += "t*" + std::to_string(blocks);
      blocks = 0;
    };
    for (int l = firsts[vs]; l < firsts[vs] + partition.counts[vs]; ++l) {
      const LayerCost& layer = costs.layers[static_cast<size_t>(l)];
      switch (layer.kind) {
        case LayerKind::kBlock: ++blocks; break;
        case LayerKind::kEmbedding: flush(), out += "E"; break;
        case LayerKind::kHead: flush(), out += "L"; break;
        case LayerKind::kOther:
          *err = "layer " + std::to_string(l) + " ('" + layer.name +
                 "') is of kind other: Megatron's layout names only embedding (E), blocks (t) and the loss (L)";
          return "";
      }
    }
    flush();
  }
  return out;
}

}  // namespace zbpp
