// zbplan subcommands: plan, simulate, validate. Parses flags with CLI11, calls the library,
// prints figures or located errors. No planning logic here.
#include "cli/zbplan_cli.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/cli_file_name.h"
#include "cli/cli_numbers.h"
#include "core/output_file.h"
#include "core/schedule_json.h"
#include "core/simulate.h"
#include "core/simulate_iterations.h"
#include "core/trace.h"
#include "core/validate.h"
#include "io/export_csv.h"
#include "io/render_svg.h"
#include "planner/lower.h"
#include "planner/pipeline.h"

namespace zbpp {

namespace {

constexpr int kExitInvalid = kExitFailed;

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

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

// "  span bubble rate  ": a figure's name in the column the figures' values start at.
std::string label(const std::string& name) {
  return "  " + name + std::string(name.size() < 18 ? 18 - name.size() : 1, ' ');
}

// The figures `simulate` prints and `plan` summarises: one iteration of compute ops. Every bubble
// rate printed names the figure it is of: (figure - busy) / figure.
void print_figures(std::ostream& out, const Schedule& s, const Problem& pr, const Timeline& t) {
  out << label("method") << (s.method.empty() ? "?" : s.method) << " (p=" << s.p << ", m=" << s.m
      << ", chunks=" << s.chunks << ")\n";
  out << label("makespan") << format_quanta(t.makespan)
      << "  (one iteration's compute ops: first op start to last op end, any stage)\n";
  out << label("span") << format_quanta(t.span) << "  (longest stage, its first op to its last; the paper's cost)\n";
  out << label("span bubble rate") << fixed(t.span_bubble_rate, 4) << "  ((span - busy) / span; "
      << fixed(t.span_bubble_rate, 6) << ")\n";
  out << label("peak memory") << memory_list(t.peak_memory);
  if (pr.mem_limit)
    out << "  (limit " << mem_limit_text(pr) << ")";
  out << "\n";
}

// How iterations follow each other in a lowered schedule: the optimizer mode (plan, import) and
// the latencies of its messages (plan, import, simulate).
struct IterationFlags {
  std::string optimizer = optimizer_name(kOptimizerPostValidation);
  std::string post_validation_at = "first-backward";
  std::string objective;  ///< empty: period with post-validation, wall with sync
  bool optimizer_given = false;  ///< --optimizer or --post-validation-at given (else auto may choose them)
  int iterations = 3;
  double state_latency = -1, allreduce_latency = -1;

  // `drawn`: show's --iterations, which draws that many iterations (one when not given).
  void add_to(CLI::App* app, bool with_optimizer, bool drawn = false) {
    if (with_optimizer)
      app->add_option("--optimizer", optimizer,
                      "post-validation (each stage steps under the partial gradient state passed forward and is "
                      "post-validated, rolled back if need be, in the next iteration; paper section 4) or sync (one "
                      "all-reduce before every stage steps)")
          ->transform(one_of({optimizer_name(kOptimizerPostValidation), optimizer_name(kOptimizerSync)}, "optimizer"));
    if (with_optimizer)
      app->add_option("--objective", objective,
                      "what heuristic, ilp and auto minimise: period (the steady-state time per iteration of "
                      "iterations back to back; the default with post-validation) or wall (one iteration alone, first "
                      "op to last optimizer step; the default with --optimizer sync)")
          ->transform(one_of({"period", "wall"}, "objective"));
    if (with_optimizer) {
      const CLI::Validator place = one_of({"first-backward", "start"}, "place");
      CLI::Option* current =
          app->add_option("--post-validation-at", post_validation_at,
                          "post-validation: where each stage post-validates its previous step: first-backward (the "
                          "warm-up forwards run speculatively and are replayed after a rollback) or start (hold the "
                          "first forward until post-validated; for comparison)")
              ->transform(place);
      // The old spelling, kept working but not shown: "validate" now means the schedule checker only.
      app->add_option("--validate-at", post_validation_at, "deprecated spelling of --post-validation-at")
          ->transform(place)
          ->excludes(current)
          ->group("");
    }
    if (drawn)
      app->add_option("--iterations", iterations,
                      "draw K iterations back to back, timed by the K-iteration simulation (default: one iteration "
                      "alone); needs a lowered file")
          ->check(integer_in(2, 100))
          ->option_text("K")
          ->default_str("");
    else
      app->add_option("--iterations", iterations, "iterations simulated back to back for the period")
          ->check(integer_in(2, 100));
    app->add_option("--state-latency", state_latency, "time of one optimizer-state message between neighbours (default T_comm)")
        ->check(real_in(0, 1e9))
        ->default_str("");
    app->add_option("--allreduce-latency", allreduce_latency,
                    "time of the synchronous optimizer's all-reduce (default 2*ceil(log2 p)*T_comm)")
        ->check(real_in(0, 1e9))
        ->default_str("");
  }

