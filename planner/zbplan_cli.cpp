// zbplan subcommands: plan, simulate, validate. Parses flags with CLI11, calls the library,
// prints figures or located errors. No planning logic here.
#include "planner/zbplan_cli.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "planner/export_csv.h"
#include "planner/cli_numbers.h"
#include "planner/lower.h"
#include "planner/output_file.h"
#include "planner/render_svg.h"
#include "planner/pipeline.h"
#include "planner/schedule_json.h"
#include "planner/cli_file_name.h"
#include "planner/simulate.h"
#include "planner/simulate_iterations.h"
#include "planner/trace.h"
#include "planner/validate.h"

namespace zbpp {

namespace {

constexpr int kExitInvalid = 1;
constexpr int kExitUsage = 2;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string memory_list(const std::vector<Mem>& peaks) {
  std::string out = "[";
  for (size_t i = 0; i < peaks.size(); ++i) out += (i ? ", " : "") + format_quanta(peaks[i]);
  return out + "]";
}

// The figures `simulate` prints and `plan` summarises.
void print_figures(std::ostream& out, const Schedule& s, const Problem& pr, const Timeline& t) {
  out << "  method       " << (s.method.empty() ? "?" : s.method) << " (p=" << s.p << ", m=" << s.m
      << ", chunks=" << s.chunks << ")\n";
  out << "  makespan     " << format_quanta(t.makespan) << "  (first op start to last op end, any stage)\n";
  out << "  span         " << format_quanta(t.span) << "  (longest stage, its first op to its last; the paper's cost)\n";
  out << "  bubble rate  " << fixed(t.bubble_rate, 4) << "  ((span - busy) / span; " << fixed(t.bubble_rate, 6) << ")\n";
  out << "  peak memory  " << memory_list(t.peak_memory);
  if (pr.mem_limit)
    out << "  (limit " << format_quanta(*pr.mem_limit)
        << (pr.mem_limit_spec.empty() || pr.mem_limit_spec.back() != 'p' ? "" : " = " + pr.mem_limit_spec) << ")";
  out << "\n";
}

// How iterations follow each other in a lowered schedule: the optimizer mode (plan, import) and
// the latencies of its messages (plan, import, simulate).
struct IterationFlags {
  std::string optimizer = kOptimizerPostValidation;
  std::string validate_at = "first-backward";
  std::string objective;  ///< empty: period with post-validation, wall with sync
  bool optimizer_given = false;  ///< --optimizer or --validate-at given (else auto may choose them)
  int iterations = 3;
  double state_latency = -1, allreduce_latency = -1;

  void add_to(CLI::App* app, bool with_optimizer) {
    if (with_optimizer)
      app->add_option("--optimizer", optimizer,
                      "post-validation (default: each stage steps under the partial gradient state passed forward and is "
                      "validated, rolled back if need be, in the next iteration; paper section 4) or sync (one all-reduce "
                      "before every stage steps)")
          ->check(CLI::IsMember({std::string(kOptimizerPostValidation), std::string(kOptimizerSync)}));
    if (with_optimizer)
      app->add_option("--objective", objective,
                      "what heuristic and auto minimise: period (the longest stage span: the time per iteration when "
                      "iterations overlap; default with post-validation) or wall (first op to last op: the time per "
                      "iteration with a synchronous step; default with --optimizer sync)")
          ->check(CLI::IsMember({"period", "wall"}));
    if (with_optimizer)
      app->add_option("--validate-at", validate_at,
                      "post-validation: where each stage validates its previous step: first-backward (default; the "
                      "warm-up forwards run speculatively and are replayed after a rollback) or start (hold the first "
                      "forward until validated; for comparison)")
          ->check(CLI::IsMember({"first-backward", "start"}));
    app->add_option("--iterations", iterations, "iterations simulated back to back for the period (default 3)")
        ->check(integer_in(2, 100));
    app->add_option("--state-latency", state_latency, "time of one optimizer-state message between neighbours (default T_comm)")
        ->check(real_in(0, 1e9));
    app->add_option("--allreduce-latency", allreduce_latency,
                    "time of the synchronous optimizer's all-reduce (default 2*ceil(log2 p)*T_comm)")
        ->check(real_in(0, 1e9));
  }

