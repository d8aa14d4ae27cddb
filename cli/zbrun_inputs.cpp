// zbrun's flags and the checks a run makes before it trains (see zbrun_inputs.h).
#include "cli/zbrun_inputs.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "cli/cli_common.h"
#include "cli/cli_file_name.h"
#include "cli/cli_numbers.h"
#include "core/lowered.h"
#include "core/output_file.h"
#include "core/simulate.h"
#include "core/validate.h"
#include "runtime/backend/cpu/compute_cpu.h"
#include "runtime/checkpoint.h"
#include "runtime/weights_dump.h"
#ifdef ZBPP_HAVE_CUDA
#include "runtime/backend/cuda/compute_cuda.h"
#endif

namespace zbpp::zbrun {

namespace {

// The CPU backend holds, per parameter, its value, its gradient and AdamW's two moments in fp32:
// 16 bytes. The ranks this process runs (all with --local, else its own) against the memory it may
// have (MemAvailable, and ulimit -v where set): "" when they fit, else what to do. Activations come
// on top; this catches a model that cannot load at all before a run dies of std::bad_alloc.
std::string cpu_memory_shortfall(const GptConfig& model, const Schedule& s, int rank) {
  constexpr double kBytesPerParameter = 16;
  double parameters = 0;
  for (int st = 0; st < s.p; ++st) {
    if (rank >= 0 && st != rank) continue;
    for (int vs : s.placement[static_cast<size_t>(st)])
      for (const TensorSpec& t : stage_tensors(model, vs, s.p * s.chunks)) parameters += static_cast<double>(t.size);
  }
  double available = std::numeric_limits<double>::infinity();
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    double kib = 0;
    meminfo >> kib;
    if (key == "MemAvailable:") available = kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    available = std::min(available, static_cast<double>(limit.rlim_cur));
  const double need = parameters * kBytesPerParameter;
  if (need <= available) return "";
  char text[400];
  std::snprintf(text, sizeof text,
                "%s %.4g parameters need %.4g GiB for their values, gradients and AdamW state (16 bytes each on the "
                "CPU backend), more than the %.4g GiB this process may use (MemAvailable, ulimit -v): a smaller "
                "model, or more ranks on more hosts",
                rank >= 0 ? ("rank " + std::to_string(rank) + "'s").c_str() : "the model's", parameters,
                need / 1073741824.0, available / 1073741824.0);
  return text;
}

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

}  // namespace

void add_flags(CLI::App* app, Options* o) {
  // Required unless --profile-layers, which measures the model alone (check_flags says so).
  app->add_option("schedule", o->schedule_file, "lowered schedule file from zbplan plan (none with --profile-layers)")
      ->check(file_name());
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
  app->add_option("--profile-layers", o->profile_layers,
                 "measure each layer kind (embedding, one block, head) alone, F, B and W of one microbatch, and write "
                 "the layer-cost file (schema/layers.schema.json) for zbplan; takes no schedule")
      ->check(file_name());
  app->add_option("--profile-repeats", o->profile_repeats, "with --profile-layers: timed runs, after a warm-up; the median is kept")
      ->check(integer_in(1, 1000000))
      ->option_text("N")
      ->default_str("5");
  app->add_option("--profile-sm-parts", o->profile_sm_parts,
                 "with --profile-layers --backend cuda: measure on one of N equal SM partitions of the GPU, what each "
                 "stage of a --single-gpu run with N stages gets (default: the whole GPU)")
      ->check(integer_in(1, 64))
      ->option_text("N");
  app->add_option("--dump-weights", o->run.dump_weights,
                 "after training, write every weight tensor to DIR/tensor<id>.f32 (raw floats) and their names and "
                 "shapes to DIR/weights.json; DIR new, empty or an earlier dump's (whose files are replaced)")
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
  // The names are backend_name's and Interpreter::fault_name's: one spelling each.
  constexpr Backend kBackends[] = {Backend::kCpu, Backend::kCuda};
  std::vector<std::string> backends;
  for (Backend b : kBackends) backends.push_back(backend_name(b));
  app->add_option_function<std::string>(
         "--backend",
         [o, kBackends](const std::string& v) {
           for (Backend b : kBackends)
             if (v == backend_name(b)) o->backend = b;
         },
         "compute backend: cpu, or cuda (bf16 on GPUs; NCCL under mpirun)")
      ->transform(one_of(backends, "backend"))
      ->default_str(backend_name(Backend::kCpu));
  app->add_flag("--single-gpu", o->single_gpu,
               "--backend cuda with every stage in this process on GPU 0, each on its own SM partition "
               "(green contexts) or, where those are unavailable, its own stream");
  app->add_flag("--quiet", o->quiet, "print the result in one line (and a line per file written), no step lines or summary");
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
  using Fault = Interpreter::Fault;
  constexpr Fault kFaults[] = {Fault::kError, Fault::kHang, Fault::kTruncate, Fault::kDevice};
  std::vector<std::string> faults;
  for (Fault f : kFaults) faults.push_back(Interpreter::fault_name(f));
  app->add_option_function<std::string>(
         "--fault",
         [o, kFaults](const std::string& v) {
           for (Fault f : kFaults)
             if (v == Interpreter::fault_name(f)) o->run.fault = f;
         },
         "how --fail-at fails: error (the op fails), hang (the rank stops answering), truncate (a send op "
         "sends half its message), device (a kernel faults on the GPU before the op; CUDA backend)")
      ->transform(one_of(faults, "fault"))
      ->default_str(Interpreter::fault_name(Fault::kError));
  app->add_option("--pace", o->run.pace,
                 "every compute op lasts at least S seconds per time unit of its planned duration (sleeping the "
                 "rest), so a run follows the plan's timing where cores are too few for one rank each; CPU backend only "
                 "(default: off)")
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

std::string check_flags(Options* op) {
  Options& o = *op;
  const bool profile_layers = !o.profile_layers.empty();
  if (o.schedule_file.empty() && !profile_layers)
    return "schedule is required (lowered schedule file from zbplan plan), or --profile-layers FILE";
  if (!o.schedule_file.empty() && profile_layers)
    return "--profile-layers measures the model's layers alone and takes no schedule file (drop " + o.schedule_file + ")";
  if (o.profile_repeats > 0 && !profile_layers) return "--profile-repeats needs --profile-layers FILE";
  if (o.profile_repeats == 0) o.profile_repeats = 5;
  if (o.profile_sm_parts > 0 && (!profile_layers || o.backend != Backend::kCuda))
    return "--profile-sm-parts needs --profile-layers FILE --backend cuda (SM partitions are of a GPU)";
  if (!o.fail_at.empty()) {
    std::string bad = parse_fields(o.fail_at, ":@", 2, {&o.run.fail_rank, &o.run.fail_op, &o.run.fail_step});
    if (!bad.empty()) return "--fail-at: expected RANK:OP or RANK:OP@STEP, got '" + o.fail_at + "': " + bad;
    if (o.run.fail_step >= o.run.steps)
      return "--fail-at " + o.fail_at + ": no step " + std::to_string(o.run.fail_step) + " (--steps " +
             std::to_string(o.run.steps) + " runs steps 0.." + std::to_string(o.run.steps - 1) + ")";
  }
  if (o.run.fault != Interpreter::Fault::kError && o.run.fail_rank < 0)
    return std::string("--fault ") + Interpreter::fault_name(o.run.fault) + " needs --fail-at RANK:OP";
  if (o.run.fault == Interpreter::Fault::kTruncate && (o.backend == Backend::kCuda || o.single_gpu))
    return "--fault truncate: only with --backend cpu (CUDA messages are device buffers)";
  if (o.run.fault == Interpreter::Fault::kDevice && o.backend != Backend::kCuda && !o.single_gpu)
    return "--fault device: only with the CUDA backend (--backend cuda or --single-gpu)";
  // Pacing sleeps on the host after an op returns; the CUDA backend's ops return before they run.
  if (o.run.pace > 0 && (o.backend == Backend::kCuda || o.single_gpu))
    return "--pace: only with --backend cpu (the CUDA backend's ops run on the GPU after the call returns, so a "
           "sleep on the host would not lengthen them)";
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
    o.backend = Backend::kCuda;
    o.local = true;
  }
  // Under mpirun every process would run the whole pipeline in threads (or profile the layers), all
  // writing the same files.
  if (o.local || profile_layers)
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"})
      if (const char* n = std::getenv(var); n != nullptr && std::atoi(n) > 1) {
        if (profile_layers)
          return "--profile-layers runs in one process, but mpirun started " + std::string(n) + " processes (" + var +
                 "=" + n + "): each would write the same file; start zbrun without mpirun";
        const std::string flag = o.single_gpu ? "--single-gpu" : "--local";
        return flag + " runs every rank in this process, but mpirun started " + n + " processes (" + var + "=" +
               n + "): each would run the whole pipeline and write the same files; drop " + flag +
               " under mpirun, or start zbrun without mpirun";
      }
  return "";
}

namespace {

// The model's blocks per stage: --layer-split, or the file's partition (which --layer-split may
// only repeat). "" or what is wrong.
std::string choose_split(const Options& o, const ScheduleFile& file, GptConfig* model) {
  if (!o.layer_split.empty()) {
    std::vector<long long> counts;  // the form was checked with the command line (integer_list_in)
    parse_integer_list(o.layer_split, 0, std::numeric_limits<int>::max(), &counts);
    for (long long n : counts) {
      if (n > model->layers)
        return "--layer-split: " + std::to_string(n) + " is not a block count of this model (0.." +
               std::to_string(model->layers) + ")";
      model->split.push_back(static_cast<int>(n));
    }
  }
  if (file.partition) {
    // The file's partition is the split; --layer-split may only say the same.
    std::vector<int> planned;
    if (std::string bad = blocks_of_partition(file.partition->costs, file.partition->partition, *model, &planned);
        !bad.empty())
      return o.schedule_file + ": " + bad;
    auto text = [](const std::vector<int>& v) {
      std::string t;
      for (size_t i = 0; i < v.size(); ++i) t += (i ? "," : "") + std::to_string(v[i]);
      return t;
    };
    if (!model->split.empty() && model->split != planned)
      return "--layer-split " + text(model->split) + " contradicts the split the schedule was planned for (" +
             text(planned) + " blocks per stage, from its partition): drop --layer-split, or plan again";
    model->split = planned;
  }
  return "";
}

// --fail-at and --inject-nonfinite name a rank (and op) of this schedule. "" or what is wrong.
std::string check_fault_targets(const Options& o, const Schedule& s) {
  if (o.run.fail_rank >= s.p || o.run.fail_rank < -1 || (o.run.fail_rank >= 0 && (o.run.fail_op < 0 || o.run.fail_op >= static_cast<int>(s.stages[o.run.fail_rank].size()))))
    return "--fail-at " + o.fail_at + ": no such rank and op in this schedule (p = " + std::to_string(s.p) + ")";
  if (!o.inject.empty() && o.run.inject_rank >= s.p)
    return "--inject-nonfinite " + o.inject + ": no rank " + std::to_string(o.run.inject_rank) + " in this schedule (ranks 0.." +
           std::to_string(s.p - 1) + ")";
  return "";
}

// The outputs: none replaces an input or another, each can be written. "" or what is wrong.
std::string check_outputs(const Options& o, int world_rank, std::ostream& err) {
  // No output may replace an input or another output (issue 34).
  if (std::string clash = output_clash({{"the schedule", o.schedule_file}, {"--model", o.model}, {"--data", o.data}},
                                       {{"--metrics", o.metrics}, {"--trace", o.trace}, {"--profile", o.profile}});
      !clash.empty())
    return clash;
  // Output paths are checked now, so a bad one fails before any training rather than after it;
  // checked without creating anything (--check touches nothing).
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--metrics", &o.metrics}, {"--trace", &o.trace}, {"--profile", &o.profile}};
  for (const auto& [flag, path] : outputs) {
    if (path->empty() || world_rank != 0) continue;
    if (std::string bad = check_writable_file(*path); !bad.empty())
      return std::string(flag) + ": cannot write " + bad;
  }
  if (!o.run.checkpoint.empty())
    if (std::string bad = check_writable_dir(o.run.checkpoint); !bad.empty())
      return "--checkpoint: cannot write checkpoints into " + bad;
  if (!o.run.checkpoint.empty() && o.run.every > o.run.steps && world_rank == 0)
    err << "zbrun: warning: no checkpoint will be written: --every " << o.run.every << " is more than --steps "
        << o.run.steps << "\n";
  return "";
}

// --pace against --timeout, and --fault truncate's op. "" or what is wrong.
std::string check_pace_and_fault(const Options& o, const ScheduleFile& file) {
  const Schedule& s = file.schedule;
  if (o.run.pace > 0 && o.run.timeout_s > 0) {
    // Paced, a receive may wait as long as the paced iteration's compute: a --timeout below it would
    // end a healthy run, blaming the rank that is only pacing.
    std::vector<Diag> unused;
    auto format_g = [](double v) {
      char text[40];
      std::snprintf(text, sizeof text, "%g", v);
      return std::string(text);
    };
    if (auto t = simulate_timeline(s, file.problem, &unused)) {
      const double paced = o.run.pace * from_quanta(t->makespan);
      if (paced >= o.run.timeout_s)
        return "--pace " + format_g(o.run.pace) + " makes one iteration's compute last " + format_g(paced) +
               " s (its planned makespan " + format_quanta(t->makespan) + " x --pace), and a receive may wait that "
               "long: give --timeout above it (e.g. --timeout " + format_g(std::ceil(2 * paced)) + "), or a smaller --pace";
    }
  }
  if (o.run.fault == Interpreter::Fault::kTruncate && o.run.fail_rank >= 0) {
    const Op& op = s.stages[o.run.fail_rank][o.run.fail_op];
    if (!is_send(op.type))
      return "--fault truncate: op " + std::to_string(o.run.fail_op) + " of rank " + std::to_string(o.run.fail_rank) +
             " is " + op_short(op) + ", not a send";
  }
  return "";
}

// The device the backend needs, and as many ranks as the schedule's stages. "" or what is wrong.
std::string check_device_and_ranks(const Options& o, const Schedule& s, bool mpi, int world_size) {
  const bool cuda = o.backend == Backend::kCuda;
#ifdef ZBPP_HAVE_CUDA
  if (cuda) {
    std::string why;
    if (cuda_device_count(&why) == 0)
      return "--backend cuda: " + (why.empty() ? std::string("no GPU is visible to this process") : why);
  }
#else
  if (cuda) return "--backend cuda: this zbrun was built without CUDA (no nvcc at configure time)";
#endif
  if (mpi && world_size != s.p)
    return o.schedule_file + ": planned for " + std::to_string(s.p) + " ranks, but " + std::to_string(world_size) +
           (world_size == 1 ? " rank is" : " ranks are") + " running: start it with mpirun -n " +
           std::to_string(s.p) +
           (world_size == 1 ? ", or add --local to run every rank in this process"
                            : ", or plan it for " + std::to_string(world_size) + " stages (zbplan plan -p " +
                                  std::to_string(world_size) + " ...)");
  return "";
}

}  // namespace

std::optional<CheckedInputs> check_inputs(Options& o, bool mpi, int world_rank, int world_size, std::ostream& err,
                                          std::string* failure) {
  const bool cuda = o.backend == Backend::kCuda;
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
  if (s.level != Level::kLowered)
    return fail(o.schedule_file + ": the schedule is compute-only; plan it without --compute-only so it holds send/recv");
  if (!o.profile.empty())
    for (const auto& ops : s.stages)
      for (const Op& op : ops)
        if (op.type == OpType::BW)
          return fail("--profile needs a schedule with separate B and W ops (zb-h1, zb-h2, heuristic, zb-v), not " +
                      shown_text(s.method));
  std::string why;
  auto model = load_gpt_config(o.model, &why);
  if (!model) return fail(why);
  if (std::string bad = choose_split(o, *file, &*model); !bad.empty()) return fail(bad);
  if (std::string bad = check_layer_split(*model, s.p * s.chunks); !bad.empty()) return fail(bad);
  if (!cuda)
    if (std::string bad = cpu_memory_shortfall(*model, s, mpi ? world_rank : -1); !bad.empty()) return fail(o.model + ": " + bad);
  if (std::string warning = empty_stages_warning(*model, s); !warning.empty() && world_rank == 0)
    err << "zbrun: warning: " << warning << "\n";
  auto data = DataSource::open(o.data, &why);
  if (!data) return fail(why);
  if (std::string bad = data->check(*model); !bad.empty()) return fail(bad);
  if (std::string bad = check_fault_targets(o, s); !bad.empty()) return fail(bad);
  if (std::string bad = check_outputs(o, world_rank, err); !bad.empty()) return fail(bad);
  if (std::string bad = check_pace_and_fault(o, *file); !bad.empty()) return fail(bad);
  if (!o.run.dump_weights.empty() && world_rank == 0) {
    if (std::string bad = check_weights_dir(o.run.dump_weights); !bad.empty()) return fail("--dump-weights: " + bad);
    if (std::string bad = check_writable_file(o.run.dump_weights + "/tensor0.f32"); !bad.empty())
      return fail("--dump-weights: cannot write " + bad);
  }
  if (std::string bad = check_device_and_ranks(o, s, mpi, world_size); !bad.empty()) return fail(bad);
  return CheckedInputs{std::move(*file), std::move(*checked), std::move(*model), std::move(*data)};
}

}  // namespace zbpp::zbrun
