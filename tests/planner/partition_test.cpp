// Layer costs (core/layers.h), partitions (core/partition.h) and the partition search
// (planner/partition.h): the search's pick equals planning every contiguous partition with the
// same method; the bound over all partitions holds; the file records the partition and every
// reader recomputes it.
#include "planner/partition.h"

#include <algorithm>
#include <random>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/schedule_json.h"

namespace zbpp {
namespace {

// n layers of random costs (an embedding, blocks, a head that may be heavy), in ms and bytes.
LayerCosts random_layers(int n, std::mt19937& rng) {
  std::uniform_int_distribution<int> ms(1, 40), head(1, 120);
  LayerCosts costs;
  for (int l = 0; l < n; ++l) {
    LayerCost c;
    c.kind = l == 0 ? LayerKind::kEmbedding : l == n - 1 ? LayerKind::kHead : LayerKind::kBlock;
    c.name = l == 0 ? "embedding" : l == n - 1 ? "head" : "h" + std::to_string(l - 1);
    const int scale = l == n - 1 ? head(rng) : ms(rng);
    c.t_f = scale * 0.25, c.t_b = (ms(rng) + scale) * 0.125, c.t_w = ms(rng) * 0.1;
    c.activation_bytes = 1048576.0 * (1 + ms(rng) % 4);
    c.activation_bytes_w = c.activation_bytes / 2;
    costs.layers.push_back(c);
  }
  return costs;
}

// Every partition of n layers into p non-empty ranges.
void every_partition(int n, int p, std::vector<int>* counts, const std::function<void(const Partition&)>& visit) {
  if (static_cast<int>(counts->size()) == p - 1) {
    counts->push_back(n);
    visit(Partition{*counts});
    counts->pop_back();
    return;
  }
  const int rest = p - static_cast<int>(counts->size()) - 1;
  for (int c = 1; c <= n - rest; ++c) {
    counts->push_back(c);
    every_partition(n - c, p, counts, visit);
    counts->pop_back();
  }
}

// Plans `method` on every partition of the layers into `stages` (virtual) stages of `shaped`'s
// shape: the search's pick costs what the best of them costs, and none beats its bound.
void check_against_every_partition(const LayerCosts& costs, const ProblemInput& shaped, int stages,
                                   const std::string& method, const PlanOptions& options, const PartitionPlan& found) {
  Ticks best = -1;
  long all = 0;
  std::vector<int> counts;
  every_partition(static_cast<int>(costs.layers.size()), stages, &counts, [&](const Partition& partition) {
    ++all;
    std::vector<Diag> unused;
    auto problem = build_problem(problem_for_partition(costs, partition, shaped), "", &unused);
    REQUIRE(problem);
    auto plan = plan_schedule(*problem, method, &unused, options);
    if (plan && (best < 0 || plan->solver.value < best)) best = plan->solver.value;
    if (plan) CHECK(plan->solver.value >= found.bound);  // no partition's plan beats the bound over all
  });
  CHECK(found.plan.solver.value == best);
  CHECK(found.planned <= all);
}

// What a reader of the schedule document finds: "" for a good file, else the located diagnostics.
std::string findings_of(const nlohmann::json& doc) {
  std::vector<Diag> d;
  auto file = schedule_from_json(doc, "s.json", &d);
  if (!file) return format_diags(d);
  check_schedule_file(*file, "s.json", &d);
  return format_diags(d);
}

PlanOptions lowered_for_period() {
  PlanOptions o;
  o.lowerings = {LowerOptions{}};
  return o;
}

}  // namespace

TEST_CASE("partition: the search's pick costs what the best of every partition costs, with the same method") {
  std::mt19937 rng(7);
  int cases = 0;
  for (const std::string method : {"1f1b", "zb-h1", "heuristic"})
    for (int trial = 0; trial < 6; ++trial) {
      const int n = 4 + static_cast<int>(rng() % 9);  // up to 12 layers
      const int p = 2 + static_cast<int>(rng() % 3);  // 2..4 stages
      const LayerCosts costs = random_layers(n, rng);
      ProblemInput base;
      base.p = p;
      base.m = p + static_cast<int>(rng() % 6);
      base.t_comm = {(rng() % 2) * 0.5};
      if (method == "heuristic") base.mem_limit = "2p";
      std::vector<Diag> diags;
      // A limit like 2p means the balanced partition's MiB for all of them, as zbplan sets it.
      if (!base.mem_limit.empty()) {
        auto balanced = build_problem(problem_for_partition(costs, balanced_partition(costs, p), base), "", &diags);
        REQUIRE(balanced);
        base.mem_limit = format_quanta(*balanced->mem_limit);
      }
      const PlanOptions options = lowered_for_period();
      auto found = plan_partitioned(costs, base, method, &diags, options);
      INFO(method << " n=" << n << " p=" << p << " m=" << base.m << ": " << format_diags(diags));
      REQUIRE(found);
      check_against_every_partition(costs, base, p, method, options, *found);
      ++cases;
    }
  CHECK(cases == 18);
}

TEST_CASE("partition: V and interleaved placements: the pick costs what the best of every partition into virtual stages costs") {
  std::mt19937 rng(19);
  int cases = 0;
  struct Shape {
    std::string method;
    int chunks;
  };
  for (const Shape& shape : {Shape{"zb-v", 1}, Shape{"v-half", 2}, Shape{"1f1b-i", 2}, Shape{"1f1b-i", 3}})
    for (int trial = 0; trial < 5; ++trial) {
      const int p = 2 + static_cast<int>(rng() % (shape.chunks == 3 ? 2 : 3));  // 2..4 stages (2..3 with 3 chunks)
      const int stages = p * std::max(2, shape.chunks);
      const int n = stages + static_cast<int>(rng() % std::max(1, 13 - stages));  // up to 12 layers
      const LayerCosts costs = random_layers(n, rng);
      ProblemInput base;
      base.p = p;
      base.chunks = shape.chunks;
      base.m = shape.method == "1f1b-i" ? p * (1 + static_cast<int>(rng() % 3)) : p + static_cast<int>(rng() % 6);
      base.t_comm = {(rng() % 2) * 0.5};
      const PlanOptions options = lowered_for_period();
      std::vector<Diag> diags;
      auto found = plan_partitioned(costs, base, shape.method, &diags, options);
      INFO(shape.method << " chunks=" << shape.chunks << " n=" << n << " p=" << p << " m=" << base.m << ": " << format_diags(diags));
      REQUIRE(found);
      REQUIRE(static_cast<int>(found->partition.counts.size()) == stages);
      REQUIRE(found->plan.problem.chunks == stages / p);
      // The planned problem's figures are the virtual stages' sums, each on the stage the placement gives it.
      const StageCosts sums = stage_costs(costs, found->partition);
      const VirtualStageMap map(found->plan.problem.placement);
      for (int vs = 0; vs < stages; ++vs) {
        CHECK(found->plan.problem.f_time(map.stage_of[vs], map.chunk_of[vs]) == sums.t_f[static_cast<size_t>(vs)]);
        CHECK(found->plan.problem.b_mem(map.stage_of[vs], map.chunk_of[vs]) == sums.mem_b[static_cast<size_t>(vs)]);
      }
      ProblemInput shaped = base;
      shaped.chunks = stages / p;
      shaped.placement = found->plan.problem.placement;
      check_against_every_partition(costs, shaped, stages, shape.method, options, *found);
      ++cases;
    }
  CHECK(cases == 20);
}

TEST_CASE("partition: a V partition's file reads back, and an edit of a virtual stage's figure is caught there") {
  std::mt19937 rng(5);
  const LayerCosts costs = random_layers(10, rng);
  ProblemInput base;
  base.p = 2;
  base.m = 6;
  std::vector<Diag> diags;
  PartitionSearchOptions options;
  options.device_bytes = {512.0 * 1048576};
  auto found = plan_partitioned(costs, base, "zb-v", &diags, lowered_for_period(), options);
  INFO(format_diags(diags));
  REQUIRE(found);
  const PlanResult& plan = found->plan;
  REQUIRE(plan.iterations);
  const PartitionRecord record{costs, found->partition, {512.0 * 1048576, 512.0 * 1048576}, std::nullopt, std::nullopt};
  const auto j = nlohmann::json::parse(schedule_to_json_text(plan.schedule, plan.problem, plan.iterations->first,
                                                             &*plan.iterations, "period", -1, &plan.solver, &record));
  CHECK(j["problem"]["t_f"].size() == 4);  // one per virtual stage
  CHECK(j["partition"]["counts"].size() == 4);
  CHECK(findings_of(j) == "");
  {
    std::vector<Diag> d;
    auto file = schedule_from_json(j, "s.json", &d);
    REQUIRE(file);
    CHECK(problem_to_json(file->problem) == j["problem"]);  // read back exactly
  }
  auto edited = j;
  edited["problem"]["t_f"][3] = edited["problem"]["t_f"][3].get<double>() + 1;
  CHECK(findings_of(edited).find("/problem/t_f: t_f of virtual stage 3 is ") != std::string::npos);
}

TEST_CASE("partition: auto searches one chunk per stage, the V and 2 chunks interleaved, and takes the cheapest") {
  std::mt19937 rng(31);
  for (int trial = 0; trial < 4; ++trial) {
    const int p = 2 + trial % 2, n = 2 * p + 2 + static_cast<int>(rng() % 4);
    const LayerCosts costs = random_layers(n, rng);
    ProblemInput base;
    base.p = p;
    base.m = 2 * p;
    std::vector<Diag> diags;
    const PlanOptions options = lowered_for_period();
    auto found = plan_partitioned(costs, base, "auto", &diags, options);
    INFO("trial " << trial << ": " << format_diags(diags));
    REQUIRE(found);
    const auto& notes = found->plan.notes;
    for (const char* shape : {"auto: one chunk per stage: partition ", "auto: V (2 chunks): partition ",
                              "auto: interleaved (2 chunks): partition "})
      CHECK(std::count_if(notes.begin(), notes.end(), [&](const std::string& n) { return n.rfind(shape, 0) == 0; }) == 1);
    // Each shape searched alone: auto's plan is the cheapest of them.
    Ticks cheapest = -1;
    for (auto [method, chunks, placement] :
         {std::tuple{std::string("auto"), 1, std::vector<std::vector<int>>{}},
          std::tuple{std::string("heuristic-v"), 2, v_shape_placement(p)},
          std::tuple{std::string("heuristic"), 2, interleaved_placement(p, 2)}}) {
      ProblemInput shaped = base;
      shaped.chunks = chunks;
      shaped.placement = placement;
      PartitionSearchOptions alone;
      alone.one_shape = true;
      auto one = plan_partitioned(costs, shaped, method, &diags, options, alone);
      REQUIRE(one);
      if (cheapest < 0 || one->plan.solver.value < cheapest) cheapest = one->plan.solver.value;
    }
    CHECK(found->plan.solver.value == cheapest);
  }
}

TEST_CASE("partition: the balanced partition minimises the busiest stage, as best_partition_load says") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 10), p = 1 + static_cast<int>(rng() % n);
    const LayerCosts costs = random_layers(n, rng);
    Ticks best = -1;
    std::vector<int> counts;
    auto busiest = [&](const Partition& partition) {
      const StageCosts s = stage_costs(costs, partition);
      Ticks most = 0;
      for (size_t i = 0; i < s.t_f.size(); ++i) most = std::max(most, s.t_f[i] + s.t_b[i] + s.t_w[i]);
      return most;
    };
    every_partition(n, p, &counts, [&](const Partition& partition) {
      const Ticks b = busiest(partition);
      if (best < 0 || b < best) best = b;
    });
    // stage_costs lifts a stage's zero T_B to one tick (an embedding alone): the DP may read a tick less.
    CHECK(best_partition_load(costs, p) <= best);
    CHECK(best_partition_load(costs, p) >= best - 2 * p);
    CHECK(busiest(balanced_partition(costs, p)) == best);
  }
}