  Objective objective_or_default() const {
    if (!objective.empty()) return objective == "wall" ? Objective::kWall : Objective::kPeriod;
    return optimizer == kOptimizerSync ? Objective::kWall : Objective::kPeriod;
  }

  LowerOptions lower_options() const {
    return {optimizer, validate_at == "start" ? ValidateAt::kStart : ValidateAt::kFirstBackward};
  }

  /// `op_times`: keep every op's times (show draws them), or the figures only.
  IterationOptions options(bool op_times = true) const {
    IterationOptions o;
    o.op_times = op_times;
    o.iterations = iterations;
    if (state_latency >= 0) o.state_latency = *to_quanta(state_latency);
    if (allreduce_latency >= 0) o.allreduce_latency = *to_quanta(allreduce_latency);
    return o;
  }
};

// The lowered schedule's iterations back to back, printed under the single-iteration figures.
void print_iterations(std::ostream& out, const Schedule& s, const IterationTimeline& it) {
  out << "  optimizer    " << s.optimizer << ": " << it.iterations << " iterations back to back take "
      << format_quanta(it.period) << " each (bubble " << fixed(it.period_bubble_rate, 4) << "); one alone takes "
      << format_quanta(it.wall) << " first op to last step\n";
}

// What was minimised, and the wall clock against the ramp bound (what a synchronous step costs at least).
void print_objective(std::ostream& out, const std::string& objective, const Schedule& s, const Problem& pr,
                     const Timeline& t) {
  const Ticks bound = wall_lower_bound(pr, s.placement);
  out << "  objective    ";
  if (objective.empty()) out << "not recorded";
  else out << objective << " (" << (objective == "wall" ? "wall clock" : "span") << " minimised)";
  out << "; wall clock " << format_quanta(t.makespan) << " against the ramp bound " << format_quanta(bound) << " (gap "
      << fixed(bound > 0 ? static_cast<double>(t.makespan - bound) / bound : 0, 4) << ")\n";
}

// Every output goes through write_file_replacing: a failed write leaves the old file as it was.
bool write_file(const std::string& path, const std::string& text, std::ostream& err) {
  std::string why;
  if (write_file_replacing(path, text, &why)) return true;
  err << "zbplan: cannot write " << why << "\n";
  return false;
}

// Prints the diagnostics, at most 50: a badly broken file should not bury the first error.
int fail(std::ostream& err, const std::vector<Diag>& diags) {
  size_t shown = 0;
  for (; shown < std::min<size_t>(diags.size(), 50) && diags[shown].more == 0; ++shown)
    err << "zbplan: " << format_diag(diags[shown]) << "\n";
  if (diag_count(diags) > shown) err << "zbplan: ... and " << diag_count(diags) - shown << " more\n";
  return kExitInvalid;
}

// Problem flags shared by `plan` (and, later, other subcommands that take a problem).
struct ProblemFlags {
  std::string problem_file;
  static constexpr int kUnset = std::numeric_limits<int>::min();  // flag not given: keep the file's value
  int p = kUnset, m = kUnset, chunks = kUnset;
  std::string tf, tb, tw, mem_b, mem_w, mem_limit;
  double tcomm = -1;
  bool tcomm_given = false;
  bool require_times = true;  ///< plan needs real times; import may use placeholders

  void add_to(CLI::App* app) {
    app->add_option("--problem", problem_file, "problem JSON file (schema/problem.schema.json); flags override it")->check(file_name());
    // The problem's own checks (p >= 1, t_f > 0, ...) come after, with the file's: these check the form.
    const auto whole = integer_in(std::numeric_limits<int>::min() + 1, std::numeric_limits<int>::max());
    app->add_option("-p,--stages", p, "pipeline stages")->check(whole);
    app->add_option("-m,--microbatches", m, "microbatches per iteration")->check(whole);
    add_times(app, "time of one F: one number, or one per stage \"a,b,c,...\"", "time of one B (input gradient), as --tf",
              "time of one W (weight gradient), as --tf", "latency of one hop between neighbouring stages",
              "activation memory one F adds (M_B), as --tf (default 1)",
              "memory kept from B until W (M_W), as --tf (default 0.5)",
              "activation memory limit per stage: a number, or a multiple of p*M_B like 1p, 1.5p, 2p");
    app->add_option("--chunks", chunks, "model chunks per stage (interleaved schedules)")->check(whole);
  }

