// zbplan simulate, validate, show and export: the subcommands that read a schedule file, check
// it, and print its figures, draw it or write it in another tool's format.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/zbplan_commands.h"
#include "cli/zbplan_output.h"
#include "core/lowered.h"
#include "core/schedule_json.h"
#include "core/simulate.h"
#include "core/simulate_iterations.h"
#include "core/trace.h"
#include "core/validate.h"
#include "io/export_csv.h"
#include "io/render_svg.h"

namespace zbpp::zbplan {

namespace {

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

}  // namespace

int cmd_simulate(const std::string& path, const std::string& trace_path, const IterationFlags& iteration_flags,
                 std::ostream& out, std::ostream& err) {
  auto loaded = load_checked(path, err);
  if (!loaded) return kExitInvalid;
  const auto& [file, timeline] = *loaded;
  out << path << "\n";
  print_figures(out, file.schedule, file.problem, timeline);
  if (file.partition) {  // the layers each stage runs, as the file records them
    const auto& part = *file.partition;
    std::string ranges;
    for (size_t vs = 0; vs < part.partition.counts.size(); ++vs)
      ranges += (vs ? ", " : "") + shown_text(partition_range_text(part.costs, part.partition, static_cast<int>(vs)));
    out << "  partition         " << counts_text(part.partition) << " layers (" << ranges << "); no partition's plan costs less than "
        << format_quanta(partition_bound(part.costs, file.problem)) << "\n";
  }
  std::optional<IterationTimeline> iterations;
  if (file.schedule.level == Level::kLowered) {
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
  out << path << ": ok (" << shown_text(s.method) << ", " << level_name(s.level) << ", p=" << s.p << ", m=" << s.m << ", chunks=" << s.chunks
      << ", " << ops << " ops)\n";
  return 0;
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
  if (file.partition)  // each stage labelled with its layers, its chunks' ranges joined by " + "
    for (int st = 0; st < file.schedule.p; ++st) {
      std::string label;
      for (int c = 0; c < file.schedule.chunks; ++c) {
        const int vs = file.schedule.placement[static_cast<size_t>(st)][static_cast<size_t>(c)];
        label += (c ? " + " : "") + partition_range_text(file.partition->costs, file.partition->partition, vs);
      }
      options.stage_labels.push_back(shown_text(label));
    }
  if (show_iterations) {
    if (file.schedule.level != Level::kLowered) {
      err << "zbplan: show: " << path << ": --iterations needs a lowered file (one with the optimizer's ops): plan it "
          << "without --compute-only, or drop --iterations\n";
      return kExitInvalid;
    }
    std::vector<Diag> diags;
    auto it = simulate_iterations(file.schedule, file.problem, iteration_flags.options(), &diags);
    if (!it) return fail(err, diags);
    std::tie(drawn, timeline) = repeated(file.schedule, one, *it);
    options.title = shown_text(file.schedule.method) + " (p=" + std::to_string(file.schedule.p) + ", m=" +
                    std::to_string(file.schedule.m) + "): " + std::to_string(it->iterations) + " iterations, optimizer " +
                    optimizer_name(file.schedule.optimizer);
    options.figures = "period " + format_quanta(it->period) + "   period bubble rate " +
                      format_fixed(it->period_bubble_rate, 4) + "   one iteration alone (wall) " + format_quanta(it->wall);
  }
  std::optional<MeasuredRun> measured;
  if (!measured_path.empty()) {
    std::vector<Diag> diags;
    measured = load_measured(measured_path, file.schedule.p, &diags);
    if (!measured) return fail(err, diags);
    if (std::string other = measured_mismatch(*measured, compute_projection(file.schedule)); !other.empty()) {
      err << "zbplan: show: --measured " << measured_path << " is a trace of another schedule: " << other
          << " (draw it beside the schedule file zbrun ran, or run this one with zbrun --trace)\n";
      return kExitInvalid;
    }
    options.measured = &*measured;
  }
  const bool html = ends_with(output, ".html");  // else .svg: the command line was checked (picture_name)
  std::string text = html ? render_html(drawn, file.problem, timeline, options)
                          : render_svg(drawn, file.problem, timeline, options);
  if (!write_file(output, text, err)) return kExitInvalid;
  out << "wrote " << output;
  if (!html && svg_overview(drawn, options))
    out << " (an overview: neighbouring blocks under 5 px drawn as one; --width PX draws every block, an .html page "
           "zooms to each)";
  out << "\n";
  return 0;
}

int cmd_export(const std::string& path, const std::string& format, const std::string& output, std::ostream& out,
               std::ostream& err) {
  auto loaded = load_checked(path, err);
  if (!loaded) return kExitInvalid;
  if (format == "layout") {
    const auto& partition = loaded->first.partition;
    if (!partition) {
      err << "zbplan: export: " << path << ": the file records no partition of layers: plan it with --layers FILE "
          << "for --format layout\n";
      return kExitInvalid;
    }
    const Schedule& s = loaded->first.schedule;
    if (s.chunks > 1 && s.placement != interleaved_placement(s.p, s.chunks)) {
      err << "zbplan: export: " << path << ": Megatron-LM's layout puts virtual stage k on rank k mod p (interleaved); "
          << "this file's placement is not that one (a V, say): plan with 1f1b-i, or heuristic/ilp with --chunks and "
          << "--placement interleaved, for --format layout\n";
      return kExitInvalid;
    }
    std::string why;
    const std::string layout = megatron_layout(partition->costs, partition->partition, &why);
    if (layout.empty()) {
      err << "zbplan: export: " << path << ": " << why << "\n";
      return kExitInvalid;
    }
    if (!write_file(output, layout + "\n", err)) return kExitInvalid;
    out << "wrote " << output << " (Megatron-LM: --pipeline-model-parallel-size " << s.p
        << " --pipeline-model-parallel-layout \"" << layout << "\"" 
        << (s.chunks > 1 ? ", " + std::to_string(s.chunks) + " virtual stages per rank" : std::string()) << ")\n";
    return 0;
  }
  if (!write_file(output, export_pytorch_csv(loaded->first.schedule), err)) return kExitInvalid;
  out << "wrote " << output << " (PyTorch pipelining CSV: one row per rank; I = our B, B = our BW)\n";
  return 0;
}

}  // namespace zbpp::zbplan