TEST_CASE("partition: the file records the layers and the partition, and readers recompute them") {
  std::mt19937 rng(3);
  const LayerCosts costs = random_layers(8, rng);
  ProblemInput base;
  base.p = 3;
  base.m = 6;
  std::vector<Diag> diags;
  auto found = plan_partitioned(costs, base, "zb-h1", &diags, lowered_for_period());
  REQUIRE(found);
  const PlanResult& plan = found->plan;
  const PartitionRecord record{costs, found->partition, {}, std::nullopt, std::nullopt};
  REQUIRE(plan.iterations);
  const std::string text = schedule_to_json_text(plan.schedule, plan.problem, plan.iterations->first, &*plan.iterations,
                                                 "period", -1, &plan.solver, &record);
  auto j = nlohmann::json::parse(text);
  CHECK(j["partition"]["counts"] == found->partition.counts);
  CHECK(j["partition"]["bound"] == from_quanta(found->bound));
  CHECK(findings_of(j) == "");
  // What one program writes, every program reads back: the layers exactly.
  {
    std::vector<Diag> d;
    auto file = schedule_from_json(j, "s.json", &d);
    REQUIRE(file);
    REQUIRE(file->partition);
    CHECK(layer_costs_to_json(file->partition->costs) == layer_costs_to_json(costs));
    CHECK(file->partition->partition.counts == found->partition.counts);
  }
  // Edits are caught, each at its place.
  auto edited = j;
  edited["partition"]["layers"]["layers"][0]["t_f"] = costs.layers[0].t_f + 1;
  CHECK(findings_of(edited).find("s.json: /problem/t_f: t_f of stage 0 is ") == 0);
  edited = j;
  edited["partition"]["bound"] = 1;
  INFO(findings_of(edited));
  CHECK(findings_of(edited).find("s.json: /partition/bound: recorded 1, recomputed ") == 0);
  edited = j;
  edited["partition"]["gap"] = 0.5;
  CHECK(findings_of(edited).find("s.json: /partition/gap: recorded 0.5, recomputed ") == 0);
  edited = j;
  std::swap(edited["partition"]["counts"][0], edited["partition"]["counts"][1]);
  if (edited["partition"]["counts"] != j["partition"]["counts"]) CHECK(findings_of(edited).find("/partition/ranges/0") != std::string::npos);
  edited = j;
  edited["partition"]["counts"].push_back(1);
  CHECK(findings_of(edited).find("/partition/counts: the partition gives 4 layer counts for 3 virtual stages") != std::string::npos);
}

