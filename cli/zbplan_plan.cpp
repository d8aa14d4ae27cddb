// zbplan plan and import: the subcommands that make a schedule file, plan it (or read PyTorch's
// CSV), lower and time it, write it and print its figures.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "cli/zbplan_commands.h"
#include "cli/zbplan_output.h"
#include "core/output_file.h"
#include "core/schedule_json.h"
#include "core/simulate_iterations.h"
#include "core/validate.h"
#include "io/import_csv.h"
#include "planner/lower.h"
#include "planner/methods.h"
#include "planner/partition.h"
#include "planner/pipeline.h"

namespace zbpp::zbplan {

namespace {

// Simulates a planned (or imported) schedule, one iteration and, when lowered, several back to
// back; writes the file with both and prints the figures.
int write_planned(const PlanResult& planned, const IterationFlags& iteration_flags, const std::string& output,
                  std::ostream& out, std::ostream& err) {
  std::vector<Diag> diags;
  const Schedule& schedule = planned.schedule;
  // A plan lowered by the pipeline was timed there, with the same options; the first of its
  // iterations back to back gives the one iteration's figures.
  std::optional<IterationTimeline> iterations = planned.iterations;
  if (schedule.level == Level::kLowered && !iterations) {
    iterations = simulate_iterations(schedule, planned.problem, iteration_flags.options(false), &diags);
    if (!iterations) return fail(err, diags);
  }
  auto timeline = iterations ? std::optional<Timeline>(iterations->first)
                             : simulate_timeline(schedule, planned.problem, &diags);
  if (!timeline) return fail(err, diags);
  const Objective objective = iteration_flags.objective_or_default();
  const Ticks bound = wall_lower_bound(planned.problem, schedule.placement);
  // Written as it is made: a big schedule's text is never held whole.
  ReplacingFile file;
  std::string why;
  auto to_file = [&](std::string_view piece) { return file.write(piece, &why); };
  const bool written =
      file.open(output, &why) &&
      write_schedule_json(schedule, planned.problem, *timeline, to_file, iterations ? &*iterations : nullptr,
                          objective_name(objective), bound, planned.solver.status ? &planned.solver : nullptr,
                          planned.partition ? &*planned.partition : nullptr) &&
      file.commit(&why);
  if (!written) {
    err << "zbplan: cannot write " << why << "\n";
    return kExitInvalid;
  }
  out << "wrote " << output << "\n";
  for (const auto& note : planned.notes) out << "  " << note << "\n";
  print_figures(out, schedule, planned.problem, *timeline);
  if (iterations) print_iterations(out, schedule, *iterations);
  print_objective(out, objective, schedule, planned.problem, *timeline,
                  iterations ? &*iterations : nullptr);
  return 0;
}

// After a fixed method's schedule went over the memory limit: the limit it needs, and whether the
// heuristic, which plans under the limit, fits. "" when the failure was something else.
std::string memory_hint(const Problem& problem, const std::string& method, const PlanOptions& options,
                        const std::vector<Diag>& failed) {
  const std::string header = "the " + method + " schedule does not fit this problem:";
  if (!problem.mem_limit || !problem.stage_mem_limits.empty() || failed.empty() || failed[0].message != header)
    return "";
  if (const Method* m = find_method(method); !m || m->runs != Runs::kGenerator) return "";  // a search plans within it
  Problem unlimited = problem;
  unlimited.mem_limit.reset();
  std::vector<Diag> unused;
  auto alone = plan_schedule(unlimited, method, &unused, options);
  if (!alone) return "";
  const auto peaks = peak_memory(alone->schedule, alone->problem);
  const size_t stage = std::max_element(peaks.begin(), peaks.end()) - peaks.begin();
  const double multiple = static_cast<double>(peaks[stage]) / (static_cast<double>(problem.p) * problem.stage_mem_b());
  char p_multiple[32];
  std::snprintf(p_multiple, sizeof p_multiple, "%.4gp", multiple);
  const std::string limit = mem_limit_text(problem);
  std::string hint = method + " needs a memory limit of at least " + format_quanta(peaks[stage]) + " (" + p_multiple +
                     ", stage " + std::to_string(stage) + "'s peak), not " + limit + ": raise --mem-limit to " +
                     p_multiple;
  if (plan_schedule(problem, "heuristic", &unused, options))
    return hint + ", or use --method heuristic (or auto), which plans within " + limit;
  return hint + " (no heuristic schedule fits within " + limit + " either)";
}

}  // namespace

namespace {

// With --layers the layer file gives the times and memory of every virtual stage: flags that
// would give them too are a usage error, named.
std::string layers_conflict(const ProblemFlags& flags) {
  std::vector<std::string> given;
  if (!flags.problem_file.empty()) given.push_back("--problem");
  for (const auto& [text, name] : {std::pair{&flags.tf, "--tf"}, {&flags.tb, "--tb"}, {&flags.tw, "--tw"},
                                   {&flags.mem_b, "--mem-b"}, {&flags.mem_w, "--mem-w"}})
    if (!text->empty()) given.push_back(name);
  std::string out;
  for (size_t i = 0; i < given.size(); ++i) out += (i ? ", " : "") + given[i];
  return out;
}

// A plan not lowered by its search is lowered (unless --compute-only), then written.
int lower_and_write(PlanResult* planned, bool compute_only, const IterationFlags& iteration_flags,
                    const std::string& output, std::ostream& out, std::ostream& err) {
  std::vector<Diag> diags;
  if (!compute_only && planned->schedule.level != Level::kLowered &&
      !lower_planned(planned, &diags, iteration_flags.lower_options()))
    return fail(err, diags);
  return write_planned(*planned, iteration_flags, output, out, err);
}

// --device-memory: one size for every device or one per stage, each with its unit. "" or why not.
std::string parse_device_memory(const ProblemFlags& flags, std::vector<double>* bytes) {
  if (flags.device_memory.empty()) return "";
  if (!flags.mem_limit.empty()) return "give the memory once: --device-memory or --mem-limit, not both";
  size_t from = 0;
  for (;;) {
    const size_t comma = flags.device_memory.find(',', from);
    std::string why;
    auto one = parse_bytes(flags.device_memory.substr(from, comma == std::string::npos ? std::string::npos : comma - from), &why);
    if (!one) return "--device-memory: " + why;
    bytes->push_back(*one);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (bytes->size() != 1 && static_cast<int>(bytes->size()) != flags.p)
    return "--device-memory gives " + std::to_string(bytes->size()) +
           " sizes: give one for every device, or one per stage (-p " + std::to_string(flags.p) + ")";
  return "";
}

// What no partition of the layers can do: more stages than layers, or a device memory below the
// least any partition needs (said with that least and its partition). "" when neither.
std::string layers_cannot_fit(const std::string& file, const LayerCosts& costs, int p, int chunks,
                              const std::vector<double>& device_bytes) {
  const int layers = static_cast<int>(costs.layers.size());
  if (p * chunks > layers)
    return file + ": more " + (chunks > 1 ? "virtual stages" : "stages") + " than layers: " +
           (chunks > 1 ? "-p " + std::to_string(p) + " x " + std::to_string(chunks) + " chunks" : "-p " + std::to_string(p)) +
           ", but the file has " + std::to_string(layers) + " layers, and every " +
           (chunks > 1 ? "virtual stage" : "stage") + " needs at least one";
  if (device_bytes.size() != 1) return "";
  const auto [least, partition] = least_device_memory(costs, p, chunks);
  if (device_bytes[0] >= least) return "";
  return file + ": --device-memory " + bytes_text(device_bytes[0]) +
         " cannot hold any partition's parameters, gradients, optimizer state and one microbatch's activations on every "
         "stage: the least is " + bytes_text(least) + " (" + std::to_string(static_cast<long long>(std::ceil(least))) +
         " bytes)" + (chunks > 1 ? " (at least an even share of the whole, or the largest layer)"
                                  : ", with the layers split " + counts_text(partition)) +
         "; give more memory, or more stages";
}

}  // namespace

int cmd_plan(const std::string& method, const ProblemFlags& flags, const IterationFlags& iteration_flags,
             const std::string& output, bool compute_only, const PlanOptions& options, std::ostream& out,
             std::ostream& err) {
  const bool layered = !flags.layers_file.empty();
  if (std::string missing = flags.missing(); !missing.empty())
    return usage_error(err, "zbplan", "plan",
                       "no " + missing +
                           (layered ? ": with --layers, give -p and -m"
                                    : ": give the problem with -p, -m, --tf, --tb and --tw, or with --problem FILE"));
  // The command line alone says 1f1b-i has nothing to interleave: a usage error, as the README's rule has it.
  const Method* planning = find_method(method);
  if (planning && planning->placing == Placing::kInterleaved && flags.problem_file.empty() &&
      (flags.chunks == ProblemFlags::kUnset || flags.chunks < 2))
    return usage_error(err, "zbplan", "plan", interleaves_chunks_text(method));
  if (!layered && !flags.partition.empty())
    return usage_error(err, "zbplan", "plan", "--partition counts the layers of a --layers file: give --layers FILE");
  if (!layered && !flags.device_memory.empty())
    return usage_error(err, "zbplan", "plan",
                       "--device-memory needs the layers' static bytes: give --layers FILE (without it, memory is in "
                       "the problem's own unit: use --mem-limit)");
  std::vector<double> device_bytes;
  if (std::string bad = parse_device_memory(flags, &device_bytes); !bad.empty())
    return usage_error(err, "zbplan", "plan", bad);
  if (layered) {
    if (std::string conflict = layers_conflict(flags); !conflict.empty())
      return usage_error(err, "zbplan", "plan",
                         "--layers gives the times and memory of every virtual stage; drop " + conflict);
  }
  std::vector<Diag> diags;
  ProblemInput input;
  // A V method's own placement, asked for by name without --chunks: the method splits each stage
  // into its 2 chunks as it does without the flag.
  ProblemFlags given = flags;
  if (is_v_method(method) && given.placement == "v" && given.chunks == ProblemFlags::kUnset) given.placement.clear();
  if (!given.to_input(&input, &diags)) return fail(err, diags);
  LayerCosts costs;
  std::optional<Problem> problem;
  if (layered) {
    std::string why;
    const auto shape = partition_shape(method, input.p, input.chunks, input.placement, &why);
    if (!shape) return usage_error(err, "zbplan", "plan", why);
    input.chunks = shape->chunks;
    input.placement = shape->placement;
    if (!load_layer_costs(flags.layers_file, &costs, &diags)) return fail(err, diags);
    if (std::string bad = layers_cannot_fit(flags.layers_file, costs, input.p, input.chunks, device_bytes); !bad.empty()) {
      err << "zbplan: " << bad << "\n";
      return kExitInvalid;
    }
    // The balanced partition's problem checks m and the limit as any problem's are checked. A limit
    // like 2p becomes the MiB it means there: one limit for every partition searched. (Device memory
    // sets each partition's limits itself; where the balanced one does not fit, others may.)
    const ProblemInput balanced =
        input.p >= 1 ? problem_for_partition(costs, balanced_partition(costs, input.p * input.chunks), input) : input;
    problem = build_problem(balanced, "", &diags);
    if (!problem) return fail(err, diags);
    if (problem->mem_limit) input.mem_limit = format_quanta(*problem->mem_limit);
  } else {
    problem = build_problem(input, flags.problem_file, &diags);
    if (!problem) return fail(err, diags);
  }
  PlanOptions with_objective = options;
  // --time-limit S: the whole call; 0: no limit; not given: the searches' default (not the ILPs').
  if (options.time_limit > 0) {
    with_objective.deadline = Deadline::in(options.time_limit);
  } else if (options.time_limit == kTimeLimitNotGiven && options.ilp_seconds <= 0 && !is_ilp(method)) {
    with_objective.deadline = Deadline::in(kDefaultSearchSeconds);
    with_objective.default_deadline = true;
  }
  with_objective.time_limit = std::max(0.0, options.time_limit);
  if (options.ilp_seconds > 0) with_objective.time_limit = options.ilp_seconds;  // the ILP's alone
  with_objective.objective = iteration_flags.objective_or_default();
  with_objective.iterations = iteration_flags.options();
  if (!compute_only) {
    // Ranked by the true cost under the lowering it will have; auto tries each optimizer
    // placement the user did not fix.
    with_objective.lowerings = {iteration_flags.lower_options()};
    if (planning && planning->runs == Runs::kAuto && !iteration_flags.optimizer_given)
      with_objective.lowerings = {{Optimizer::kPostValidation, PostValidationAt::kFirstBackward},
                                  {Optimizer::kPostValidation, PostValidationAt::kStart},
                                  {Optimizer::kSync, PostValidationAt::kFirstBackward}};
  }
  if (layered) {
    PartitionSearchOptions search;
    search.progress = options.progress;
    search.device_bytes = device_bytes;
    if (!flags.partition.empty()) {
      std::vector<long long> counts;  // the form was checked with the command line
      parse_integer_list(flags.partition, 1, 1'000'000, &counts);
      search.fixed = Partition{std::vector<int>(counts.begin(), counts.end())};
    }
    auto found = plan_partitioned(costs, input, method, &diags, with_objective, search);
    if (options.progress) options.progress("");  // done: a terminal's progress line is cleared
    if (!found) return fail(err, diags);
    std::vector<double> per_stage = device_bytes;
    if (per_stage.size() == 1) per_stage.assign(static_cast<size_t>(flags.p), device_bytes[0]);
    found->plan.partition = PartitionRecord{costs, found->partition, per_stage, std::nullopt, std::nullopt};
    return lower_and_write(&found->plan, compute_only, iteration_flags, output, out, err);
  }
  auto planned = plan_schedule(*problem, method, &diags, with_objective);
  if (options.progress) options.progress("");  // done: a terminal's progress line is cleared
  if (!planned) {
    fail(err, diags);
    if (std::string hint = memory_hint(*problem, method, options, diags); !hint.empty()) err << "zbplan: " << hint << "\n";
    return kExitInvalid;
  }
  return lower_and_write(&*planned, compute_only, iteration_flags, output, out, err);
}

// The method table as a table: a row per method, then the paper's names.
int cmd_methods(std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {{"method", "placement", "runs", "activation memory", "what"}};
  for (const Method& m : methods()) rows.push_back({m.name, placing_name(m.placing), runs_name(m.runs), m.memory, m.what});
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c)
      line += c + 1 < row.size() ? row[c] + std::string(width[c] + 2 - row[c].size(), ' ') : row[c];
    out << line << "\n";
  }
  for (const MethodAlias& a : method_aliases())
    out << a.name << ": " << a.method << " at --mem-limit " << a.mem_limit << " (the paper's name)\n";
  out << "Names are taken in any case (ZB-H1, 1F1B, ZB-V). M_B: a stage's activation memory of one microbatch.\n";
  return 0;
}

