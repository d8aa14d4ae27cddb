// zbplan's command line: the subcommands and their flags (CLI11), then the one subcommand given
// runs (zbplan_commands.h). No planning logic here.
#include "cli/zbplan_cli.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
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

namespace {

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

// Every subcommand's flags, as CLI11 fills them.
struct Args {
  CLI::App* plan = nullptr;
  CLI::App* methods = nullptr;
  CLI::App* simulate = nullptr;
  CLI::App* validate = nullptr;
  CLI::App* show = nullptr;
  CLI::App* export_cmd = nullptr;
  CLI::App* import_cmd = nullptr;
  std::string file;  // the schedule (or CSV) the reading subcommands take
  // plan
  ProblemFlags flags;
  std::string method, output;
  bool compute_only = false, quiet = false;
  PlanOptions plan_options;
  IterationFlags plan_iterations;
  // simulate
  std::string trace;
  IterationFlags simulate_iterations;
  // show
  std::string show_out, show_measured;
  int show_width = 0;
  IterationFlags show_iterations;
  // export
  std::string export_format = "pytorch-csv", export_out;
  // import
  ProblemFlags import_flags;
  std::string import_out;
  bool import_compute_only = false, import_per_chunk = false;
  IterationFlags import_iterations;
};

void add_plan(CLI::App* app, Args* a) {
  // The table's names, and the paper's for the heuristic at a limit (ZB-1p, ZB-2p), in any case.
  std::vector<std::string> methods = plan_methods();
  for (const auto& alias : method_aliases()) methods.push_back(alias.name);
  auto method_name = one_of(methods, "method");
  method_name.description("METHOD");
  auto* plan = a->plan = app->add_subcommand("plan", "plan a schedule for a problem and write the schedule file");
  plan->add_option("--method", a->method,
                   "schedule method: " + join_names(plan_methods()) +
                       "; or the paper's names, in any case (ZB-H1, ZB-H2, 1F1B, ZB-V; ZB-1p and ZB-2p: the heuristic "
                       "at --mem-limit 1p and 2p); zbplan methods says what each is")
      ->required()
      ->transform(method_name);
  a->flags.add_to(plan);
  plan->add_option("-o,--output", a->output, "schedule file to write")->required()->check(file_name());
  PlanOptions& plan_options = a->plan_options;
  plan_options.time_limit = kTimeLimitNotGiven;
  plan->add_option("--time-limit", plan_options.time_limit,
                   "seconds for the whole call: the searches stop then with the best found so far (the output says "
                   "what they left out) and the ILP refinement gets what they leave (default: 4 s for the searches; "
                   "ilp and ilp-v: none, and 10 s for the ILP; auto runs the ILP only when given); 0: the searches run "
                   "whole (the ILP still takes its 10 s)")
      ->check(real_in(0, 86400))
      ->default_str("");
  // The older spelling: seconds for the ILP refinement alone, the searches before it unbounded.
  plan->add_option("--ilp-seconds", plan_options.ilp_seconds,
                   "seconds for the ILP refinement alone (the searches before it run to their end)")
      ->check(real_in(0.01, 86400))
      ->excludes("--time-limit")
      ->default_str("");
  plan->add_option("--threads", plan_options.threads, "CBC threads for the ILP")->check(integer_in(1, 256));
  plan->add_flag("--quiet", a->quiet, "no progress lines on stderr (the ILP's, the searches', auto's and the partition search's)");
  plan->add_flag("--compute-only", a->compute_only,
                 "write F/B/W ops only (level \"compute\"); by default the file is lowered for zbrun: send/recv, buffer slots, optimizer step");
  a->plan_iterations.add_to(plan, true);
}

// The subcommands that read a schedule file (or write one from a CSV).
void add_readers(CLI::App* app, Args* a) {
  a->methods = app->add_subcommand("methods", "list the schedule methods plan takes: placement, what runs, memory");

  auto* simulate = a->simulate = app->add_subcommand("simulate", "validate a schedule file and print its predicted timeline figures");
  simulate->add_option("file", a->file, "schedule file")->required()->check(file_name());
  simulate->add_option("--trace", a->trace, "also write a Chrome/Perfetto trace of the predicted timeline")->check(file_name());
  a->simulate_iterations.add_to(simulate, false);

  a->validate = app->add_subcommand("validate", "check a schedule file; exit 1 with located errors if it is invalid");
  a->validate->add_option("file", a->file, "schedule file")->required()->check(file_name());

  auto* show = a->show = app->add_subcommand("show", "draw a schedule file as SVG or a self-contained HTML page");
  show->add_option("file", a->file, "schedule file")->required()->check(file_name());
  show->add_option("-o,--output", a->show_out, "picture to write: .svg or .html")->required()->check(picture_name());
  show->add_option("--width", a->show_width, "drawing width in px (default: wide enough to show every block)")
      ->check(integer_in(100, 200000))
      ->default_str("");
  show->add_option("--measured", a->show_measured, "a zbrun --trace file: draw the measured run under the plan")->check(file_name());
  a->show_iterations.add_to(show, false, true);

  auto* export_cmd = a->export_cmd = app->add_subcommand("export", "write a schedule in another tool's format");
  export_cmd->add_option("file", a->file, "schedule file")->required()->check(file_name());
  export_cmd->add_option("--format", a->export_format,
                         "the format: pytorch-csv (torch.distributed.pipelining), or layout (a file planned with "
                         "--layers: its partition as Megatron-LM's --pipeline-model-parallel-layout)")
      ->transform(one_of({"pytorch-csv", "layout"}, "format"));
  export_cmd->add_option("-o,--output", a->export_out, "file to write")->required()->check(file_name());

  auto* import_cmd = a->import_cmd = app->add_subcommand("import", "read a PyTorch pipelining CSV into a schedule file");
  import_cmd->add_option("file", a->file,
                         "CSV as PyTorch's _dump_csv writes it, either format: one row per rank of actions like 0F0, "
                         "0I0, 0W0, 0B0, (0F7;7B3)OVERLAP_F_B, 0SEND_F0, 0REDUCE_GRAD")
      ->required()
      ->check(file_name());
  a->import_flags.add_times(import_cmd, "time of one F (default 1), as for plan", "time of one B", "time of one W",
                            "latency of one hop, as for plan", "M_B", "M_W", "memory limit");
  import_cmd->add_option("-o,--output", a->import_out, "schedule file to write")->required()->check(file_name());
  import_cmd->add_flag("--compute-only", a->import_compute_only, "do not lower");
  import_cmd->add_flag("--per-chunk", a->import_per_chunk,
                       "--tf, --tb, --tw, --mem-b and --mem-w are of one chunk (as plan --chunks N reads them); without "
                       "it they are of a whole stage, each split into the CSV's chunks as plan's V methods split them");
  a->import_iterations.add_to(import_cmd, true);
}

// --method zb-1p / zb-2p: the heuristic at that limit; "" or a usage error's text.
std::string apply_alias(Args* a) {
  for (const auto& alias : method_aliases()) {
    if (!a->plan->parsed() || a->method != alias.name) continue;
    if (!a->flags.mem_limit.empty() && a->flags.mem_limit != alias.mem_limit)
      return "--method " + std::string(alias.name) + " is the heuristic at --mem-limit " + alias.mem_limit + ", not " +
             a->flags.mem_limit + ": drop --mem-limit, or use --method heuristic --mem-limit " + a->flags.mem_limit;
    a->method = alias.method;
    a->flags.mem_limit = alias.mem_limit;
  }
  return "";
}

// The files the parsed subcommand reads and writes, by the flag that names them.
void named_files(const Args& a, std::vector<NamedPath>* inputs, std::vector<NamedPath>* outputs) {
  if (a.plan->parsed()) {
    *inputs = {{"--problem", a.flags.problem_file}, {"--layers", a.flags.layers_file}};
    *outputs = {{"-o", a.output}};
  } else if (a.simulate->parsed()) {
    *inputs = {{"the schedule", a.file}};
    *outputs = {{"--trace", a.trace}};
  } else if (a.show->parsed()) {
    *inputs = {{"the schedule", a.file}, {"--measured", a.show_measured}};
    *outputs = {{"-o", a.show_out}};
  } else if (a.export_cmd->parsed()) {
    *inputs = {{"the schedule", a.file}};
    *outputs = {{"-o", a.export_out}};
  } else if (a.import_cmd->parsed()) {
    *inputs = {{"the CSV", a.file}, {"--problem", a.import_flags.problem_file}};
    *outputs = {{"-o", a.import_out}};
  }
}

}  // namespace

}  // namespace zbplan