TEST_CASE("layers: a layer-cost file's errors are located and say what is expected") {
  auto errors = [](const std::string& text) {
    std::vector<Diag> d;
    auto costs = layer_costs_from_json(nlohmann::json::parse(text), "l.json", "", &d);
    CHECK(!costs);
    return format_diags(d);
  };
  CHECK(errors(R"({"layers": [{"name": "a", "t_f": 1, "t_b": 1, "t_w": 1}]})") ==
        "l.json: /format: expected \"zbpp-layers-1\" (a layer-cost file, schema/layers.schema.json), got nothing\n");
  CHECK(errors(R"({"format": "zbpp-layers-1", "layers": []})") ==
        "l.json: /layers: expected a non-empty list of layers, got []\n");
  CHECK(errors(R"({"format": "zbpp-layers-1", "layers": [{"name": "a", "t_f": -1, "t_b": 1, "t_w": 1}]})") ==
        "l.json: /layers/0/t_f: expected a number from 0 to 1e9 (ms), got -1\n");
  CHECK(errors(R"({"format": "zbpp-layers-1", "layers": [{"name": "a", "t_f": 1, "t_b": 1}]})") ==
        "l.json: /layers/0: missing required field 't_w'\n");
  CHECK(errors(R"({"format": "zbpp-layers-1", "layers": [{"name": "a", "t_f": 1, "t_b": 1, "t_w": 1},
                                                          {"name": "a", "t_f": 1, "t_b": 1, "t_w": 1}]})") ==
        "l.json: /layers/1/name: layer name \"a\" is used twice; names must be unique\n");
  CHECK(errors(R"({"format": "zbpp-layers-1", "layers": [{"name": "a", "kind": "mlp", "t_f": 1, "t_b": 1, "t_w": 1}]})") ==
        "l.json: /layers/0/kind: expected \"embedding\", \"block\", \"head\" or \"other\", got \"mlp\"\n");
  // More held after B than after F is allowed: the CUDA backend keeps the output gradients W reads.
  {
    std::vector<Diag> d;
    auto costs = layer_costs_from_json(nlohmann::json::parse(R"({"format": "zbpp-layers-1", "layers": [{"name": "a",
        "t_f": 1, "t_b": 1, "t_w": 1, "activation_bytes": 1, "activation_bytes_w": 2}]})"), "l.json", "", &d);
    REQUIRE(costs);
    CHECK(costs->layers[0].activation_bytes_w == 2);
  }
  CHECK(errors(R"({"format": "zbpp-layers-1", "layers": [{"name": "a", "t_f": 1, "t_b": 1, "t_w": 1, "flops": 3}]})") ==
        "l.json: /layers/0/flops: unknown field 'flops'\n");
}