int cmd_import(const std::string& path, const ProblemFlags& flags, const IterationFlags& iteration_flags,
               const std::string& output, bool compute_only, bool per_chunk, std::ostream& out, std::ostream& err) {
  std::vector<Diag> diags;
  std::string text;
  if (!read_text_file(path, &text, &diags)) return fail(err, diags);
  auto imported = import_pytorch_csv(text, path, &diags);
  if (!imported) return fail(err, diags);
  // The CSV fixes the shape; times and memory come from the flags, a time not given is 1 (said).
  ProblemInput input;
  ProblemFlags shaped = flags;
  shaped.require_times = false;
  shaped.p = imported->schedule.p;
  shaped.m = imported->schedule.m;
  const int chunks = imported->schedule.chunks;
  // The flags mean what they mean to plan: a whole stage's figures, split into the chunks as the V
  // methods split them (so plan, export and import with the same flags give the same figures), or
  // with --per-chunk one chunk's, as plan --chunks reads them.
  const bool split = chunks > 1 && !per_chunk;
  shaped.chunks = split ? 1 : chunks;
  if (!shaped.to_input(&input, &diags)) return fail(err, diags);
  if (!split) input.placement = imported->schedule.placement;
  auto problem = build_problem(input, path, &diags);
  if (!problem) return fail(err, diags);
  if (split) {
    problem = split_into_chunks(*problem, chunks);
    problem->placement = imported->schedule.placement;
  }
  // The crossing of a link's messages is said by CSV cell below, once the rest holds.
  diags = validate_but_message_order(imported->schedule, *problem, path);
  if (!diags.empty()) {
    // The validator speaks of our stages (ranks) and chunks; say how the CSV was read.
    const Schedule& s = imported->schedule;
    std::string shape = "read as p = " + std::to_string(s.p) + " ranks (rows), m = " + std::to_string(s.m) +
                        " (the largest microbatch + 1), " + std::to_string(s.chunks) + " stage(s) per rank; above, " +
                        "\"stage N\" is rank N";
    if (s.chunks > 1) {
      shape += " and \":c\" its c-th stage counting from 0 (rank 0 runs stages";
      for (int vs : s.placement[0]) shape += " " + std::to_string(vs);
      shape += ")";
    }
    add_diag(&diags, {path, "", -1, -1, "", shape});
    return fail(err, diags);
  }
  if (!check_message_cells(*imported, path, &diags)) return fail(err, diags);
  if (!check_message_order(*imported, path, &diags)) return fail(err, diags);
  PlanResult planned{imported->schedule, *problem, imported->notes, {}, std::nullopt};
  if (!imported->messages.empty())
    planned.notes.push_back("import: " + std::to_string(imported->messages.size()) +
                            " SEND_F/RECV_F/SEND_B/RECV_B cells match the messages zbplan's lowering sends; dropped" +
                            (compute_only ? " (--compute-only)" : ", and the schedule lowered again"));
  if (split)
    planned.notes.push_back("import: --tf, --tb, --tw, --mem-b and --mem-w read per stage, each split into the CSV's " +
                            std::to_string(chunks) + " chunks (as plan's V methods split them); give --per-chunk for "
                            "figures of one chunk");
  std::string assumed;
  for (const auto& [given, flag] : {std::pair{&flags.tf, "--tf"}, {&flags.tb, "--tb"}, {&flags.tw, "--tw"}})
    if (given->empty()) assumed += std::string(assumed.empty() ? "" : " ") + flag + " 1";
  if (!assumed.empty())
    planned.notes.push_back("import: assumed " + assumed +
                            " (not given): the figures below count in that unit; give --tf, --tb and --tw for real "
                            "ones");
  if (!compute_only && !lower_planned(&planned, &diags, iteration_flags.lower_options())) return fail(err, diags);
  return write_planned(planned, iteration_flags, output, out, err);
}

}  // namespace zbpp::zbplan