  // The flags plan and import share (import's help is shorter: the CSV gives the shape).
  void add_times(CLI::App* app, const char* tf_help, const char* tb_help, const char* tw_help, const char* tcomm_help,
                 const char* mem_b_help, const char* mem_w_help, const char* mem_limit_help) {
    const auto list = real_list_in(-kAnyReal, kAnyReal);
    app->add_option("--tf", tf, tf_help)->check(list);
    app->add_option("--tb", tb, tb_help)->check(list);
    app->add_option("--tw", tw, tw_help)->check(list);
    app->add_option("--tcomm", tcomm, tcomm_help)->check(real_in(-kAnyReal, kAnyReal));
    app->add_option("--mem-b", mem_b, mem_b_help)->check(list);
    app->add_option("--mem-w", mem_w, mem_w_help)->check(list);
    app->add_option("--mem-limit", mem_limit, mem_limit_help);
  }

  // Fills a ProblemInput from the file (if any) and the flags; false with diagnostics.
  bool to_input(ProblemInput* in, std::vector<Diag>* diags) const {
    if (!problem_file.empty() && !load_problem_file(problem_file, in, diags)) return false;
    if (p != kUnset) in->p = p;
    if (m != kUnset) in->m = m;
    if (chunks != kUnset) in->chunks = chunks;
    bool ok = true;
    auto list = [&](const std::string& text, const char* flag, std::vector<double>* target) {
      if (text.empty()) return;
      // Checked when the command line was parsed (real_list_in); this reads the same way.
      if (std::string bad = parse_real_list(text, -kAnyReal, kAnyReal, target); !bad.empty()) {
        diags->push_back({"", "", -1, -1, "", std::string(flag) + ": " + bad});
        ok = false;
      }
    };
    list(tf, "--tf", &in->t_f);
    list(tb, "--tb", &in->t_b);
    list(tw, "--tw", &in->t_w);
    list(mem_b, "--mem-b", &in->mem_b);
    list(mem_w, "--mem-w", &in->mem_w);
    if (tcomm_given) in->t_comm = tcomm;
    if (!mem_limit.empty()) in->mem_limit = mem_limit;
    if (problem_file.empty() && (p == kUnset || m == kUnset || (require_times && (tf.empty() || tb.empty() || tw.empty())))) {
      diags->push_back({"", "", -1, -1, "", "give the problem with --problem FILE, or with -p, -m, --tf, --tb and --tw"});
      ok = false;
    }
    return ok;
  }
};

// Simulates a planned (or imported) schedule, one iteration and, when lowered, several back to
// back; writes the file with both and prints the figures.
int write_planned(const PlanResult& planned, const IterationFlags& iteration_flags, const std::string& output,
                  std::ostream& out, std::ostream& err) {
  std::vector<Diag> diags;
  const Schedule& schedule = planned.schedule;
  auto timeline = simulate_timeline(schedule, planned.problem, &diags);
  if (!timeline) return fail(err, diags);
  std::optional<IterationTimeline> iterations;
  if (schedule.level == kLevelLowered) {
    iterations = simulate_iterations(schedule, planned.problem, iteration_flags.options(false), &diags);
    if (!iterations) return fail(err, diags);
  }
  const Objective objective = iteration_flags.objective_or_default();
  const Ticks bound = wall_lower_bound(planned.problem, schedule.placement);
  // Written as it is made: a big schedule's text is never held whole.
  ReplacingFile file;
  std::string why;
  auto to_file = [&](std::string_view piece) { return file.write(piece, &why); };
  if (!file.open(output, &why) ||
      !write_schedule_json(schedule, planned.problem, *timeline, to_file, iterations ? &*iterations : nullptr,
                           objective_name(objective), bound, planned.solver.status.empty() ? nullptr : &planned.solver) ||
      !file.commit(&why)) {
    err << "zbplan: cannot write " << why << "\n";
    return kExitInvalid;
  }
  out << "wrote " << output << "\n";
  for (const auto& note : planned.notes) out << "  " << note << "\n";
  print_figures(out, schedule, planned.problem, *timeline);
  if (iterations) print_iterations(out, schedule, *iterations);
  print_objective(out, objective_name(objective), schedule, planned.problem, *timeline);
  return 0;
}

int cmd_plan(const std::string& method, const ProblemFlags& flags, const IterationFlags& iteration_flags,
             const std::string& output, bool compute_only, const PlanOptions& options, std::ostream& out,
             std::ostream& err) {
  std::vector<Diag> diags;
  ProblemInput input;
  if (!flags.to_input(&input, &diags)) return fail(err, diags);
  auto problem = build_problem(input, flags.problem_file, &diags);
  if (!problem) return fail(err, diags);
  PlanOptions with_objective = options;
  with_objective.objective = iteration_flags.objective_or_default();
  if (method == "auto" && !compute_only) {
    // auto ranks lowered candidates by their true cost, under each optimizer placement it may choose.
    with_objective.iterations = iteration_flags.options();
    with_objective.lowerings = {iteration_flags.lower_options()};
    if (!iteration_flags.optimizer_given)
      with_objective.lowerings = {{kOptimizerPostValidation, ValidateAt::kFirstBackward},
                                  {kOptimizerPostValidation, ValidateAt::kStart},
                                  {kOptimizerSync, ValidateAt::kFirstBackward}};
  }
  auto planned = plan_schedule(*problem, method, &diags, with_objective);
  if (!planned) return fail(err, diags);
  if (!compute_only && planned->schedule.level != kLevelLowered &&
      !lower_planned(&*planned, &diags, iteration_flags.lower_options()))
    return fail(err, diags);
  return write_planned(*planned, iteration_flags, output, out, err);
}

// Loads, validates and simulates a schedule file; the shared first half of simulate and validate.
std::optional<std::pair<ScheduleFile, Timeline>> load_checked(const std::string& path, std::ostream& err) {
  std::vector<Diag> diags;
  auto file = load_schedule_file(path, &diags);
  if (!file) {
    fail(err, diags);
    return std::nullopt;
  }
  diags = validate(file->schedule, file->problem, path);
  std::optional<Timeline> timeline;
  if (diags.empty()) timeline = simulate_timeline(file->schedule, file->problem, &diags);
  if (timeline) diags = check_recorded_figures(*file, *timeline, path);
  if (!diags.empty()) {
    fail(err, diags);
    const size_t errors = diag_count(diags);
    err << "zbplan: " << path << ": invalid schedule (" << errors << " error" << (errors == 1 ? "" : "s") << ")\n";
    return std::nullopt;
  }
  for (const Diag& d : validate_warnings(file->schedule, path)) err << "zbplan: " << format_diag(d) << "\n";
  return std::make_pair(std::move(*file), std::move(*timeline));
}

int cmd_simulate(const std::string& path, const std::string& trace_path, const IterationFlags& iteration_flags,
                 std::ostream& out, std::ostream& err) {
  auto loaded = load_checked(path, err);
  if (!loaded) return kExitInvalid;
  const auto& [file, timeline] = *loaded;
  out << path << "\n";
  print_figures(out, file.schedule, file.problem, timeline);
  if (file.schedule.level == kLevelLowered) {
    std::vector<Diag> diags;
    auto iterations = simulate_iterations(file.schedule, file.problem, iteration_flags.options(false), &diags);
    if (!iterations) return fail(err, diags);
    print_iterations(out, file.schedule, *iterations);
  }
  print_objective(out, file.objective, file.schedule, file.problem, timeline);
  if (!trace_path.empty()) {
    Schedule timed = compute_projection(file.schedule);  // the Timeline indexes compute ops
    if (!write_file(trace_path, timeline_trace(timed, timeline).dump() + "\n", err)) return kExitInvalid;
    out << "wrote trace " << trace_path << " (open in ui.perfetto.dev)\n";
  }
  return 0;
}

int cmd_validate(const std::string& path, std::ostream& out, std::ostream& err) {
  auto loaded = load_checked(path, err);
  if (!loaded) return kExitInvalid;
  const auto& s = loaded->first.schedule;
  size_t ops = 0;
  for (const auto& stage : s.stages) ops += stage.size();
  out << path << ": ok (" << s.method << ", " << s.level << ", p=" << s.p << ", m=" << s.m << ", chunks=" << s.chunks
      << ", " << ops << " ops)\n";
  return 0;
}


// The measured spans of a zbrun --trace file (see measured_from_trace_text).
std::optional<MeasuredRun> load_measured(const std::string& path, int p, std::vector<Diag>* diags) {
  std::string text;
  if (!read_text_file(path, &text, diags)) return std::nullopt;
  return measured_from_trace_text(text, path, p, diags);
}

// K iterations of a lowered schedule as one picture: each stage's list repeated K times, timed by
// the k-iteration simulation, so `show` draws how iterations overlap (or do not).
std::pair<Schedule, Timeline> repeated(const Schedule& s, const Timeline& one, const IterationTimeline& it) {
  Schedule big = s;
  Timeline t;
  t.ops.resize(s.p);
  t.busy.assign(s.p, 0);
  t.peak_memory = one.peak_memory;
  for (int st = 0; st < s.p; ++st) {
    big.stages[st].clear();
    for (int k = 0; k < it.iterations; ++k)
      for (size_t i = 0; i < s.stages[st].size(); ++i) {
        big.stages[st].push_back(s.stages[st][i]);
        if (is_compute(s.stages[st][i].type)) t.ops[st].push_back(it.ops[k][st][i]);
      }
    t.makespan = std::max(t.makespan, t.ops[st].back().end);
  }
  return {big, t};
}

int cmd_show(const std::string& path, const std::string& output, int width, const std::string& measured_path,
             const IterationFlags& iteration_flags, bool show_iterations, std::ostream& out, std::ostream& err) {
  auto loaded = load_checked(path, err);
  if (!loaded) return kExitInvalid;
  const auto& [file, one] = *loaded;
  Schedule drawn = file.schedule;
  Timeline timeline = one;
  RenderOptions options;
  options.width = width;
  if (show_iterations) {
    if (file.schedule.level != kLevelLowered) {
      err << "zbplan: show: " << path << ": --iterations needs a lowered file (one with the optimizer's ops)\n";
      return kExitUsage;
    }
    std::vector<Diag> diags;
    auto it = simulate_iterations(file.schedule, file.problem, iteration_flags.options(), &diags);
    if (!it) return fail(err, diags);
    std::tie(drawn, timeline) = repeated(file.schedule, one, *it);
    options.title = file.schedule.method + " (p=" + std::to_string(file.schedule.p) + ", m=" +
                    std::to_string(file.schedule.m) + "): " + std::to_string(it->iterations) + " iterations, optimizer " +
                    file.schedule.optimizer;
    options.figures = "period " + format_quanta(it->period) + "   bubble rate " + fixed(it->period_bubble_rate, 4) +
                      "   one iteration alone " + format_quanta(it->wall);
  }
  std::optional<MeasuredRun> measured;
  if (!measured_path.empty()) {
    std::vector<Diag> diags;
    measured = load_measured(measured_path, file.schedule.p, &diags);
    if (!measured) return fail(err, diags);
    options.measured = &*measured;
  }
  bool html = output.size() >= 5 && output.substr(output.size() - 5) == ".html";
  bool svg = output.size() >= 4 && output.substr(output.size() - 4) == ".svg";
  if (!html && !svg) {
    err << "zbplan: show: " << output << ": the output must end in .svg or .html\n";
    return kExitUsage;
  }
  std::string text = html ? render_html(drawn, file.problem, timeline, options)
                          : render_svg(drawn, file.problem, timeline, options);
  if (!write_file(output, text, err)) return kExitInvalid;
  out << "wrote " << output << "\n";
  return 0;
}

int cmd_export(const std::string& path, const std::string& format, const std::string& output, std::ostream& out,
               std::ostream& err) {
  if (format != "pytorch-csv") {
    err << "zbplan: export: unknown format '" << format << "' (known: pytorch-csv)\n";
    return kExitUsage;
  }
  auto loaded = load_checked(path, err);
  if (!loaded) return kExitInvalid;
  if (!write_file(output, export_pytorch_csv(loaded->first.schedule), err)) return kExitInvalid;
  out << "wrote " << output << " (PyTorch pipelining CSV: one row per rank; I = our B, B = our BW)\n";
  return 0;
}

int cmd_import(const std::string& path, const ProblemFlags& flags, const IterationFlags& iteration_flags,
               const std::string& output, bool compute_only, std::ostream& out, std::ostream& err) {
  std::vector<Diag> diags;
  std::string text;
  if (!read_text_file(path, &text, &diags)) return fail(err, diags);
  auto imported = import_pytorch_csv(text, path, &diags);
  if (!imported) return fail(err, diags);
  // The CSV fixes the shape; times and memory come from the flags (placeholders 1/1/1 otherwise).
  ProblemInput input;
  ProblemFlags shaped = flags;
  shaped.require_times = false;
  shaped.p = imported->p;
  shaped.m = imported->m;
  shaped.chunks = imported->chunks;
  if (!shaped.to_input(&input, &diags)) return fail(err, diags);
  input.placement = imported->placement;
  auto problem = build_problem(input, path, &diags);
  if (!problem) return fail(err, diags);
  diags = validate(*imported, *problem, path);
  if (!diags.empty()) return fail(err, diags);
  if (!compute_only && !check_message_order(*imported, path, &diags)) return fail(err, diags);
  PlanResult planned{*imported, *problem, {}, {}};
  if (!compute_only && !lower_planned(&planned, &diags, iteration_flags.lower_options())) return fail(err, diags);
  return write_planned(planned, iteration_flags, output, out, err);
}

}  // namespace

// The paper's names for schedules, as --method accepts them (any case): ZB-1p and ZB-2p are the
// heuristic at 1p and 2p memory (section 3.1).
struct MethodAlias {
  const char* name;
  const char* method;
  const char* mem_limit;  ///< the memory limit the name implies, or null
};
constexpr MethodAlias kMethodAliases[] = {{"zb-1p", "heuristic", "1p"}, {"zb-2p", "heuristic", "2p"}};

// Levenshtein distance, for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// --method in any case, a method or one of the paper's names; anything else is a usage error that
// names the closest known name.
CLI::Validator method_name() {
  return CLI::Validator(
      [](std::string& value) {
        std::string lower = value;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        std::vector<std::string> known = plan_methods();
        for (const auto& alias : kMethodAliases) known.push_back(alias.name);
        if (std::find(known.begin(), known.end(), lower) != known.end()) {
          value = lower;
          return std::string();
        }
        std::string closest = known.front(), list;
        for (const auto& k : known) {
          if (edit_distance(lower, k) < edit_distance(lower, closest)) closest = k;
          list += (list.empty() ? "" : ", ") + k;
        }
        return "unknown method '" + value + "'" +
               (edit_distance(lower, closest) <= 3 ? "; did you mean '" + closest + "'?" : "") + " (known: " + list +
               ")";
      },
      "METHOD");
}

int run_zbplan(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"zbplan: plans zero-bubble pipeline schedules and checks schedule files"};
  app.require_subcommand(1);