  Objective objective_or_default() const {
    if (!objective.empty()) return objective == "wall" ? Objective::kWall : Objective::kPeriod;
    return optimizer == optimizer_name(kOptimizerSync) ? Objective::kWall : Objective::kPeriod;
  }

  LowerOptions lower_options() const {
    return {parse_optimizer(optimizer).value_or(kOptimizerPostValidation),
            post_validation_at == "start" ? PostValidationAt::kStart : PostValidationAt::kFirstBackward};
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

// The lowered schedule's iterations back to back (the optimizer's ops included), printed under
// the single-iteration figures.
void print_iterations(std::ostream& out, const Schedule& s, const IterationTimeline& it) {
  out << label("period") << format_quanta(it.period) << "  (" << it.iterations << " iterations back to back, optimizer "
      << optimizer_name(s.optimizer) << "; period bubble rate " << fixed(it.period_bubble_rate, 4) << ")\n";
  out << label("wall") << format_quanta(it.wall) << "  (one iteration alone, first op to last optimizer step; wall "
      << "bubble rate " << fixed(it.wall_bubble_rate, 4) << ")\n";
}

// What the plan minimised and its figure: the period or the wall with the optimizer, or for a
// compute-only file the span or the makespan that stood for it; then the makespan against the
// ramp bound (what no schedule of this placement goes below).
void print_objective(std::ostream& out, const std::string& objective, const Schedule& s, const Problem& pr,
                     const Timeline& t, const IterationTimeline* it) {
  out << label("objective");
  if (objective.empty()) {
    out << "not recorded\n";
  } else {
    const bool wall = objective == "wall";
    out << objective << " (minimised)";
    if (it) {
      out << ": " << format_quanta(wall ? it->wall : it->period) << ", " << objective << " bubble rate "
          << fixed(wall ? it->wall_bubble_rate : it->period_bubble_rate, 4) << "\n";
    } else {
      const Cost stand_in = wall ? Cost::kMakespan : Cost::kSpan;
      const Ticks value = cost_of(t, stand_in);
      out << "; compute ops only, so the " << cost_name(stand_in) << " stands for it: " << format_quanta(value) << ", "
          << cost_name(stand_in) << " bubble rate " << fixed(bubble_rate_of_span(pr, value), 4) << "\n";
    }
  }
  const Ticks bound = wall_lower_bound(pr, s.placement);
  out << label("ramp bound") << format_quanta(bound) << "  (no makespan is shorter; this one's gap "
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
  std::string tf, tb, tw, mem_b, mem_w, mem_limit, placement;
  double tcomm = -1;
  bool tcomm_given = false;
  bool require_times = true;  ///< plan needs real times; import may use placeholders

  void add_to(CLI::App* app) {
    app->add_option("--problem", problem_file, "problem JSON file (schema/problem.schema.json); flags override it")->check(file_name());
    // The problem's own checks (p >= 1, t_f > 0, ...) come after, with the file's: these check the form.
    const auto whole = integer_in(std::numeric_limits<int>::min() + 1, std::numeric_limits<int>::max());
    // -p, -m, --tf, --tb and --tw are required without --problem (ProblemFlags::missing).
    app->add_option("-p,--stages", p, "pipeline stages (without --problem: required)")->check(whole)->default_str("");
    app->add_option("-m,--microbatches", m, "microbatches per iteration (without --problem: required)")
        ->check(whole)
        ->default_str("");
    add_times(app, "time of one F: one number, or one per stage \"a,b,c,...\" (without --problem: required)",
              "time of one B (input gradient), as --tf", "time of one W (weight gradient), as --tf",
              "latency of one hop between neighbouring stages (default 0)",
              "activation memory one F adds (M_B), as --tf (default 1)",
              "memory kept from B until W (M_W), as --tf (default 0.5)",
              "activation memory limit per stage: a number, or a multiple of p*M_B like 1p, 1.5p, 2p (default: none)");
    app->add_option("--chunks", chunks, "model chunks per stage (interleaved schedules; default 1)")
        ->check(whole)
        ->default_str("");
    app->add_option("--placement", placement,
                    "which virtual stages each stage holds: v (2 chunks: stage r holds r and 2p-1-r) or interleaved "
                    "(stage s holds s, s+p, ...); default: the method's own (heuristic with 2 chunks: v)")
        ->check(CLI::IsMember({"v", "interleaved"}));
  }

  // The flags a problem needs when no --problem file gives it, those missing: "-m and --tw".
  std::string missing() const {
    if (!problem_file.empty()) return "";
    std::vector<std::string> names;
    if (p == kUnset) names.push_back("-p (stages)");
    if (m == kUnset) names.push_back("-m (microbatches)");
    if (require_times) {
      if (tf.empty()) names.push_back("--tf");
      if (tb.empty()) names.push_back("--tb");
      if (tw.empty()) names.push_back("--tw");
    }
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
      out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return out;
  }

  // The flags plan and import share (import's help is shorter: the CSV gives the shape).
  void add_times(CLI::App* app, const char* tf_help, const char* tb_help, const char* tw_help, const char* tcomm_help,
                 const char* mem_b_help, const char* mem_w_help, const char* mem_limit_help) {
    const auto list = real_list_in(-kAnyReal, kAnyReal);
    app->add_option("--tf", tf, tf_help)->check(list);
    app->add_option("--tb", tb, tb_help)->check(list);
    app->add_option("--tw", tw, tw_help)->check(list);
    app->add_option("--tcomm", tcomm, tcomm_help)->check(real_in(-kAnyReal, kAnyReal))->default_str("");
    app->add_option("--mem-b", mem_b, mem_b_help)->check(list);
    app->add_option("--mem-w", mem_w, mem_w_help)->check(list);
    app->add_option("--mem-limit", mem_limit, mem_limit_help)->transform(memory_limit_value());
  }

  // --mem-limit: a number, or a multiple of p*M_B ("2p", "2P"), read by the one number parser;
  // whether it is big enough is the problem's check.
  static CLI::Validator memory_limit_value() {
    return CLI::Validator(
        [](std::string& text) {
          const bool multiple = !text.empty() && (text.back() == 'p' || text.back() == 'P');
          double v = 0;
          if (!parse_real(multiple ? text.substr(0, text.size() - 1) : text, -kAnyReal, kAnyReal, false, &v).empty())
            return "'" + text + "' is neither a number nor a multiple of p*M_B like 1p, 1.5p or 2p";
          if (v <= 0) return "'" + text + "' must be above 0";
          if (multiple) text.back() = 'p';
          return std::string();
        },
        "LIMIT");
  }

  // Fills a ProblemInput from the file (if any) and the flags; false with diagnostics.
  bool to_input(ProblemInput* in, std::vector<Diag>* diags) const {
    if (!problem_file.empty() && !load_problem_file(problem_file, in, diags)) return false;
    if (p != kUnset) in->p = p;
    if (m != kUnset) in->m = m;
    if (chunks != kUnset) in->chunks = chunks;
    bool ok = true;
    // The placement is built once p and chunks are known; build_problem checks those first.
    if (!placement.empty() && in->p >= 1 && in->p <= kMaxStages && in->chunks >= 1 && in->chunks <= kMaxChunks) {
      if (placement == "v" && in->chunks != 2) {
        diags->push_back({"", "", -1, -1, "", "--placement v holds 2 chunks per stage (stage r: virtual stages r and "
                                              "2p-1-r): give --chunks 2 (the problem has chunks = " +
                                              std::to_string(in->chunks) + ")"});
        ok = false;
      } else {
        in->placement = placement == "v" ? v_shape_placement(in->p) : interleaved_placement(in->p, in->chunks);
      }
    }
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
    return ok;
  }
};

// Simulates a planned (or imported) schedule, one iteration and, when lowered, several back to
// back; writes the file with both and prints the figures.
int write_planned(const PlanResult& planned, const IterationFlags& iteration_flags, const std::string& output,
                  std::ostream& out, std::ostream& err) {
  std::vector<Diag> diags;
  const Schedule& schedule = planned.schedule;
  // A plan lowered by the pipeline was timed there, with the same options; the first of its
  // iterations back to back gives the one iteration's figures.
  std::optional<IterationTimeline> iterations = planned.iterations;
  if (schedule.level == kLevelLowered && !iterations) {
    iterations = simulate_iterations(schedule, planned.problem, iteration_flags.options(false), &diags);
    if (!iterations) return fail(err, diags);
  }
  auto timeline = iterations ? std::optional<Timeline>(iterations->first)
                             : simulate_timeline(schedule, planned.problem, &diags);
  if (!timeline) return fail(err, diags);
  const Objective objective = iteration_flags.objective_or_default();
  const Ticks bound = wall_lower_bound(planned.problem, schedule.placement);
  // Written as it is made: a big schedule's text is never held whole. From about a megabyte on
  // (some 16,000 ops) a second thread writes each piece while the next is made.
  ReplacingFile file;
  std::string why;
  size_t ops = 0;
  for (const auto& stage : schedule.stages) ops += stage.size();
  std::optional<BackgroundWriter> background;  // destroyed (joined) before the file
  auto to_file = [&](std::string_view piece) {
    return background ? background->write(piece, &why) : file.write(piece, &why);
  };
  bool written = file.open(output, &why);
  if (written && ops >= (1u << 14)) background.emplace(&file);
  written = written &&
            write_schedule_json(schedule, planned.problem, *timeline, to_file, iterations ? &*iterations : nullptr,
                                objective_name(objective), bound, planned.solver.status.empty() ? nullptr : &planned.solver) &&
            (!background || background->finish(&why)) && file.commit(&why);
  if (!written) {
    err << "zbplan: cannot write " << why << "\n";
    return kExitInvalid;
  }
  out << "wrote " << output << "\n";
  for (const auto& note : planned.notes) out << "  " << note << "\n";
  print_figures(out, schedule, planned.problem, *timeline);
  if (iterations) print_iterations(out, schedule, *iterations);
  print_objective(out, objective_name(objective), schedule, planned.problem, *timeline,
                  iterations ? &*iterations : nullptr);
  return 0;
}

// After a fixed method's schedule went over the memory limit: the limit it needs, and whether the
// heuristic, which plans under the limit, fits. "" when the failure was something else.
std::string memory_hint(const Problem& problem, const std::string& method, const PlanOptions& options,
                        const std::vector<Diag>& failed) {
  const std::string header = "the " + method + " schedule does not fit this problem:";
  if (!problem.mem_limit || failed.empty() || failed[0].message != header || method == "heuristic" || method == "ilp")
    return "";
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

int cmd_plan(const std::string& method, const ProblemFlags& flags, const IterationFlags& iteration_flags,
             const std::string& output, bool compute_only, const PlanOptions& options, std::ostream& out,
             std::ostream& err) {
  if (std::string missing = flags.missing(); !missing.empty())
    return usage_error(err, "zbplan", "plan",
                       "no " + missing + ": give the problem with -p, -m, --tf, --tb and --tw, or with --problem FILE");
  std::vector<Diag> diags;
  ProblemInput input;
  if (!flags.to_input(&input, &diags)) return fail(err, diags);
  auto problem = build_problem(input, flags.problem_file, &diags);
  if (!problem) return fail(err, diags);
  PlanOptions with_objective = options;
  with_objective.objective = iteration_flags.objective_or_default();
  with_objective.iterations = iteration_flags.options();
  if (!compute_only) {
    // Ranked by the true cost under the lowering it will have; auto tries each optimizer
    // placement the user did not fix.
    with_objective.lowerings = {iteration_flags.lower_options()};
    if (method == "auto" && !iteration_flags.optimizer_given)
      with_objective.lowerings = {{kOptimizerPostValidation, PostValidationAt::kFirstBackward},
                                  {kOptimizerPostValidation, PostValidationAt::kStart},
                                  {kOptimizerSync, PostValidationAt::kFirstBackward}};
  }
  auto planned = plan_schedule(*problem, method, &diags, with_objective);
  if (!planned) {
    fail(err, diags);
    if (std::string hint = memory_hint(*problem, method, options, diags); !hint.empty()) err << "zbplan: " << hint << "\n";
    return kExitInvalid;
  }
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
  std::optional<Timeline> timeline = check_schedule_file(*file, path, &diags);
  if (!timeline) {
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
  std::optional<IterationTimeline> iterations;
  if (file.schedule.level == kLevelLowered) {
    std::vector<Diag> diags;
    iterations = simulate_iterations(file.schedule, file.problem, iteration_flags.options(false), &diags);
    if (!iterations) return fail(err, diags);
    print_iterations(out, file.schedule, *iterations);
  }
  print_objective(out, file.objective, file.schedule, file.problem, timeline, iterations ? &*iterations : nullptr);
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
  out << path << ": ok (" << s.method << ", " << level_name(s.level) << ", p=" << s.p << ", m=" << s.m << ", chunks=" << s.chunks
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
      err << "zbplan: show: " << path << ": --iterations needs a lowered file (one with the optimizer's ops): plan it "
          << "without --compute-only, or drop --iterations\n";
      return kExitInvalid;
    }
    std::vector<Diag> diags;
    auto it = simulate_iterations(file.schedule, file.problem, iteration_flags.options(), &diags);
    if (!it) return fail(err, diags);
    std::tie(drawn, timeline) = repeated(file.schedule, one, *it);
    options.title = file.schedule.method + " (p=" + std::to_string(file.schedule.p) + ", m=" +
                    std::to_string(file.schedule.m) + "): " + std::to_string(it->iterations) + " iterations, optimizer " +
                    optimizer_name(file.schedule.optimizer);
    options.figures = "period " + format_quanta(it->period) + "   period bubble rate " +
                      fixed(it->period_bubble_rate, 4) + "   one iteration alone (wall) " + format_quanta(it->wall);
  }
  std::optional<MeasuredRun> measured;
  if (!measured_path.empty()) {
    std::vector<Diag> diags;
    measured = load_measured(measured_path, file.schedule.p, &diags);
    if (!measured) return fail(err, diags);
    options.measured = &*measured;
  }
  const bool html = ends_with(output, ".html");  // else .svg: the command line was checked (picture_name)
  std::string text = html ? render_html(drawn, file.problem, timeline, options)
                          : render_svg(drawn, file.problem, timeline, options);
  if (!write_file(output, text, err)) return kExitInvalid;
  out << "wrote " << output << "\n";
  return 0;
}

int cmd_export(const std::string& path, const std::string& output, std::ostream& out, std::ostream& err) {
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
  // The CSV fixes the shape; times and memory come from the flags, a time not given is 1 (said).
  ProblemInput input;
  ProblemFlags shaped = flags;
  shaped.require_times = false;
  shaped.p = imported->schedule.p;
  shaped.m = imported->schedule.m;
  shaped.chunks = imported->schedule.chunks;
  if (!shaped.to_input(&input, &diags)) return fail(err, diags);
  input.placement = imported->schedule.placement;
  auto problem = build_problem(input, path, &diags);
  if (!problem) return fail(err, diags);
  diags = validate(imported->schedule, *problem, path);
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
  if (!compute_only && !check_message_order(*imported, path, &diags)) return fail(err, diags);
  PlanResult planned{imported->schedule, *problem, imported->notes, {}, std::nullopt};
  if (!imported->messages.empty())
    planned.notes.push_back("import: " + std::to_string(imported->messages.size()) +
                            " SEND_F/RECV_F/SEND_B/RECV_B cells match the messages zbplan's lowering sends; dropped" +
                            (compute_only ? " (--compute-only)" : ", and the schedule lowered again"));
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

}  // namespace

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

int run_zbplan(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
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
  plan->add_option("--time-limit,--ilp-seconds", plan_options.time_limit,
                   "seconds for the ILP refinement: method ilp (default 10); auto runs the ILP only when given")
      ->check(real_in(0.01, 86400))
      ->default_str("");
  plan->add_option("--threads", plan_options.threads, "CBC threads for the ILP")->check(integer_in(1, 256));
  bool quiet = false;
  plan->add_flag("--quiet", quiet, "no ILP progress lines on stderr");
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
  export_cmd->add_option("--format", export_format, "the format: pytorch-csv (torch.distributed.pipelining)")
      ->transform(one_of({"pytorch-csv"}, "format"));
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
  if (plan->parsed() && !quiet) plan_options.progress = [&err](const std::string& line) { err << line << std::endl; };
  if (plan->parsed()) return cmd_plan(method, flags, plan_iterations, output, compute_only, plan_options, out, err);
  if (simulate->parsed()) return cmd_simulate(file, trace, simulate_iterations_flags, out, err);
  if (show->parsed())
    return cmd_show(file, show_out, show_width, show_measured, show_iterations_flags, show->count("--iterations") > 0,
                    out, err);
  if (export_cmd->parsed()) return cmd_export(file, export_out, out, err);
  if (import_cmd->parsed()) {
    import_flags.tcomm_given = import_cmd->count("--tcomm") > 0;
    return cmd_import(file, import_flags, import_iterations, import_out, import_compute_only, out, err);
  }
  return cmd_validate(file, out, err);
}

}  // namespace zbpp
