// zbrun command line: load and check the schedule, build each rank's backend and transport, run
// the steps, report losses and planned vs measured bubble rates.
#include "cli/zbrun_cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <mutex>
#include <sstream>

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/cli_file_name.h"
#include "cli/cli_numbers.h"
#include "core/lowered.h"
#include "core/output_file.h"
#include "core/schedule_json.h"
#include "core/simulate.h"
#include "core/simulate_iterations.h"
#include "core/trace.h"
#include "core/validate.h"
#include "runtime/backend/cpu/compute_cpu.h"
#include "runtime/checkpoint.h"
#include "runtime/data.h"
#include "runtime/interpreter.h"
#include "runtime/trainer.h"
#ifdef ZBPP_HAVE_CUDA
#include "runtime/backend/cuda/compute_cuda.h"
#endif
#ifdef ZBPP_HAVE_MPI
#include <mpi.h>
#endif

namespace zbpp {

namespace {

struct Options {
  std::string schedule_file, model = "tiny", data = "synthetic", metrics, trace, profile;
  bool local = false, quiet = false;
  bool check = false;  ///< check every input, say what would run, and stop before training
  std::string backend = "cpu";  ///< "cpu" or "cuda"
  int blas_threads = 1;         ///< OpenBLAS threads per process (the CPU backend's GEMMs)
  bool single_gpu = false;      ///< every stage in this process on GPU 0, one SM partition each
  std::string fail_at;  ///< "RANK:OP": that rank fails at that op index (tests of error handling)
  std::string fault = "error";  ///< how it fails: "error", "hang" or "truncate" (a send)
  std::string layer_split;  ///< "a,b,...": blocks per virtual stage
  std::string inject;       ///< "STEP:RANK": a NaN gradient on RANK at STEP
  RunOptions run;           ///< the flags the driver takes as they are (run_options adds the others)
};

// "A:B@C" style values: integers (0..INT_MAX) between the separators `seps`, in order; the first
// `required` fields must be there, the rest may be left out. "" or why.
std::string parse_fields(const std::string& text, const std::string& seps, size_t required,
                         const std::vector<int*>& fields) {
  size_t from = 0;
  for (size_t k = 0; k < fields.size(); ++k) {
    size_t end = k < seps.size() ? text.find(seps[k], from) : std::string::npos;
    if (end == std::string::npos && k + 1 < required) return "no '" + std::string(1, seps[k]) + "'";
    long long v = 0;
    std::string bad = parse_integer(text.substr(from, end == std::string::npos ? std::string::npos : end - from), 0,
                                    std::numeric_limits<int>::max(), &v);
    if (!bad.empty()) return bad;
    *fields[k] = static_cast<int>(v);
    if (end == std::string::npos) return "";
    from = end + 1;
  }
  return "";
}

std::string g9(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string f4(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// Writes the profile --profile asked for (times in ms, memory in MiB) from every rank's gathered
// figures, and says what each rank's GEMMs reached. "" or why not.
std::string write_profile(const Options& o, const ScheduleFile& file, const GptConfig& model, const RunSummary& sum,
                          std::ostream& out) {
  const Schedule& s = file.schedule;
  const int fields = RunSummary::kProfileFields;
  // Round to 1e-6 so the file holds exactly what zbplan will read.
  auto round6 = [](double v) { return std::round(v * 1e6) / 1e6; };
  nlohmann::json j;
  j["comment"] = "profiled by zbrun: model " + model.name + ", " + std::to_string(o.run.steps) + " steps of " + s.method +
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
  j["t_comm"] = round6(sum.comm_seconds * 1e3);
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

// Writes the trace --trace asked for: every rank's measured op spans of the last step, with the
// planned timeline beside. "" or why not.
std::string write_trace(const Options& o, const ScheduleFile& file, const Timeline& planned, const RunSummary& sum,
                        std::ostream& out) {
  const Schedule& s = file.schedule;
  Schedule compute = compute_projection(s);
  nlohmann::json events = timeline_trace_events(compute, planned, 0, "planned (" + s.method + ", problem time units as ms)");
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

  void failed(const RunError& error) override {
    std::lock_guard<std::mutex> lock(mu_);
    err_ << "zbrun: " + error.text + "\n";
  }

  std::string started(int rank, int first_step) override {
    if (rank != 0) return "";
    if (o_.run.resume && !o_.quiet) {
      std::lock_guard<std::mutex> lock(mu_);
      out_ << "resumed from " << o_.run.checkpoint << " after step " << first_step - 1 << "\n";
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
           << " s, span bubble rate " << f4(report.measured_bubble) << " measured / " << f4(planned_rate) << " planned\n";
    if (!metrics_.is_open()) return "";
    // JSON has no nan or inf: such a figure is written null, and "nonfinite" says one was.
    bool nonfinite = false;
    auto number = [&nonfinite](double v) {
      nonfinite = nonfinite || !std::isfinite(v);
      return std::isfinite(v) ? g9(v) : std::string("null");
    };
    std::ostringstream line;
    line << "{\"step\": " << report.step << ", \"loss\": " << number(report.loss) << ", \"iteration_seconds\": "
         << number(report.seconds) << ", \"measured_span_bubble_rate\": " << number(report.measured_bubble)
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
    out_ << "done: " << o_.run.steps << " steps of " << s.method << " on " << s.p << " ranks (p=" << s.p << ", m=" << s.m
         << ", chunks=" << s.chunks << "), model " << model_.name << " (" << model_.layers << " layers)\n";
    if (sum.measured_steps > 0)
      out_ << "  iteration time " << f4(sum.mean_seconds) << " s (mean of steps 1.." << o_.run.steps - 1
           << "), span bubble rate " << f4(sum.mean_bubble) << " measured / " << f4(planned_.span_bubble_rate)
           << " planned\n";
    // The plan's time per iteration in a run (issue 10): the steady-state period of iterations back
    // to back under this optimizer, beside one iteration alone; in the problem's unit (ms after --profile).
    std::vector<Diag> unused;
    IterationOptions figures;
    figures.op_times = false;
    auto it = simulate_iterations(s, file_.problem, figures, &unused);
    if (it)
      out_ << "  planned per iteration: period " << format_quanta(it->period) << " (steady state), one alone "
           << format_quanta(it->wall) << " (in the problem's time unit)\n";
    if (sum.period_gaps > 0) {
      out_ << "  measured per iteration: period " << f4(sum.measured_period) << " s (steady state: steps "
           << sum.first_step + 1 << ".." << o_.run.steps - 1 << ", slowest rank)";
      if (o_.run.pace > 0 && it)
        out_ << " = " << f4(sum.measured_period / o_.run.pace) << " time units at --pace " << g9(o_.run.pace) << " s, planned "
             << format_quanta(it->period);
      out_ << "\n";
    }
    out_ << "  optimizer " << optimizer_name(s.optimizer);
    if (s.optimizer == kOptimizerPostValidation)
      out_ << ": " << sum.rolled_back << " speculative step" << (sum.rolled_back == 1 ? "" : "s")
           << " rolled back and redone on rank " << sum.state_chain_start << "; " << sum.replays << " iteration"
           << (sum.replays == 1 ? "" : "s") << " replayed, " << sum.held << " held until validated";
    out_ << "\n";
    out_ << "  peak activation memory per rank: measured [";
    for (int r = 0; r < s.p; ++r) out_ << (r ? ", " : "") << f4(sum.peak_activation_bytes[r] / (1 << 20)) << " MiB";
    out_ << "], planned [";
    for (int r = 0; r < s.p; ++r) out_ << (r ? ", " : "") << format_quanta(planned_.peak_memory[r]);
    out_ << "] (in the problem's memory unit)\n";
    out_ << "  weights digest " << sum.weights_digest;
    // The bits depend on the BLAS kernels, so the line says which gave them.
    if (o_.backend == "cpu") out_ << " (" << cpu_kernels() << ")";
    out_ << "\n";
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
  r.fault = o.fault == "hang"       ? Interpreter::Fault::kHang
            : o.fault == "truncate" ? Interpreter::Fault::kTruncate
                                    : Interpreter::Fault::kError;
  r.gather_trace = !o.trace.empty();
  r.profile = !o.profile.empty();
  return r;
}


}  // namespace

namespace {

// Virtual stages between the first (which embeds) and the last (which computes the loss) that hold
// no transformer block compute nothing: a schedule that plans them as busy as the others does not
// describe the run. "" when every one holds a block.
std::string empty_stages_warning(const GptConfig& model, const Schedule& s) {
  const int virtual_stages = s.p * s.chunks;
  const LayerSplit split = layer_split(model, virtual_stages);
  std::vector<std::string> empty;
  for (int vs = 1; vs + 1 < virtual_stages; ++vs) {
    if (split.count[vs] > 0) continue;
    std::string name = std::to_string(vs);
    if (s.chunks > 1)
      for (int r = 0; r < s.p; ++r)
        if (std::find(s.placement[r].begin(), s.placement[r].end(), vs) != s.placement[r].end())
          name += " (rank " + std::to_string(r) + ")";
    empty.push_back(name);
  }
  if (empty.empty()) return "";
  std::string list;
  for (size_t i = 0; i < empty.size(); ++i)
    list += (i == 0 ? "" : i + 1 == empty.size() ? " and " : ", ") + empty[i];
  const std::string stages = s.chunks > 1 ? "virtual stages" : "stages";
  return "model " + model.name + " has " + std::to_string(model.layers) + " transformer blocks for " +
         std::to_string(virtual_stages) + " " + stages + ": " + (empty.size() == 1 ? stages.substr(0, stages.size() - 1) : stages) +
         " " + list + (empty.size() == 1 ? " holds" : " hold") +
         " none and only pass activations on, so the run does not follow the plan's times; " +
         (model.split.empty() ? "use a model with at least " + std::to_string(virtual_stages - 2) +
                                    " layers, or plan fewer stages"
                              : "give every stage a block in --layer-split");
}

// zbrun's flags, each bound to its field of `o`.
void add_flags(CLI::App* app, Options* o) {
  app->add_option("schedule", o->schedule_file, "lowered schedule file from zbplan plan")->required()->check(file_name());
  app->add_option("--model", o->model,
                 std::string("a preset (") + kGptPresets + ") or a model JSON file {vocab, seq, channels, heads, "
                 "layers, batch}")
      ->check(file_name())
      ->option_text("PRESET|FILE");
  // Every number goes through cli_numbers.h: decimal, whole token, finite, in range.
  const auto positive = real_in(0, kAnyReal, true);
  app->add_option("--steps", o->run.steps, "training steps")->check(integer_in(1, 100000000));
  app->add_option("--seed", o->run.seed, "initialisation seed")->check(integer_in(0, std::numeric_limits<long long>::max()));
  app->add_option("--threads", o->blas_threads,
                 "OpenBLAS threads of the CPU backend's GEMMs, per process (more for a rank that owns several cores; "
                 "results are the same bits)")
      ->check(integer_in(1, 256));
  app->add_option("--data", o->data, "\"synthetic\" or a text file, read as bytes")
      ->check(file_name())
      ->option_text("synthetic|FILE");
  app->add_option("--metrics", o->metrics, "write one JSON object per step (JSON lines)")->check(file_name());
  app->add_option("--profile", o->profile,
                 "measure T_F, T_B, T_W, T_comm (ms) and M_B, M_W (MiB) per stage and write them as a problem file "
                 "for zbplan")
      ->check(file_name());
  app->add_option("--dump-weights", o->run.dump_weights,
                 "after training, write every weight tensor to DIR/tensor<id>.f32 (raw floats)")
      ->check(dir_name());
  app->add_option("--trace", o->trace,
                 "write a Chrome/Perfetto trace of the last step: measured ops per rank, planned beside")
      ->check(file_name());
  // A wait's deadline is now + timeout: a week at most keeps it far from overflowing the clock.
  app->add_option("--timeout", o->run.timeout_s, "seconds any wait may take before the run fails")
      ->check(real_in(0, 7 * 86400, true));
  app->add_option("--lr", o->run.adamw.lr, "AdamW learning rate")->check(positive);
  app->add_option("--clip-norm", o->run.adamw.clip_norm, "global gradient-norm clip (<= 0: off)")
      ->check(real_in(-kAnyReal, kAnyReal));
  app->add_flag("--local", o->local, "run all ranks as threads in this process (no mpirun)");
  app->add_option("--backend", o->backend, "compute backend: cpu, or cuda (bf16 on GPUs; NCCL under mpirun)")
      ->transform(one_of({"cpu", "cuda"}, "backend"));
  app->add_flag("--single-gpu", o->single_gpu,
               "--backend cuda with every stage in this process on GPU 0, each on its own SM partition "
               "(green contexts) or, where those are unavailable, its own stream");
  app->add_flag("--quiet", o->quiet, "print only the summary");
  app->add_flag("--check", o->check,
               "check the schedule, model, data, output paths and rank count, say what would run, and exit (0: ok)");
  app->add_option("--layer-split", o->layer_split,
                 "blocks per virtual stage, e.g. 1,2,2,1 (default: even, the first and last take fewer)")
      ->check(integer_list_in(0, std::numeric_limits<int>::max()));
  app->add_option("--inject-nonfinite", o->inject,
                 "a NaN in that rank's gradients at that step (the step is skipped on every rank)")
      ->type_name("STEP:RANK");
  app->add_option("--fail-at", o->fail_at,
                 "make that rank fail at that op of that step (default step 0), to test error handling")
      ->type_name("RANK:OP[@STEP]");
  app->add_option("--fault", o->fault,
                 "how --fail-at fails: error (the op fails), hang (the rank stops answering), truncate (a send op "
                 "sends half its message)")
      ->transform(one_of({"error", "hang", "truncate"}, "fault"));
  app->add_option("--pace", o->run.pace,
                 "every compute op lasts at least S seconds per time unit of its planned duration (sleeping the "
                 "rest), so a run follows the plan's timing where cores are too few for one rank each (default: off)")
      ->check(positive)
      ->option_text("S")
      ->default_str("");
  app->add_option("--checkpoint", o->run.checkpoint,
                 "directory for checkpoints: DIR/step<N>.rank<R>.ckpt, the weights and optimizer state after N steps, "
                 "written atomically")->check(dir_name());
  app->add_option("--every", o->run.every, "with --checkpoint: write one after every N steps (default: one, at the end)")
      ->check(integer_in(1, 1 << 30))
      ->option_text("N")
      ->default_str("");
  app->add_flag("--resume", o->run.resume, "with --checkpoint: continue from the latest checkpoint every rank has");
}

// The flags' own checks, before MPI starts or any file is read: "" or the usage error. Completes
// what the flags imply (--single-gpu: CUDA in one process; --checkpoint: one at the end at least).
std::string check_flags(Options* op) {
  Options& o = *op;
  if (!o.fail_at.empty()) {
    std::string bad = parse_fields(o.fail_at, ":@", 2, {&o.run.fail_rank, &o.run.fail_op, &o.run.fail_step});
    if (!bad.empty()) return "--fail-at: expected RANK:OP or RANK:OP@STEP, got '" + o.fail_at + "': " + bad;
    if (o.run.fail_step >= o.run.steps)
      return "--fail-at " + o.fail_at + ": no step " + std::to_string(o.run.fail_step) + " (--steps " +
             std::to_string(o.run.steps) + " runs steps 0.." + std::to_string(o.run.steps - 1) + ")";
  }
  if (o.fault != "error" && o.run.fail_rank < 0) return "--fault " + o.fault + " needs --fail-at RANK:OP";
  if (o.fault == "truncate" && (o.backend == "cuda" || o.single_gpu))
    return "--fault truncate: only with --backend cpu (CUDA messages carry device handles)";
  if ((o.run.every > 0 || o.run.resume) && o.run.checkpoint.empty()) return "--every and --resume need --checkpoint DIR";
  if (!o.run.checkpoint.empty() && o.run.every == 0) o.run.every = o.run.steps;  // at least one, at the end
  if (!o.inject.empty()) {
    std::string bad = parse_fields(o.inject, ":", 2, {&o.run.inject_step, &o.run.inject_rank});
    if (!bad.empty()) return "--inject-nonfinite: expected STEP:RANK, got '" + o.inject + "': " + bad;
    if (o.run.inject_step >= o.run.steps)
      return "--inject-nonfinite " + o.inject + ": no step " + std::to_string(o.run.inject_step) + " (--steps " +
             std::to_string(o.run.steps) + " runs steps 0.." + std::to_string(o.run.steps - 1) + ")";
  }
  if (o.single_gpu) {
    o.backend = "cuda";
    o.local = true;
  }
  // Under mpirun every process would run the whole pipeline in threads, all writing the same files.
  if (o.local)
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"})
      if (const char* n = std::getenv(var); n != nullptr && std::atoi(n) > 1) {
        const std::string flag = o.single_gpu ? "--single-gpu" : "--local";
        return flag + " runs every rank in this process, but mpirun started " + n + " processes (" + var + "=" +
               n + "): each would run the whole pipeline and write the same files; drop " + flag +
               " under mpirun, or start zbrun without mpirun";
      }
  return "";
}

/// What a run needs, read and checked the same way on every rank.
struct CheckedInputs {
  ScheduleFile file;
  Timeline planned;  ///< the plan the run is measured against
  GptConfig model;
  DataSource data;
};

// Reads and checks the schedule, the model, the data and every output path, and the ranks that
// run, before anything trains: every rank checks the same inputs, so all of them fail alike and
// none waits for another. Nothing is created (--check touches nothing). On a failure, *failure
// says what is wrong (rank 0 prints it).
std::optional<CheckedInputs> check_inputs(Options& o, bool mpi, int world_rank, int world_size, std::ostream& err,
                                          std::string* failure) {
  const bool cuda = o.backend == "cuda";
  auto fail = [&](const std::string& msg) -> std::optional<CheckedInputs> {
    *failure = msg;
    return std::nullopt;
  };
  std::vector<Diag> diags;
  std::string schedule_text;
  auto file = load_schedule_file(o.schedule_file, &diags, &schedule_text);
  o.run.schedule_hash = text_hash(schedule_text);
  std::optional<Timeline> checked;  // the plan the run is measured against
  if (file) checked = check_schedule_file(*file, o.schedule_file, &diags);
  if (!checked) {
    std::string text;
    for (const Diag& d : diags) text += (text.empty() ? "" : "\nzbrun: ") + format_diag(d);
    return fail(text);
  }
  if (world_rank == 0)  // a schedule that runs but breaks the bit-identity promise says so
    for (const Diag& d : validate_warnings(file->schedule, o.schedule_file)) err << "zbrun: " << format_diag(d) << "\n";
  const Schedule& s = file->schedule;
  if (s.level != kLevelLowered)
    return fail(o.schedule_file + ": the schedule is compute-only; plan it without --compute-only so it holds send/recv");
  if (!o.profile.empty())
    for (const auto& ops : s.stages)
      for (const Op& op : ops)
        if (op.type == OpType::BW)
          return fail("--profile needs a schedule with separate B and W ops (zb-h1, zb-h2, heuristic, zb-v), not " +
                      s.method);
  std::string why;
  auto model = load_gpt_config(o.model, &why);
  if (!model) return fail(why);
  if (!o.layer_split.empty()) {
    std::vector<long long> counts;  // the form was checked with the command line (integer_list_in)
    parse_integer_list(o.layer_split, 0, std::numeric_limits<int>::max(), &counts);
    for (long long n : counts) {
      if (n > model->layers)
        return fail("--layer-split: " + std::to_string(n) + " is not a block count of this model (0.." +
                    std::to_string(model->layers) + ")");
      model->split.push_back(static_cast<int>(n));
    }
  }
  if (std::string bad = check_layer_split(*model, s.p * s.chunks); !bad.empty()) return fail(bad);
  if (std::string warning = empty_stages_warning(*model, s); !warning.empty() && world_rank == 0)
    err << "zbrun: warning: " << warning << "\n";
  auto data = DataSource::open(o.data, &why);
  if (!data) return fail(why);
  if (std::string bad = data->check(*model); !bad.empty()) return fail(bad);
  if (o.run.fail_rank >= s.p || o.run.fail_rank < -1 || (o.run.fail_rank >= 0 && (o.run.fail_op < 0 || o.run.fail_op >= static_cast<int>(s.stages[o.run.fail_rank].size()))))
    return fail("--fail-at " + o.fail_at + ": no such rank and op in this schedule (p = " + std::to_string(s.p) + ")");
  if (!o.inject.empty() && o.run.inject_rank >= s.p)
    return fail("--inject-nonfinite " + o.inject + ": no rank " + std::to_string(o.run.inject_rank) + " in this schedule (ranks 0.." +
                std::to_string(s.p - 1) + ")");
  // Output paths are checked now, so a bad one fails before any training rather than after it;
  // checked without creating anything (--check touches nothing).
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--metrics", &o.metrics}, {"--trace", &o.trace}, {"--profile", &o.profile}};
  for (const auto& [flag, path] : outputs) {
    if (path->empty() || world_rank != 0) continue;
    if (std::string bad = check_writable_file(*path); !bad.empty())
      return fail(std::string(flag) + ": cannot write " + bad);
  }
  if (!o.run.checkpoint.empty())
    if (std::string bad = check_writable_dir(o.run.checkpoint); !bad.empty())
      return fail("--checkpoint: cannot write checkpoints into " + bad);
  if (o.fault == "truncate" && o.run.fail_rank >= 0) {
    const Op& op = s.stages[o.run.fail_rank][o.run.fail_op];
    if (!is_send(op.type))
      return fail("--fault truncate: op " + std::to_string(o.run.fail_op) + " of rank " + std::to_string(o.run.fail_rank) +
                  " is " + op_short(op) + ", not a send");
  }
  if (!o.run.dump_weights.empty() && world_rank == 0)
    if (std::string bad = check_writable_file(o.run.dump_weights + "/tensor0.f32"); !bad.empty())
      return fail("--dump-weights: cannot write " + bad);
#ifdef ZBPP_HAVE_CUDA
  if (cuda) {
    std::string why;
    if (cuda_device_count(&why) == 0)
      return fail("--backend cuda: " + (why.empty() ? std::string("no GPU is visible to this process") : why));
  }
#else
  if (cuda) return fail("--backend cuda: this zbrun was built without CUDA (no nvcc at configure time)");
#endif
  if (mpi && world_size != s.p)
    return fail(o.schedule_file + ": planned for " + std::to_string(s.p) + " ranks, but " + std::to_string(world_size) +
                (world_size == 1 ? " rank is" : " ranks are") + " running: start it with mpirun -n " +
                std::to_string(s.p) +
                (world_size == 1 ? ", or add --local to run every rank in this process"
                                 : ", or plan it for " + std::to_string(world_size) + " stages (zbplan plan -p " +
                                       std::to_string(world_size) + " ...)"));
  return CheckedInputs{std::move(*file), std::move(*checked), std::move(*model), std::move(*data)};
}

}  // namespace

int run_zbrun(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool use_mpi) {
  CLI::App app{"zbrun: replays a zbplan schedule file, training a GPT with split backward (B and W)", "zbrun"};
  set_up_app(&app, "zbrun");
  Options o;
  add_flags(&app, &o);
  if (int code = parse_command_line(&app, argc, argv, out, err); code >= 0) return code;
  auto usage = [&err](const std::string& message) { return usage_error(err, "zbrun", "", message); };

  if (std::string bad = check_flags(&o); !bad.empty()) return usage(bad);
  cpu_set_threads(o.blas_threads);
  const bool cuda = o.backend == "cuda";
  if (cuda) {
    // Before the first CUDA call of the process, or they have no effect; set whatever the
    // environment asked (docs/gpu.md). Fewer hardware queues than streams (the default is 8; some
    // launchers set 1) serialise kernels of different streams, so a spinning NCCL kernel could hold
    // back the one its peer waits for; 32 is the most CUDA allows. Lazy module loading can block a
    // first kernel launch while an NCCL kernel spins waiting for its peer: load every module up front.
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  }
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
  if (!checked) return fail(failure);
  const Schedule& s = checked->file.schedule;
  const GptConfig* model = &checked->model;
  const Timeline& planned = checked->planned;
  if (o.check) {
    // Everything above is what a run checks before it trains; say what it would run.
    if (world_rank == 0)
      out << o.schedule_file << ": ok: " << s.method << " (" << optimizer_name(s.optimizer) << ") on " << s.p << " ranks (p=" << s.p
          << ", m=" << s.m << ", chunks=" << s.chunks << "), model " << model->name << " (" << model->layers
          << " layers), " << o.run.steps << " steps on " << o.backend << (mpi ? " under MPI" : " in one process") << "\n";
    return finish(0);
  }
  if (!o.run.checkpoint.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.run.checkpoint, ec);
    if (ec) return fail("--checkpoint: cannot create " + o.run.checkpoint + ": " + ec.message());
  }

  const TrainInputs inputs{s, checked->file.problem, *model, checked->data};
  const RunOptions run = run_options(o);
  Printer printer(o, checked->file, *model, planned, out, err);
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