  ProblemFlags flags;
  std::string method, output, file, trace;
  std::string method_help = "schedule method:";
  for (const auto& m : plan_methods()) method_help += " " + m;
  method_help += "; or the paper's names, in any case (ZB-H1, ZB-H2, 1F1B, ZB-V; ZB-1p and ZB-2p: the heuristic at "
                 "--mem-limit 1p and 2p)";
  auto* plan = app.add_subcommand("plan", "plan a schedule for a problem and write the schedule file");
  plan->add_option("--method", method, method_help)->required()->transform(method_name());
  flags.add_to(plan);
  plan->add_option("-o,--output", output, "schedule file to write")->required()->check(file_name());
  bool compute_only = false;
  PlanOptions plan_options;
  plan->add_option("--time-limit,--ilp-seconds", plan_options.time_limit,
                   "seconds for the ILP refinement: method ilp (default 10); auto runs the ILP only when given")
      ->check(real_in(0.01, 86400));
  plan->add_option("--threads", plan_options.threads, "CBC threads for the ILP (default 1)")->check(integer_in(1, 256));
  bool quiet = false;
  plan->add_flag("--quiet", quiet, "no ILP progress lines on stderr");
  plan->add_flag("--compute-only", compute_only,
                 "write F/B/W ops only (level \"compute\"); by default the file is lowered for zbrun: send/recv, buffer slots, optimizer step");
  IterationFlags plan_iterations, simulate_iterations_flags, import_iterations;
  plan_iterations.add_to(plan, true);