TEST_CASE("layers: Megatron's layout notation names the embedding, the blocks and the loss per stage") {
  LayerCosts costs;
  costs.layers.push_back({"embedding", LayerKind::kEmbedding});
  for (int i = 0; i < 12; ++i) costs.layers.push_back({"h" + std::to_string(i), LayerKind::kBlock});
  costs.layers.push_back({"head", LayerKind::kHead});
  std::string err;
  CHECK(megatron_layout(costs, Partition{{6, 4, 3, 1}}, &err) == "Et*5|t*4|t*3|L");
  CHECK(megatron_layout(costs, Partition{{2, 11, 1}}, &err) == "Et|t*11|L");
  CHECK(megatron_layout(costs, Partition{{1, 12, 1}}, &err) == "E|t*12|L");
  CHECK(partition_range_text(costs, Partition{{6, 4, 3, 1}}, 0) == "embedding..h4");
  CHECK(partition_range_text(costs, Partition{{6, 4, 3, 1}}, 3) == "head");
  costs.layers[3].kind = LayerKind::kOther;
  CHECK(megatron_layout(costs, Partition{{6, 4, 3, 1}}, &err) == "");
  CHECK(err == "layer 3 ('h2') is of kind other: Megatron's layout names only embedding (E), blocks (t) and the loss (L)");
}

}  // namespace zbpp
