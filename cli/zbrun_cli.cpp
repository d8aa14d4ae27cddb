// zbrun's command line: parses the flags, has them and the inputs checked (zbrun_inputs.h), starts
// MPI and drives the launch mode's run, printing the steps' losses, planned vs measured bubble
// rates, metrics, the trace and the profile.
#include "cli/zbrun_cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/zbrun_inputs.h"
#include "core/lowered.h"
#include "core/output_file.h"
#include "core/schedule_json.h"
#include "core/simulate.h"
#include "core/simulate_iterations.h"
#include "core/trace.h"
#include "runtime/backend/cpu/compute_cpu.h"
#include "runtime/data.h"
#include "runtime/interpreter.h"
#include "runtime/profile_layers.h"
#include "runtime/trainer.h"
#ifdef ZBPP_HAVE_CUDA
#include "runtime/backend/cuda/compute_cuda.h"
#endif
#ifdef ZBPP_HAVE_MPI
#include <mpi.h>
#endif

namespace zbpp {

namespace zbrun {

namespace {

std::string g9(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string f4(double v) { return format_fixed(v, 4); }

// Writes the profile --profile asked for (times in ms, memory in MiB) from every rank's gathered
// figures, and says what each rank's GEMMs reached. "" or why not.
std::string write_profile(const Options& o, const ScheduleFile& file, const GptConfig& model, const RunSummary& sum,
                          std::ostream& out) {
  const Schedule& s = file.schedule;
  const int fields = RunSummary::kProfileFields;
  // Round to 1e-6 so the file holds exactly what zbplan will read.
  auto round6 = [](double v) { return std::round(v * 1e6) / 1e6; };
  nlohmann::json j;
  j["comment"] = "profiled by zbrun: model " + model.name + ", " + std::to_string(o.run.steps) + " steps of " + shown_text(s.method) +
                 "; times in ms (mean per op of one chunk), memory in MiB per microbatch";
  j["p"] = s.p;
  j["m"] = s.m;
  j["chunks"] = s.chunks;
  const char* names[fields] = {"t_f", "t_b", "t_w", "mem_b", "mem_w"};
  for (int f = 0; f < fields; ++f) {
    nlohmann::json list = nlohmann::json::array();
    for (int r = 0; r < s.p; ++r)
      list.push_back(round6(std::max(sum.profile[static_cast<size_t>(r) * fields + f], f < 2 ? 1e-6 : 0.0)));
    j[names[f]] = list;
  }
  // One latency per link (problem.h); one number where there is at most one link.
  nlohmann::json links = nlohmann::json::array();
  for (double l : sum.link_seconds) links.push_back(round6(l * 1e3));
  j["t_comm"] = links.size() > 1 ? links : links.empty() ? nlohmann::json(0.0) : links[0];
  std::string why;
  if (!write_file_replacing(o.profile, j.dump(2) + "\n", &why)) return "--profile: cannot write " + why;
  out << "wrote profile " << o.profile << " (plan with: zbplan plan --problem " << o.profile << " ...)\n";
  // The GEMM rate each op reached: its linear layers' FLOPs over its measured time (docs/benchmarks.md).
  for (int r = 0; r < s.p; ++r) {
    double flops = 0;  // per op of one chunk, as the times are
    for (int vs : s.placement[r]) flops += gemm_flops(model, vs, s.p * s.chunks) / s.chunks;
    const double* t = &sum.profile[static_cast<size_t>(r) * fields];  // ms
    char line[160];
    std::snprintf(line, sizeof line, "  rank %d: GEMM GFLOP/s  F %.1f  B %.1f  W %.1f  (%.4f GFLOP per op)\n", r,
                  flops / t[0] * 1e-6, flops / t[1] * 1e-6, flops / t[2] * 1e-6, flops * 1e-9);
    out << line;
  }
  return "";
}

// --profile-layers: measures the model's layer kinds alone (runtime/profile_layers.h), prints a
// line for each and writes the layer-cost file. Exit code 0, or 1 with the message on `err`.
int profile_layers(const Options& o, std::ostream& out, std::ostream& err) {
  auto fail = [&err](const std::string& msg) {
    err << "zbrun: " << msg << "\n";
    return 1;
  };
  std::string why;
  auto model = load_gpt_config(o.model, &why);
  if (!model) return fail(why);
  if (std::string clash = output_clash({{"--model", o.model}}, {{"--profile-layers", o.profile_layers}}); !clash.empty())
    return fail(clash);
  if (std::string bad = check_writable_file(o.profile_layers); !bad.empty())
    return fail("--profile-layers: cannot write " + bad);
  ProfileLayersOptions po;
  po.backend = o.backend;
  po.repeats = o.profile_repeats;
  po.sm_parts = o.profile_sm_parts;
  po.seed = static_cast<std::uint64_t>(o.run.seed);
  auto kinds = profile_layer_kinds(*model, po, &why);
  if (!kinds) return fail(why);
  const std::string gpu = o.profile_sm_parts > 1
                              ? "CUDA backend (bf16), GPU 0, one of " + std::to_string(o.profile_sm_parts) + " SM partitions"
                              : std::string("CUDA backend (bf16), GPU 0");
  const std::string backend = o.backend == Backend::kCuda ? gpu
                                                  : "CPU backend, " + cpu_kernels() + ", " +
                                                        std::to_string(o.blas_threads) +
                                                        (o.blas_threads == 1 ? " thread" : " threads");
  const std::string how = backend + ", median of " + std::to_string(o.profile_repeats);
  for (const LayerCost& k : *kinds) {
    char line[240];
    std::snprintf(line, sizeof line,
                  "%-9s  F %9.4f ms  B %9.4f ms  W %9.4f ms  activations %.0f B (%.0f B after B), parameters %.0f B, "
                  "output %.0f B\n",
                  layer_kind_name(k.kind), k.t_f, k.t_b, k.t_w, k.activation_bytes, k.activation_bytes_w, k.parameter_bytes,
                  k.output_bytes);
    out << line;
  }
  if (!write_file_replacing(o.profile_layers, layer_costs_to_json(model_layer_costs(*model, *kinds, "zbrun --profile-layers, " + how)).dump(2) + "\n", &why))
    return fail("--profile-layers: cannot write " + why);
  out << "wrote " << o.profile_layers << " (model " << model->name << ": embedding, " << model->layers
      << " blocks, head; " << how << ")\n";
  return 0;
}

// Writes the trace --trace asked for: every rank's measured op spans of the last step, with the
// planned timeline beside. "" or why not.
std::string write_trace(const Options& o, const ScheduleFile& file, const Timeline& planned, const RunSummary& sum,
                        std::ostream& out) {
  const Schedule& s = file.schedule;
  Schedule compute = compute_projection(s);
  nlohmann::json events = timeline_trace_events(compute, planned, 0, "planned (" + shown_text(s.method) + ", problem time units as ms)");
  // The trace writer takes ticks as nanoseconds (1 tick = 1e-6 of a millisecond): seconds * 1e9.
  Timeline measured = planned;
  for (int r = 0; r < s.p; ++r)
    for (size_t k = 0; k < compute.stages[r].size(); ++k)
      measured.ops[r][k] = {static_cast<Ticks>(sum.trace_spans[sum.trace_offset[r] + 2 * k] * 1e9),
                            static_cast<Ticks>(sum.trace_spans[sum.trace_offset[r] + 2 * k + 1] * 1e9)};
  nlohmann::json more = timeline_trace_events(compute, measured, 1, "measured (last step, wall clock)");
  events.insert(events.end(), more.begin(), more.end());
  std::string why;
  if (!write_file_replacing(o.trace, nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n",
                            &why))
    return "--trace: cannot write " + why;
  out << "wrote trace " << o.trace << " (planned and measured; open in ui.perfetto.dev)\n";
  return "";
}

// What zbrun prints and writes as a run goes: rank 0's step lines, metrics and summary, and every
// rank's errors. Ranks call it from their threads, so every print holds the lock, and each is one
// write (std::cerr flushes every <<): under mpirun, lines of ranks stay whole.
class Printer : public RunObserver {
 public:
  Printer(const Options& o, const ScheduleFile& file, const GptConfig& model, const Timeline& planned,
          std::ostream& out, std::ostream& err)
      : o_(o), file_(file), model_(model), planned_(planned), out_(out), err_(err) {}

  void note(const std::string& line) override {
    std::lock_guard<std::mutex> lock(mu_);
    out_ << line << "\n";
  }

  void warn(const std::string& line) override {
    std::lock_guard<std::mutex> lock(mu_);
    err_ << "zbrun: " + line + "\n";
  }

  void failed(const RunError& error) override {
    std::lock_guard<std::mutex> lock(mu_);
    err_ << "zbrun: " + error.text + "\n";
  }

  std::string started(int rank, int first_step) override {
    if (rank != 0) return "";
    if (o_.run.resume && !o_.quiet) {
      std::lock_guard<std::mutex> lock(mu_);
      // Steps count from 0 in every line; a checkpoint file is named by how many steps it holds.
      out_ << "resumed from " << o_.run.checkpoint << " after step " << first_step - 1 << " (its step" << first_step
           << ".rank*.ckpt files: the state after " << first_step << " steps)\n";
    }
    // Streamed a line per step, so it can be followed; every write is checked.
    std::string why;
    if (!o_.metrics.empty() && !metrics_.open(o_.metrics, o_.run.resume, &why)) return "--metrics: cannot write " + why;
    return "";
  }

  std::string step_done(int rank, const StepReport& report) override {
    if (rank != 0) return "";
    std::lock_guard<std::mutex> lock(mu_);
    std::string notes = report.skipped ? " (skipped: non-finite gradient)" : "";
    if (report.replays > 0) notes += " (replayed: the previous step was rolled back and redone)";
    if (report.held) notes += " (forwards held until validation)";
    const double planned_rate = planned_.span_bubble_rate;
    if (!o_.quiet)
      out_ << "step " << report.step << ": loss " << g9(report.loss) << notes << ", " << f4(report.seconds)
           << " s, span bubble rate " << f4(report.measured_span_bubble_rate) << " measured / " << f4(planned_rate) << " planned\n";
    if (!metrics_.is_open()) return "";
    // JSON has no nan or inf: such a figure is written null, and "nonfinite" says one was.
    bool nonfinite = false;
    auto number = [&nonfinite](double v) {
      nonfinite = nonfinite || !std::isfinite(v);
      return std::isfinite(v) ? g9(v) : std::string("null");
    };
    std::ostringstream line;
    line << "{\"step\": " << report.step << ", \"loss\": " << number(report.loss) << ", \"iteration_seconds\": "
         << number(report.seconds) << ", \"measured_span_bubble_rate\": " << number(report.measured_span_bubble_rate)
         << ", \"planned_span_bubble_rate\": " << number(planned_rate) << ", \"grad_norm\": " << number(report.grad_norm)
         << ", \"skipped\": " << (report.skipped ? "true" : "false") << ", \"replays\": " << report.replays
         << ", \"held\": " << (report.held ? "true" : "false") << ", \"nonfinite\": " << (nonfinite ? "true" : "false")
         << "}\n";
    std::string why;
    return metrics_.write(line.str(), &why) ? "" : "--metrics: cannot write " + why;
  }

  std::string trace_gathered(int rank, const RunSummary& sum) override {
    if (rank != 0) return "";
    std::lock_guard<std::mutex> lock(mu_);
    return write_trace(o_, file_, planned_, sum, out_);
  }

  std::string profile_gathered(int rank, const RunSummary& sum) override {
    if (rank != 0) return "";
    std::lock_guard<std::mutex> lock(mu_);
    return write_profile(o_, file_, model_, sum, out_);
  }

  std::string finished(int rank, const RunSummary& sum) override {
    if (rank != 0) return "";
    std::lock_guard<std::mutex> lock(mu_);
    const double period = sum.period_gaps > 0 ? sum.measured_period : 0;
    if (metrics_.is_open()) {
      // The last line, then the checked close: until then the run has not succeeded.
      std::string last = "{\"final\": true, \"weights_digest\": \"" + sum.weights_digest +
                         "\", \"measured_period_seconds\": " + g9(period) + "}\n";
      std::string why;
      if (!metrics_.write(last, &why) || !metrics_.close(&why)) return "--metrics: cannot write " + why;
    }
    print_summary(sum);
    return "";
  }

 private:
  void print_summary(const RunSummary& sum) {
    const Schedule& s = file_.schedule;
    if (o_.quiet) {
      print_result_line(sum);
      return;
    }
    out_ << "done: " << o_.run.steps << " steps of " << shown_text(s.method) << " on " << s.p << " ranks (p=" << s.p << ", m=" << s.m
         << ", chunks=" << s.chunks << "), model " << model_.name << " (" << model_.layers << " layers)\n";
    // Which blocks each virtual stage ran, and who chose them.
    const LayerSplit split = layer_split(model_, s.p * s.chunks);
    out_ << "  blocks per virtual stage: ";
    for (size_t vs = 0; vs < split.count.size(); ++vs) out_ << (vs ? "/" : "") << split.count[vs];
    out_ << (file_.partition ? " (the schedule's partition)" : o_.layer_split.empty() ? " (even)" : " (--layer-split)")
         << "\n";
    if (sum.measured_steps > 0)
      out_ << "  iteration time " << f4(sum.mean_seconds) << " s (mean of steps " << sum.first_step + 1 << ".." << o_.run.steps - 1
           << "), span bubble rate " << f4(sum.mean_span_bubble_rate) << " measured / " << f4(planned_.span_bubble_rate)
           << " planned\n";
    // The plan's time per iteration in a run (issue 10): the steady-state period of iterations back
    // to back under this optimizer, beside one iteration alone; in the problem's unit (ms after --profile).
    std::vector<Diag> unused;
    IterationOptions figures;
    figures.op_times = false;
    auto it = simulate_iterations(s, file_.problem, figures, &unused);
    if (it)
      out_ << "  planned per iteration: period " << format_quanta(it->period) << " (steady state), one alone "
           << format_quanta(it->wall) << (file_.partition ? " ms (from the layer costs)\n" : " (in the problem's time unit)\n");
    if (sum.period_gaps > 0) {
      out_ << "  measured per iteration: period " << f4(sum.measured_period) << " s (steady state: steps "
           << sum.first_step + 1 << ".." << o_.run.steps - 1 << ", slowest rank)";
      if (o_.run.pace > 0 && it)
        out_ << " = " << f4(sum.measured_period / o_.run.pace) << " time units at --pace " << g9(o_.run.pace) << " s, planned "
             << format_quanta(it->period);
      out_ << "\n";
    }
    out_ << "  optimizer " << optimizer_name(s.optimizer);
    if (s.optimizer == Optimizer::kPostValidation)
      out_ << ": " << sum.rolled_back << " speculative step" << (sum.rolled_back == 1 ? "" : "s")
           << " rolled back and redone on rank " << sum.state_chain_start << "; " << sum.replays << " iteration"
           << (sum.replays == 1 ? "" : "s") << " replayed, " << sum.held << " held until validated";
    out_ << "\n";
    out_ << "  peak activation memory per rank: measured [";
    for (int r = 0; r < s.p; ++r) out_ << (r ? ", " : "") << f4(sum.peak_activation_bytes[r] / (1 << 20)) << " MiB";
    out_ << "], planned [";
    // Planned from layer costs, memory is in MiB and each stage has its limit: said beside the peak.
    for (int r = 0; r < s.p; ++r) {
      out_ << (r ? ", " : "") << format_quanta(planned_.peak_memory[r]);
      if (file_.partition) out_ << " MiB" << (file_.problem.limit(r) ? " of " + format_quanta(*file_.problem.limit(r)) : "");
    }
    out_ << (file_.partition ? "]" : "] (in the problem's memory unit)");
    if (file_.partition) {
      bool over = false;
      for (int r = 0; r < s.p; ++r) over = over || sum.peak_activation_bytes[r] / (1 << 20) > from_quanta(planned_.peak_memory[r]);
      out_ << (over ? ": measured ABOVE plan on some rank" : ": every rank within its plan");
    }
    out_ << "\n";
    out_ << "  " << digest_text(sum) << "\n";
  }

  // --quiet: the run's result in one line (what runs, the time per iteration and its bubble, the
  // weights' digest), e.g. "done: 20 steps of zb-h1 on 2 ranks, iteration time 0.0123 s (span
  // bubble rate 0.0052 measured / 0.0000 planned), weights digest 6f1c... (OpenBLAS ... kernels)".
  void print_result_line(const RunSummary& sum) {
    const Schedule& s = file_.schedule;
    out_ << "done: " << o_.run.steps << " steps of " << shown_text(s.method) << " on " << s.p << " ranks";
    if (sum.measured_steps > 0)
      out_ << ", iteration time " << f4(sum.mean_seconds) << " s (span bubble rate " << f4(sum.mean_span_bubble_rate)
           << " measured / " << f4(planned_.span_bubble_rate) << " planned)";
    out_ << ", " << digest_text(sum) << "\n";
  }

  // "weights digest 6f1c... (OpenBLAS SkylakeX kernels)": the bits depend on the BLAS kernels, so
  // the CPU backend's digest says which gave them.
  std::string digest_text(const RunSummary& sum) const {
    return "weights digest " + sum.weights_digest + (o_.backend == Backend::kCpu ? " (" + cpu_kernels() + ")" : "");
  }

  const Options& o_;
  const ScheduleFile& file_;
  const GptConfig& model_;
  const Timeline& planned_;
  std::ostream& out_;
  std::ostream& err_;
  std::mutex mu_;
  StreamFile metrics_;  ///< rank 0's --metrics
};

// The driver's options: the flags it takes directly, and what the others ask of it.
RunOptions run_options(const Options& o) {
  RunOptions r = o.run;
  r.gather_trace = !o.trace.empty();
  r.profile = !o.profile.empty();
  return r;
}

}  // namespace

}  // namespace zbrun

int run_zbrun(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool use_mpi) {
  using namespace zbrun;
  CLI::App app{"zbrun: replays a zbplan schedule file, training a GPT with split backward (B and W)", "zbrun"};
  set_up_app(&app, "zbrun");
  Options o;
  add_flags(&app, &o);
  if (int code = parse_command_line(&app, argc, argv, out, err); code >= 0) return code;
  auto usage = [&err](const std::string& message) { return usage_error(err, "zbrun", "", message); };

  if (std::string bad = check_flags(&o); !bad.empty()) return usage(bad);
  cpu_set_threads(o.blas_threads);
  const bool cuda = o.backend == Backend::kCuda;
  if (cuda) {
    // Before the first CUDA call of the process, or they have no effect; set whatever the
    // environment asked (docs/gpu.md). Fewer hardware queues than streams (the default is 8; some
    // launchers set 1) serialise kernels of different streams, so a spinning NCCL kernel could hold
    // back the one its peer waits for; 32 is the most CUDA allows. Lazy module loading can block a
    // first kernel launch while an NCCL kernel spins waiting for its peer: load every module up front.
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  }
  // An output written to standard output (--trace /dev/stdout) keeps it to itself: what zbrun says
  // goes to standard error instead.
  const std::string* outputs[] = {&o.metrics, &o.trace, &o.profile, &o.profile_layers};
  std::ostream& said = std::any_of(std::begin(outputs), std::end(outputs),
                                   [](const std::string* path) { return is_standard_output(*path); })
                           ? err
                           : out;
  if (!o.profile_layers.empty()) return profile_layers(o, said, err);  // one process, no schedule, no MPI
  bool mpi = use_mpi && !o.local;
  int world_rank = 0, world_size = 1;
#ifdef ZBPP_HAVE_MPI
  if (mpi) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  }
#endif
  auto finish = [&](int code) {
#ifdef ZBPP_HAVE_MPI
    if (mpi) MPI_Finalize();
#endif
    return code;
  };
  auto fail = [&](const std::string& msg) {
    if (world_rank == 0) err << "zbrun: " << msg << "\n";
    return finish(1);
  };
  std::string failure;
  auto checked = check_inputs(o, mpi, world_rank, world_size, err, &failure);
#ifdef ZBPP_HAVE_MPI
  if (mpi) {
    // Under an MPMD mpirun each rank checks its own flags, and one rank's may fail where rank 0's
    // pass: every rank learns of any failure and ends at once (rather than waiting out --timeout
    // for the rank that left), and that rank says why. Rank 0 speaks for ranks that fail alike.
    int mine = checked ? 0 : 1;
    std::vector<int> failed(world_size, 0);
    MPI_Allgather(&mine, 1, MPI_INT, failed.data(), 1, MPI_INT, MPI_COMM_WORLD);
    if (mine && world_rank != 0 && !failed[0]) {
      err << "zbrun: rank " << world_rank << ": " << failure << "\n";
      return finish(1);
    }
    if (!checked) return fail(failure);
    if (std::find(failed.begin(), failed.end(), 1) != failed.end()) return finish(1);
  }
#endif
  if (!checked) return fail(failure);
  const Schedule& s = checked->file.schedule;
  const GptConfig* model = &checked->model;
  const Timeline& planned = checked->planned;
  if (o.check) {
    // Everything above is what a run checks before it trains; say what it would run.
    if (world_rank == 0)
      said << o.schedule_file << ": ok: " << shown_text(s.method) << " (" << optimizer_name(s.optimizer) << ") on " << s.p << " ranks (p=" << s.p
          << ", m=" << s.m << ", chunks=" << s.chunks << "), model " << model->name << " (" << model->layers
          << " layers), " << o.run.steps << " steps on " << backend_name(o.backend) << (mpi ? " under MPI" : " in one process") << "\n";
    return finish(0);
  }
  if (!o.run.checkpoint.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.run.checkpoint, ec);
    if (ec) return fail("--checkpoint: cannot create " + o.run.checkpoint + ": " + ec.message());
  }

  const TrainInputs inputs{s, checked->file.problem, *model, checked->data};
  const RunOptions run = run_options(o);
  Printer printer(o, checked->file, *model, planned, said, err);
  if (mpi) {
#ifdef ZBPP_HAVE_MPI
    if (cuda) {
#ifdef ZBPP_HAVE_NCCL
      return finish(train_nccl_rank(inputs, run, printer).error ? 1 : 0);
#else
      return fail("--backend cuda under mpirun needs NCCL 2.18 or newer, which was not found at configure time "
                  "(see the CMake output; --single-gpu runs without NCCL)");
#endif
    }
    return finish(train_mpi_rank(inputs, run, printer).error ? 1 : 0);
#endif
  }
#ifdef ZBPP_HAVE_CUDA
  if (cuda) return exit_code(train_cuda_threads(inputs, run, o.single_gpu, printer));
#endif
  // --local: one thread per rank over an in-process hub.
  return exit_code(train_local_threads(inputs, run, printer));
}

}  // namespace zbpp