int run_zbplan(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  using namespace zbplan;
  CLI::App app{"zbplan: plans zero-bubble pipeline schedules and checks schedule files", "zbplan"};
  set_up_app(&app, "zbplan");
  app.require_subcommand(1);
  Args a;
  add_plan(&app, &a);
  add_readers(&app, &a);
  if (int code = parse_command_line(&app, argc, argv, out, err); code >= 0) return code;
  a.plan_iterations.optimizer_given =
      a.plan->count("--optimizer") + a.plan->count("--post-validation-at") + a.plan->count("--validate-at") > 0;
  if (std::string bad = apply_alias(&a); !bad.empty()) return usage_error(err, "zbplan", "plan", bad);
  // No output may replace an input or another output (issue 34): refused before anything runs.
  std::vector<NamedPath> inputs, outputs;
  named_files(a, &inputs, &outputs);
  // A fact about the files (a link may join two names), not the command line's form: exit 1, as zbrun.
  if (std::string clash = output_clash(inputs, outputs); !clash.empty()) {
    err << "zbplan: " << clash << "\n";
    return kExitFailed;
  }
  if (a.plan->parsed() && !a.quiet) {
    // On a terminal each line replaces the one before, and "" (the work is done) clears it before
    // the results print; elsewhere plain lines.
    const bool in_place = &err == &std::cerr && isatty(STDERR_FILENO);
    a.plan_options.progress = [&err, in_place](const std::string& line) {
      if (in_place) err << "\r\x1b[K" << line << std::flush;
      else if (!line.empty()) err << line << std::endl;
    };
  }
  // An output written to standard output (-o /dev/stdout) keeps it to itself: the summary goes to
  // standard error instead of after the file.
  std::ostream& said =
      std::any_of(outputs.begin(), outputs.end(), [](const NamedPath& o) { return is_standard_output(o.path); }) ? err : out;
  if (a.plan->parsed())
    return cmd_plan(a.method, a.flags, a.plan_iterations, a.output, a.compute_only, a.plan_options, said, err);
  if (a.methods->parsed()) return cmd_methods(out);
  if (a.simulate->parsed()) return cmd_simulate(a.file, a.trace, a.simulate_iterations, said, err);
  if (a.show->parsed())
    return cmd_show(a.file, a.show_out, a.show_width, a.show_measured, a.show_iterations,
                    a.show->count("--iterations") > 0, said, err);
  if (a.export_cmd->parsed()) return cmd_export(a.file, a.export_format, a.export_out, said, err);
  if (a.import_cmd->parsed()) {
    return cmd_import(a.file, a.import_flags, a.import_iterations, a.import_out, a.import_compute_only,
                      a.import_per_chunk, said, err);
  }
  return cmd_validate(a.file, out, err);
}

}  // namespace zbpp
