// zbplan's command line: the subcommands and their flags (CLI11), then the one subcommand given
// runs (zbplan_commands.h). No planning logic here.
#include "cli/zbplan_cli.h"

#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "cli/cli_file_name.h"
#include "cli/cli_numbers.h"
#include "cli/zbplan_commands.h"
#include "cli/zbplan_flags.h"
#include "core/output_file.h"  // output_clash, is_standard_output
#include "planner/pipeline.h"

namespace zbpp {

namespace zbplan {

// The paper's names for schedules, as --method accepts them (any case): ZB-1p and ZB-2p are the
// heuristic at 1p and 2p memory (section 3.1).
namespace {

struct MethodAlias {
  const char* name;
  const char* method;
  const char* mem_limit;  ///< the memory limit the name implies, or null
};
constexpr MethodAlias kMethodAliases[] = {{"zb-1p", "heuristic", "1p"}, {"zb-2p", "heuristic", "2p"}};

// show -o: the picture's kind is its extension.
CLI::Validator picture_name() {
  return CLI::Validator(
      [](std::string& v) {
        if (std::string bad = file_name().operator()(v); !bad.empty()) return bad;
        return ends_with(v, ".svg") || ends_with(v, ".html")
                   ? std::string()
                   : "'" + v + "': a picture's name ends in .svg or .html (the kind of picture written)";
      },
      "FILE");
}

}  // namespace

}  // namespace zbplan

int run_zbplan(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  using namespace zbplan;
  CLI::App app{"zbplan: plans zero-bubble pipeline schedules and checks schedule files", "zbplan"};
  set_up_app(&app, "zbplan");
  app.require_subcommand(1);

  ProblemFlags flags;
  std::string method, output, file, trace;
  std::vector<std::string> methods = plan_methods();
  for (const auto& alias : kMethodAliases) methods.push_back(alias.name);
  auto method_name = one_of(methods, "method");
  method_name.description("METHOD");
  auto* plan = app.add_subcommand("plan", "plan a schedule for a problem and write the schedule file");
  plan->add_option("--method", method,
                   "schedule method: " + join_names(plan_methods()) +
                       "; or the paper's names, in any case (ZB-H1, ZB-H2, 1F1B, ZB-V; ZB-1p and ZB-2p: the heuristic "
                       "at --mem-limit 1p and 2p)")
      ->required()
      ->transform(method_name);
  flags.add_to(plan);
  plan->add_option("-o,--output", output, "schedule file to write")->required()->check(file_name());
  bool compute_only = false;
  PlanOptions plan_options;
  plan->add_option("--time-limit", plan_options.time_limit,
                   "seconds for the whole call: the searches stop then with the best found so far (the output says "
                   "what they left out) and the ILP refinement gets what they leave (method ilp: 10 s for the ILP "
                   "when not given; auto runs the ILP only when given)")
      ->check(real_in(0.01, 86400))
      ->default_str("");
  // The older spelling: seconds for the ILP refinement alone, the searches before it unbounded.
  plan->add_option("--ilp-seconds", plan_options.ilp_seconds,
                   "seconds for the ILP refinement alone (the searches before it run to their end)")
      ->check(real_in(0.01, 86400))
      ->excludes("--time-limit")
      ->default_str("");
  plan->add_option("--threads", plan_options.threads, "CBC threads for the ILP")->check(integer_in(1, 256));
  bool quiet = false;
  plan->add_flag("--quiet", quiet, "no progress lines on stderr (the ILP's, the searches' and the partition search's)");
  plan->add_flag("--compute-only", compute_only,
                 "write F/B/W ops only (level \"compute\"); by default the file is lowered for zbrun: send/recv, buffer slots, optimizer step");
  IterationFlags plan_iterations, simulate_iterations_flags, import_iterations;
  plan_iterations.add_to(plan, true);

  auto* simulate = app.add_subcommand("simulate", "validate a schedule file and print its predicted timeline figures");
  simulate->add_option("file", file, "schedule file")->required()->check(file_name());
  simulate->add_option("--trace", trace, "also write a Chrome/Perfetto trace of the predicted timeline")->check(file_name());
  simulate_iterations_flags.add_to(simulate, false);

  auto* validate_cmd = app.add_subcommand("validate", "check a schedule file; exit 1 with located errors if it is invalid");
  validate_cmd->add_option("file", file, "schedule file")->required()->check(file_name());

  std::string show_out, show_measured, export_format = "pytorch-csv", export_out;
  int show_width = 0;
  auto* show = app.add_subcommand("show", "draw a schedule file as SVG or a self-contained HTML page");
  show->add_option("file", file, "schedule file")->required()->check(file_name());
  show->add_option("-o,--output", show_out, "picture to write: .svg or .html")->required()->check(picture_name());
  show->add_option("--width", show_width, "drawing width in px (default: wide enough to show every block)")
      ->check(integer_in(100, 200000))
      ->default_str("");
  show->add_option("--measured", show_measured, "a zbrun --trace file: draw the measured run under the plan")->check(file_name());
  IterationFlags show_iterations_flags;
  show_iterations_flags.add_to(show, false, true);

  auto* export_cmd = app.add_subcommand("export", "write a schedule in another tool's format");
  export_cmd->add_option("file", file, "schedule file")->required()->check(file_name());
  export_cmd->add_option("--format", export_format,
                         "the format: pytorch-csv (torch.distributed.pipelining), or layout (a file planned with "
                         "--layers: its partition as Megatron-LM's --pipeline-model-parallel-layout)")
      ->transform(one_of({"pytorch-csv", "layout"}, "format"));
  export_cmd->add_option("-o,--output", export_out, "file to write")->required()->check(file_name());

  ProblemFlags import_flags;
  std::string import_out;
  bool import_compute_only = false;
  auto* import_cmd = app.add_subcommand("import", "read a PyTorch pipelining CSV into a schedule file");
  import_cmd->add_option("file", file,
                         "CSV as PyTorch's _dump_csv writes it, either format: one row per rank of actions like 0F0, "
                         "0I0, 0W0, 0B0, (0F7;7B3)OVERLAP_F_B, 0SEND_F0, 0REDUCE_GRAD")
      ->required()
      ->check(file_name());
  import_flags.add_times(import_cmd, "time of one F (default 1), as for plan", "time of one B", "time of one W",
                         "latency of one hop", "M_B", "M_W", "memory limit");
  import_cmd->add_option("-o,--output", import_out, "schedule file to write")->required()->check(file_name());
  import_cmd->add_flag("--compute-only", import_compute_only, "do not lower");
  bool import_per_chunk = false;
  import_cmd->add_flag("--per-chunk", import_per_chunk,
                       "--tf, --tb, --tw, --mem-b and --mem-w are of one chunk (as plan --chunks N reads them); without "
                       "it they are of a whole stage, each split into the CSV's chunks as plan's V methods split them");
  import_iterations.add_to(import_cmd, true);

  if (int code = parse_command_line(&app, argc, argv, out, err); code >= 0) return code;
  flags.tcomm_given = plan->count("--tcomm") > 0;
  plan_iterations.optimizer_given =
      plan->count("--optimizer") + plan->count("--post-validation-at") + plan->count("--validate-at") > 0;

  for (const auto& alias : kMethodAliases) {
    if (!plan->parsed() || method != alias.name) continue;
    if (!flags.mem_limit.empty() && flags.mem_limit != alias.mem_limit)
      return usage_error(err, "zbplan", "plan",
                         "--method " + std::string(alias.name) + " is the heuristic at --mem-limit " + alias.mem_limit +
                             ", not " + flags.mem_limit + ": drop --mem-limit, or use --method heuristic --mem-limit " +
                             flags.mem_limit);
    method = alias.method;
    flags.mem_limit = alias.mem_limit;
  }
  // No output may replace an input or another output (issue 34): refused before anything runs.
  std::vector<NamedPath> inputs, outputs;
  if (plan->parsed()) {
    inputs = {{"--problem", flags.problem_file}, {"--layers", flags.layers_file}};
    outputs = {{"-o", output}};
  } else if (simulate->parsed()) {
    inputs = {{"the schedule", file}};
    outputs = {{"--trace", trace}};
  } else if (show->parsed()) {
    inputs = {{"the schedule", file}, {"--measured", show_measured}};
    outputs = {{"-o", show_out}};
  } else if (export_cmd->parsed()) {
    inputs = {{"the schedule", file}};
    outputs = {{"-o", export_out}};
  } else if (import_cmd->parsed()) {
    inputs = {{"the CSV", file}, {"--problem", import_flags.problem_file}};
    outputs = {{"-o", import_out}};
  }
  // A fact about the files (a link may join two names), not the command line's form: exit 1, as zbrun.
  if (std::string clash = output_clash(inputs, outputs); !clash.empty()) {
    err << "zbplan: " << clash << "\n";
    return kExitFailed;
  }
  if (plan->parsed() && !quiet) plan_options.progress = [&err](const std::string& line) { err << line << std::endl; };
  // An output written to standard output (-o /dev/stdout) keeps it to itself: the summary goes to
  // standard error instead of after the file.
  std::ostream& said =
      std::any_of(outputs.begin(), outputs.end(), [](const NamedPath& o) { return is_standard_output(o.path); }) ? err : out;
  if (plan->parsed()) return cmd_plan(method, flags, plan_iterations, output, compute_only, plan_options, said, err);
  if (simulate->parsed()) return cmd_simulate(file, trace, simulate_iterations_flags, said, err);
  if (show->parsed())
    return cmd_show(file, show_out, show_width, show_measured, show_iterations_flags, show->count("--iterations") > 0,
                    said, err);
  if (export_cmd->parsed()) return cmd_export(file, export_format, export_out, said, err);
  if (import_cmd->parsed()) {
    import_flags.tcomm_given = import_cmd->count("--tcomm") > 0;
    return cmd_import(file, import_flags, import_iterations, import_out, import_compute_only, import_per_chunk, said, err);
  }
  return cmd_validate(file, out, err);
}

}  // namespace zbpp