  auto* simulate = app.add_subcommand("simulate", "validate a schedule file and print its predicted timeline figures");
  simulate->add_option("file", file, "schedule file")->required();
  simulate->add_option("--trace", trace, "also write a Chrome/Perfetto trace of the predicted timeline")->check(file_name());
  simulate_iterations_flags.add_to(simulate, false);

  auto* validate_cmd = app.add_subcommand("validate", "check a schedule file; exit 1 with located errors if it is invalid");
  validate_cmd->add_option("file", file, "schedule file")->required();

  std::string show_out, show_measured, export_format = "pytorch-csv", export_out;
  int show_width = 0;
  auto* show = app.add_subcommand("show", "draw a schedule file as SVG or a self-contained HTML page");
  show->add_option("file", file, "schedule file")->required();
  show->add_option("-o,--output", show_out, "picture to write: .svg or .html")->required()->check(file_name());
  show->add_option("--width", show_width, "drawing width in px (default: wide enough to show every block)")
      ->check(integer_in(100, 200000));
  show->add_option("--measured", show_measured, "a zbrun --trace file: draw the measured run under the plan")->check(file_name());
  IterationFlags show_iterations_flags;
  show_iterations_flags.add_to(show, false);

  auto* export_cmd = app.add_subcommand("export", "write a schedule in another tool's format");
  export_cmd->add_option("file", file, "schedule file")->required();
  export_cmd->add_option("--format", export_format, "pytorch-csv (torch.distributed.pipelining)");
  export_cmd->add_option("-o,--output", export_out, "file to write")->required()->check(file_name());

  ProblemFlags import_flags;
  std::string import_out;
  bool import_compute_only = false;
  auto* import_cmd = app.add_subcommand("import", "read a PyTorch pipelining CSV into a schedule file");
  import_cmd->add_option("file", file, "CSV: one row per rank of actions like 0F0, 0I0, 0W0, 0B0")->required();
  import_flags.add_times(import_cmd, "time of one F (default 1), as for plan", "time of one B", "time of one W",
                         "latency of one hop", "M_B", "M_W", "memory limit");
  import_cmd->add_option("-o,--output", import_out, "schedule file to write")->required()->check(file_name());
  import_cmd->add_flag("--compute-only", import_compute_only, "do not lower");
  import_iterations.add_to(import_cmd, true);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp& e) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    // A subcommand's --help arrives here too, as a CallForHelp raised inside the subcommand.
    if (e.get_exit_code() == 0) {
      for (auto* sub : {plan, simulate, validate_cmd, show, export_cmd, import_cmd})
        if (sub->parsed()) {
          out << sub->help();
          return 0;
        }
      out << app.help();
      return 0;
    }
    err << "zbplan: " << e.what() << "\n" << "run 'zbplan --help' for usage\n";
    return kExitUsage;
  }
  flags.tcomm_given = plan->count("--tcomm") > 0;
  plan_iterations.optimizer_given = plan->count("--optimizer") + plan->count("--validate-at") > 0;

  for (const auto& alias : kMethodAliases) {
    if (!plan->parsed() || method != alias.name) continue;
    if (!flags.mem_limit.empty() && flags.mem_limit != alias.mem_limit) {
      err << "zbplan: --method " << alias.name << " is the heuristic at --mem-limit " << alias.mem_limit
          << ", not " << flags.mem_limit << ": drop --mem-limit, or use --method heuristic --mem-limit "
          << flags.mem_limit << "\nrun 'zbplan --help' for usage\n";
      return kExitUsage;
    }
    method = alias.method;
    flags.mem_limit = alias.mem_limit;
  }
  if (plan->parsed() && !quiet) plan_options.progress = [&err](const std::string& line) { err << line << std::endl; };
  if (plan->parsed()) return cmd_plan(method, flags, plan_iterations, output, compute_only, plan_options, out, err);
  if (simulate->parsed()) return cmd_simulate(file, trace, simulate_iterations_flags, out, err);
  if (show->parsed())
    return cmd_show(file, show_out, show_width, show_measured, show_iterations_flags, show->count("--iterations") > 0,
                    out, err);
  if (export_cmd->parsed()) return cmd_export(file, export_format, export_out, out, err);
  if (import_cmd->parsed()) {
    import_flags.tcomm_given = import_cmd->count("--tcomm") > 0;
    return cmd_import(file, import_flags, import_iterations, import_out, import_compute_only, out, err);
  }
  return cmd_validate(file, out, err);
}

}  // namespace zbpp
