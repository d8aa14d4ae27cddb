// zbrun command line: load and check the schedule, build each rank's backend and transport, run
// the steps, report losses and planned vs measured bubble rates.
#include "runtime/zbrun_cli.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "planner/cli_common.h"
#include "planner/cli_file_name.h"
#include "planner/cli_numbers.h"
#include "planner/lower.h"
#include "planner/output_file.h"
#include "planner/schedule_json.h"
#include "planner/simulate.h"
#include "planner/simulate_iterations.h"
#include "planner/trace.h"
#include "planner/validate.h"
#include "runtime/checkpoint.h"
#include "runtime/cpu/compute_cpu.h"
#include "runtime/data.h"
#include "runtime/interpreter.h"
#include "runtime/transport_local.h"
#ifdef ZBPP_HAVE_CUDA
#include "runtime/cuda/compute_cuda.h"
#include "runtime/cuda/green_context.h"
#include "runtime/cuda/transport_device.h"
#endif
#ifdef ZBPP_HAVE_NCCL
#include "runtime/cuda/transport_nccl.h"
#endif
#ifdef ZBPP_HAVE_MPI
#include <mpi.h>

#include "runtime/transport_mpi.h"
#endif

namespace zbpp {

namespace {

struct Options {
  std::string schedule_file, model = "tiny", data = "synthetic", metrics, trace, profile, dump_weights;
  int steps = 20;
  std::uint64_t seed = 1;
  double timeout_s = 10;
  bool local = false, quiet = false;
  bool check = false;  ///< check every input, say what would run, and stop before training
  std::string backend = "cpu";  ///< "cpu" or "cuda"
  int blas_threads = 1;         ///< OpenBLAS threads per process (the CPU backend's GEMMs)
  bool single_gpu = false;      ///< every stage in this process on GPU 0, one SM partition each
  AdamWConfig adamw;
  std::string fail_at;  ///< "RANK:OP": that rank fails at that op index (tests of error handling)
  std::string fault = "error";  ///< how it fails: "error", "hang" or "truncate" (a send)
  double pace = 0;  ///< > 0: each compute op lasts at least this many seconds per planned time unit
  std::string layer_split;  ///< "a,b,...": blocks per virtual stage
  std::string inject;       ///< "STEP:RANK": a NaN gradient on RANK at STEP
  int inject_step = -1, inject_rank = -1;
  int fail_rank = -1, fail_op = -1, fail_step = 0;
  std::string checkpoint;   ///< directory of checkpoints (checkpoint.h)
  int every = 0;            ///< checkpoint after every this many steps
  bool resume = false;      ///< start from the latest checkpoint in `checkpoint`
  std::uint64_t schedule_hash = 0;  ///< of the schedule file's text: ranks compare theirs at start-up
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

// A 48-bit digest per parameter tensor (in global order, exact in a double) so ranks can compare
// weights through the same all-reduce that carries everything else.
std::vector<double> weight_digests(const Compute& compute, int tensors) {
  std::vector<double> out(tensors, 0.0);
  for (const auto& [id, values] : compute.parameters()) {
    std::uint64_t h = 1469598103934665603ULL;
    for (float f : values) {
      std::uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      h = (h ^ bits) * 1099511628211ULL;
    }
    out[id] = static_cast<double>(h >> 16);
  }
  return out;
}

// --dump-weights DIR: each rank writes its tensors as DIR/tensor<id>.f32 (raw little-endian
// floats), for comparing runs to the last bit (tests measure ulps between optimizers with it).
bool dump_weights(const Options& o, const Compute& compute, std::string* why) {
  for (const auto& [id, values] : compute.parameters()) {
    std::string path = o.dump_weights + "/tensor" + std::to_string(id) + ".f32";
    std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    if (!write_file_replacing(path, bytes, why)) {
      *why = "--dump-weights: cannot write " + *why;
      return false;
    }
  }
  return true;
}

// All-reduces `values` (each rank fills its own part); on failure reports `what` failed on this
// rank, tells the others, and returns false.
bool gather(Transport* t, std::vector<double>* values, const Options& o, const char* what, std::ostream& err,
            std::mutex* print_mu) {
  std::string why;
  if (t->allreduce_sum(values, o.timeout_s, &why)) return true;
  std::lock_guard<std::mutex> lock(*print_mu);
  err << "zbrun: rank " + std::to_string(t->rank()) + ", " + what + ": " + why + "\n";  // one write: see stop_with
  t->abort("rank " + std::to_string(t->rank()) + " failed, " + what + ": " + why);
  return false;
}

// Per-op means a rank measures over the steps after the first: what --profile writes.
struct Profile {
  double sum[3] = {0, 0, 0};  // seconds of F, B, W ops
  int count[3] = {0, 0, 0};
  double mem_f = 0, mem_b = 0;  // bytes an F adds, bytes a B adds
  int mem_f_ops = 0, mem_b_ops = 0;
  double comm_seconds = 0;
  void add(const std::vector<Op>& ops, const StepReport& r) {
    for (const OpSpan& span : r.spans) {
      OpType t = ops[span.op_index].type;
      int k = t == OpType::F ? 0 : t == OpType::B ? 1 : t == OpType::W ? 2 : -1;
      if (k < 0) continue;
      sum[k] += span.end - span.start;
      ++count[k];
    }
    mem_f += r.mem_after_f;
    mem_b += r.mem_after_b;
    mem_f_ops += r.f_ops;
    mem_b_ops += r.b_ops;
  }
};

// What one rank runs on: its compute backend, and how an activation-sized payload for the T_comm
// ping-pong is made and, once it has come back, released (device memory on the GPU backend).
struct RankBackend {
  std::function<std::unique_ptr<Compute>(const std::vector<int>& virtual_stages)> make_compute;
  std::function<std::vector<float>()> payload;
  std::function<void(const std::vector<float>&)> release = [](const std::vector<float>&) {};
};

RankBackend cpu_backend(const Options& o, const GptConfig& model, const Schedule& s) {
  RankBackend b;
  b.make_compute = [&o, &model, &s](const std::vector<int>& vss) {
    return make_cpu_compute(model, vss, s.p * s.chunks, s.m, o.seed, o.adamw);
  };
  b.payload = [&model] { return std::vector<float>(static_cast<size_t>(model.tokens()) * model.channels, 1.0f); };
  return b;
}

#ifdef ZBPP_HAVE_CUDA
RankBackend cuda_backend(const Options& o, const GptConfig& model, const Schedule& s, const CudaStage& stage) {
  RankBackend b;
  // The rank's one stream: its green context's, or one made here (in the rank's thread, on its GPU),
  // shared by the backend and the T_comm payloads.
  std::shared_ptr<CUstream_st> owned;
  CudaStage mine = stage;
  if (!mine.stream) {
    cudaStream_t made = nullptr;
    cudaError_t rc = cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking);
    if (rc != cudaSuccess)
      throw std::runtime_error(std::string("creating the rank's stream: ") + cudaGetErrorString(rc));
    owned.reset(made, [](cudaStream_t st) { cudaStreamDestroy(st); });
    mine.stream = made;
  }
  b.make_compute = [&o, &model, &s, mine, owned](const std::vector<int>& vss) {
    return make_cuda_compute(model, vss, s.p * s.chunks, s.m, o.seed, o.adamw, mine);
  };
  b.payload = [&model, mine, owned] { return make_payload(cuda_activation_bytes(model), mine.stream); };
  b.release = [mine, owned](const std::vector<float>& handle) { release_payload(handle, mine.stream); };
  return b;
}
#endif

// One-way latency of an activation-sized message between neighbours: rank r first answers its
// left neighbour's pings, then pings its right neighbour, so the chain cannot deadlock.
bool measure_comm(const Options& o, Transport* t, const RankBackend& backend, double* seconds, std::ostream& err,
                  std::mutex* print_mu) {
  const int rank = t->rank(), p = t->size(), rounds = 20;
  std::string why;
  bool ok = true;
  Message got;
  if (rank > 0)
    for (int i = 0; i < rounds && ok; ++i)
      ok = t->recv(rank - 1, kActivation, &got, o.timeout_s, &why) && t->send(rank - 1, kGradient, got, &why);
  double one_way = 0;
  if (ok && rank + 1 < p) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < rounds && ok; ++i)
      ok = t->send(rank + 1, kActivation, Message{0, 0, backend.payload()}, &why) &&
           t->recv(rank + 1, kGradient, &got, o.timeout_s, &why) && (backend.release(got.data), true);
    one_way = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / (2.0 * rounds);
  }
  std::vector<double> all(p, 0.0);
  all[rank] = one_way;
  if (ok) ok = t->allreduce_sum(&all, o.timeout_s, &why);
  if (!ok) {
    std::lock_guard<std::mutex> lock(*print_mu);
    err << "zbrun: rank " + std::to_string(rank) + ", measuring T_comm: " + why + "\n";
    t->abort("rank " + std::to_string(rank) + " failed, measuring T_comm: " + why);
    return false;
  }
  double sum = 0;
  for (int r = 0; r + 1 < p; ++r) sum += all[r];
  *seconds = p > 1 ? sum / (p - 1) : 0.0;
  return true;
}

// Gathers every rank's profile and has rank 0 write the problem file (times in ms, memory in MiB).
// False with *why on a failed write; false with *why empty when the gather failed (it reported).
bool write_profile(const Options& o, const ScheduleFile& file, const GptConfig& model, const Profile& prof,
                   Transport* transport, std::ostream& out, std::ostream& err, std::mutex* print_mu, std::string* why) {
  why->clear();
  const Schedule& s = file.schedule;
  const int rank = transport->rank(), fields = 5;
  std::vector<double> all(static_cast<size_t>(s.p) * fields, 0.0);
  auto mean = [](double sum, int n) { return n > 0 ? sum / n : 0.0; };
  double* mine = &all[static_cast<size_t>(rank) * fields];
  for (int k = 0; k < 3; ++k) mine[k] = mean(prof.sum[k], prof.count[k]) * 1e3;
  mine[3] = mean(prof.mem_f, prof.mem_f_ops) / (1 << 20);
  mine[4] = mine[3] + mean(prof.mem_b, prof.mem_b_ops) / (1 << 20);
  if (!gather(transport, &all, o, "gathering the profile", err, print_mu)) return false;
  if (rank != 0) return true;
  // Round to 1e-6 so the file holds exactly what zbplan will read.
  auto round6 = [](double v) { return std::round(v * 1e6) / 1e6; };
  nlohmann::json j;
  j["comment"] = "profiled by zbrun: model " + model.name + ", " + std::to_string(o.steps) + " steps of " + s.method +
                 "; times in ms (mean per op of one chunk), memory in MiB per microbatch";
  j["p"] = s.p;
  j["m"] = s.m;
  j["chunks"] = s.chunks;
  const char* names[fields] = {"t_f", "t_b", "t_w", "mem_b", "mem_w"};
  for (int f = 0; f < fields; ++f) {
    nlohmann::json list = nlohmann::json::array();
    for (int r = 0; r < s.p; ++r) list.push_back(round6(std::max(all[static_cast<size_t>(r) * fields + f], f < 2 ? 1e-6 : 0.0)));
    j[names[f]] = list;
  }
  j["t_comm"] = round6(prof.comm_seconds * 1e3);
  if (!write_file_replacing(o.profile, j.dump(2) + "\n", why)) {
    *why = "--profile: cannot write " + *why;
    return false;
  }
  std::lock_guard<std::mutex> lock(*print_mu);
  out << "wrote profile " << o.profile << " (plan with: zbplan plan --problem " << o.profile << " ...)\n";
  // The GEMM rate each op reached: its linear layers' FLOPs over its measured time (docs/benchmarks.md).
  for (int r = 0; r < s.p; ++r) {
    double flops = 0;  // per op of one chunk, as the times are
    for (int vs : s.placement[r]) flops += gemm_flops(model, vs, s.p * s.chunks) / s.chunks;
    const double* t = &all[static_cast<size_t>(r) * fields];  // ms
    char line[160];
    std::snprintf(line, sizeof line, "  rank %d: GEMM GFLOP/s  F %.1f  B %.1f  W %.1f  (%.4f GFLOP per op)\n", r,
                  flops / t[0] * 1e-6, flops / t[1] * 1e-6, flops / t[2] * 1e-6, flops * 1e-9);
    out << line;
  }
  return true;
}

// Gathers every rank's measured op spans of the last step (each rank fills its own part of one
// all-reduced vector) and has rank 0 write them, with the planned timeline, as one trace. Fails as
// write_profile does.
bool write_trace(const Options& o, const ScheduleFile& file, const Timeline& planned, const StepReport& report,
                 Transport* transport, std::ostream& out, std::ostream& err, std::mutex* print_mu, std::string* why) {
  why->clear();
  const Schedule& s = file.schedule;
  Schedule compute = compute_projection(s);
  std::vector<size_t> offset(s.p + 1, 0);
  for (int r = 0; r < s.p; ++r) offset[r + 1] = offset[r] + 2 * compute.stages[r].size();
  std::vector<double> spans(offset[s.p], 0.0);
  int rank = transport->rank();
  for (size_t k = 0; k < report.spans.size() && 2 * k + 1 < offset[rank + 1] - offset[rank]; ++k) {
    spans[offset[rank] + 2 * k] = report.spans[k].start;
    spans[offset[rank] + 2 * k + 1] = report.spans[k].end;
  }
  if (!gather(transport, &spans, o, "gathering the trace", err, print_mu)) return false;
  if (rank != 0) return true;
  nlohmann::json events = timeline_trace_events(compute, planned, 0, "planned (" + s.method + ", problem time units as ms)");
  // The trace writer takes ticks as nanoseconds (1 tick = 1e-6 of a millisecond): seconds * 1e9.
  Timeline measured = planned;
  for (int r = 0; r < s.p; ++r)
    for (size_t k = 0; k < compute.stages[r].size(); ++k)
      measured.ops[r][k] = {static_cast<Ticks>(spans[offset[r] + 2 * k] * 1e9),
                            static_cast<Ticks>(spans[offset[r] + 2 * k + 1] * 1e9)};
  nlohmann::json more = timeline_trace_events(compute, measured, 1, "measured (last step, wall clock)");
  events.insert(events.end(), more.begin(), more.end());
  if (!write_file_replacing(o.trace, nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n",
                            why)) {
    *why = "--trace: cannot write " + *why;
    return false;
  }
  std::lock_guard<std::mutex> lock(*print_mu);
  out << "wrote trace " << o.trace << " (planned and measured; open in ui.perfetto.dev)\n";
  return true;
}

int run_rank_unguarded(const Options& o, const ScheduleFile& file, const GptConfig& model, const DataSource& data,
                       const Timeline& planned, const RankBackend& backend, Transport* transport, std::ostream& out,
                       std::ostream& err, std::mutex* print_mu);

// Everything one rank does; rank 0 also prints. Returns the exit code. Anything thrown below
// (an allocation that fails, say) becomes a message and a stopped run, not an abort.
int run_rank(const Options& o, const ScheduleFile& file, const GptConfig& model, const DataSource& data,
             const Timeline& planned, const RankBackend& backend, Transport* transport, std::ostream& out,
             std::ostream& err, std::mutex* print_mu) {
  try {
    return run_rank_unguarded(o, file, model, data, planned, backend, transport, out, err, print_mu);
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lock(*print_mu);
      err << "zbrun: rank " + std::to_string(transport->rank()) + ": " + e.what() + "\n";
    }
    transport->abort("rank " + std::to_string(transport->rank()) + " failed: " + e.what());
    return 1;
  }
}

int run_rank_unguarded(const Options& o, const ScheduleFile& file, const GptConfig& model, const DataSource& data,
                       const Timeline& planned, const RankBackend& backend, Transport* transport, std::ostream& out,
                       std::ostream& err, std::mutex* print_mu) {
  const Schedule& s = file.schedule;
  const int rank = transport->rank();
  std::vector<int> vss;
  for (int c = 0; c < s.chunks; ++c) vss.push_back(s.placement[rank][c]);
  auto compute = backend.make_compute(vss);
  Interpreter interp(s, rank, compute.get(), transport, o.adamw, o.timeout_s);
  const auto fault = o.fault == "hang"       ? Interpreter::Fault::kHang
                     : o.fault == "truncate" ? Interpreter::Fault::kTruncate
                                             : Interpreter::Fault::kError;
  if (o.pace > 0) {
    std::vector<double> min_seconds;
    for (const Op& op : s.stages[rank])
      min_seconds.push_back(is_compute(op.type) ? o.pace * from_quanta(op_duration(op, rank, file.problem)) : 0.0);
    interp.set_pace(std::move(min_seconds));
  }
  // Prints "zbrun: TEXT", tells the other ranks this one failed and why (so each of their
  // messages names it), and gives the exit code.
  auto stop_with = [&](const std::string& text) {
    {
      std::lock_guard<std::mutex> lock(*print_mu);
      // One write (std::cerr flushes every <<): under mpirun, lines of ranks stay whole.
      err << "zbrun: " + text + "\n";
    }
    const std::string who = "rank " + std::to_string(rank), mine = who + ": ";
    transport->abort(who + " failed: " + (text.compare(0, mine.size(), mine) == 0 ? text.substr(mine.size()) : text));
    return 1;
  };
  auto stop = [&](const std::string& why) { return stop_with("rank " + std::to_string(rank) + ": " + why); };
  // A failed step names itself first: "zbrun: step 3, rank 1, op 7 (...): ...".
  auto failed = [&](const std::string& what, const std::string& why) { return stop_with(what + ", " + why); };
  // Held for the whole run: another run given this directory is refused, naming this one.
  std::unique_ptr<CheckpointLock> checkpoint_lock;
  if (!o.checkpoint.empty()) {
    std::string why;
    if (!(checkpoint_lock = lock_checkpoints(o.checkpoint, rank, &why))) return stop(why);
  }
  // Every rank must replay the same file: compare the hashes of their texts (as two exact halves).
  std::vector<double> hashes(2 * static_cast<size_t>(s.p), 0.0);
  hashes[2 * rank] = static_cast<double>(o.schedule_hash >> 32);
  hashes[2 * rank + 1] = static_cast<double>(o.schedule_hash & 0xffffffffULL);
  if (!gather(transport, &hashes, o, "comparing schedule files", err, print_mu)) return 1;
  for (int r = 0; r < s.p; ++r)
    if (hashes[2 * r] != hashes[0] || hashes[2 * r + 1] != hashes[1])
      return stop("rank " + std::to_string(r) + " replays another schedule file than rank 0 (their texts differ)");
  int first_step = 0;
  if (o.resume) {
    // Resume where every rank has a checkpoint: the smallest of the ranks' latest.
    std::vector<int> steps = checkpoint_steps(o.checkpoint, rank);
    std::vector<double> latest(s.p, 0.0);
    latest[rank] = steps.empty() ? -1 : steps.back();
    if (!gather(transport, &latest, o, "finding the checkpoint to resume", err, print_mu)) return 1;
    first_step = static_cast<int>(*std::min_element(latest.begin(), latest.end()));
    if (first_step < 0) return stop(o.checkpoint + ": no checkpoint of this rank or another to resume from");
    if (first_step >= o.steps) {
      // Every rank gathered the same step, so every rank ends here alike: no one waits.
      if (rank == 0) {
        std::lock_guard<std::mutex> lock(*print_mu);
        err << "zbrun: --resume: " << o.checkpoint << " holds the state after " << first_step << " steps, and --steps "
            << o.steps << " asks for no more; give --steps above " << first_step << "\n";
      }
      return 1;
    }
    std::string state, why;
    if (!read_checkpoint(o.checkpoint, rank, first_step, o.schedule_hash, &state, &why) || !compute->load_state(state, &why))
      return stop("cannot resume: " + why);
    interp.start_at(first_step);
    if (rank == 0 && !o.quiet) {
      std::lock_guard<std::mutex> lock(*print_mu);
      out << "resumed from " << o.checkpoint << " after step " << first_step - 1 << "\n";
    }
  }
  // Streamed a line per step, so it can be followed; every write is checked.
  StreamFile metrics;
  std::string metrics_error;
  if (rank == 0 && !o.metrics.empty() && !metrics.open(o.metrics, o.resume, &metrics_error))
    return stop("--metrics: cannot write " + metrics_error);
  double measured_sum = 0, seconds_sum = 0;
  int measured_steps = 0;
  StepReport last_report;
  Profile profile;
  if (!o.profile.empty() && !measure_comm(o, transport, backend, &profile.comm_seconds, err, print_mu))
    return 1;
  size_t peak_bytes = 0;
  int rolled_back = 0, replays = 0, held = 0;
  // Prints and sums the steps whose figures are complete (with post-validation, a step later).
  // False when the metrics line cannot be written (metrics_error says why).
  auto report_finished = [&]() {
    for (const StepReport& report : interp.take_reports()) {
      const int step = report.step;
      last_report = report;
      peak_bytes = std::max(peak_bytes, report.peak_activation_bytes);
      rolled_back += report.chain_start_rolled_back ? 1 : 0;
      replays += report.replays;
      held += report.held ? 1 : 0;
      if (step > 0 || o.steps == 1) profile.add(s.stages[rank], report);
      if (step > 0) {  // the first step includes allocation; leave it out of the averages
        measured_sum += report.measured_bubble;
        seconds_sum += report.seconds;
        ++measured_steps;
      }
      if (rank != 0) continue;
      std::lock_guard<std::mutex> lock(*print_mu);
      std::string notes = report.skipped ? " (skipped: non-finite gradient)" : "";
      if (report.replays > 0) notes += " (replayed: the previous step was rolled back and redone)";
      if (report.held) notes += " (forwards held until validation)";
      if (!o.quiet)
        out << "step " << step << ": loss " << g9(report.loss) << notes << ", " << f4(report.seconds)
            << " s, span bubble rate " << f4(report.measured_bubble) << " measured / " << f4(planned.span_bubble_rate)
            << " planned\n";
      if (metrics.is_open()) {
        // JSON has no nan or inf: such a figure is written null, and "nonfinite" says one was.
        bool nonfinite = false;
        auto number = [&nonfinite](double v) {
          nonfinite = nonfinite || !std::isfinite(v);
          return std::isfinite(v) ? g9(v) : std::string("null");
        };
        std::ostringstream line;
        line << "{\"step\": " << step << ", \"loss\": " << number(report.loss) << ", \"iteration_seconds\": "
             << number(report.seconds) << ", \"measured_span_bubble_rate\": " << number(report.measured_bubble)
             << ", \"planned_span_bubble_rate\": " << number(planned.span_bubble_rate)
             << ", \"grad_norm\": " << number(report.grad_norm) << ", \"skipped\": " << (report.skipped ? "true" : "false")
             << ", \"replays\": " << report.replays << ", \"held\": " << (report.held ? "true" : "false")
             << ", \"nonfinite\": " << (nonfinite ? "true" : "false") << "}\n";
        if (!metrics.write(line.str(), &metrics_error)) return false;
      }
    }
    return true;
  };
  auto metrics_failed = [&] { return stop("--metrics: cannot write " + metrics_error); };
  // When each step's run_step returned: the steady-state period is the mean gap after the first.
  std::vector<std::chrono::steady_clock::time_point> step_ends;
  for (int step = first_step; step < o.steps; ++step) {
    std::string why;
    if (step == o.inject_step && rank == o.inject_rank) interp.inject_nonfinite_next_step();
    interp.set_fault(rank == o.fail_rank && step == o.fail_step ? o.fail_op : -1, fault);
    if (!interp.run_step(data.step_batches(model, step, s.m), &why)) return failed("step " + std::to_string(step), why);
    step_ends.push_back(std::chrono::steady_clock::now());
    if (!report_finished()) return metrics_failed();
    if (!o.checkpoint.empty() && (step + 1) % o.every == 0) {
      // Validate the last step first (post-validation), so the checkpoint holds final weights.
      std::string state;
      if (!interp.finish(&why)) return failed("validating step " + std::to_string(step) + " for its checkpoint", why);
      if (!report_finished()) return metrics_failed();
      if (!compute->save_state(&state)) return stop("this backend cannot write checkpoints");
      if (!write_checkpoint(o.checkpoint, rank, step + 1, o.schedule_hash, state, &why)) return stop(why);
    }
  }
  std::string why;
  if (!interp.finish(&why)) return failed("validating the last step", why);
  if (!report_finished()) return metrics_failed();
  // A failed output stops every rank at once (stop tells them), whichever rank it was on.
  if (!o.dump_weights.empty() && !dump_weights(o, *compute, &why)) return stop(why);
  if (!o.trace.empty() && !write_trace(o, file, planned, last_report, transport, out, err, print_mu, &why))
    return why.empty() ? 1 : stop(why);
  if (!o.profile.empty() && !write_profile(o, file, model, profile, transport, out, err, print_mu, &why))
    return why.empty() ? 1 : stop(why);
  // Measured steady-state period per rank (iterations back to back, the first left out: it
  // allocates); the slowest rank's is the run's.
  std::vector<double> periods(s.p, 0.0);
  const int gaps = static_cast<int>(step_ends.size()) - 1;
  if (gaps > 0) periods[rank] = std::chrono::duration<double>(step_ends.back() - step_ends.front()).count() / gaps;
  if (!gather(transport, &periods, o, "gathering measured periods", err, print_mu)) return 1;
  const double measured_period = *std::max_element(periods.begin(), periods.end());
  // Peak activation memory per rank, measured, beside the plan's (in the problem's memory unit).
  std::vector<double> peaks(s.p, 0.0);
  peaks[rank] = static_cast<double>(peak_bytes);
  if (!gather(transport, &peaks, o, "gathering peak memory", err, print_mu)) return 1;
  // Final weights, digested per tensor and gathered, so runs can be compared exactly.
  std::vector<double> digests = weight_digests(*compute, global_tensor_count(model));
  if (!gather(transport, &digests, o, "final weight digest", err, print_mu)) return 1;
  std::uint64_t h = 1469598103934665603ULL;
  for (double d : digests) h = (h ^ static_cast<std::uint64_t>(d)) * 1099511628211ULL;
  char digest[32];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h));
  if (metrics.is_open()) {
    // The last line, then the checked close: until then the run has not succeeded.
    std::string last = "{\"final\": true, \"weights_digest\": \"" + std::string(digest) +
                       "\", \"measured_period_seconds\": " + g9(gaps > 0 ? measured_period : 0) + "}\n";
    if (!metrics.write(last, &metrics_error) || !metrics.close(&metrics_error)) return metrics_failed();
  }
  if (rank == 0) {
    std::lock_guard<std::mutex> lock(*print_mu);
    out << "done: " << o.steps << " steps of " << s.method << " on " << s.p << " ranks (p=" << s.p << ", m=" << s.m
        << ", chunks=" << s.chunks << "), model " << model.name << " (" << model.layers << " layers)\n";
    if (measured_steps > 0)
      out << "  iteration time " << f4(seconds_sum / measured_steps) << " s (mean of steps 1.." << o.steps - 1
          << "), span bubble rate " << f4(measured_sum / measured_steps) << " measured / "
          << f4(planned.span_bubble_rate) << " planned\n";
    // The plan's time per iteration in a run (issue 10): the steady-state period of iterations back
    // to back under this optimizer, beside one iteration alone; in the problem's unit (ms after --profile).
    std::vector<Diag> unused;
    IterationOptions figures;
    figures.op_times = false;
    auto it = simulate_iterations(s, file.problem, figures, &unused);
    if (it)
      out << "  planned per iteration: period " << format_quanta(it->period) << " (steady state), one alone "
          << format_quanta(it->wall) << " (in the problem's time unit)\n";
    if (gaps > 0) {
      out << "  measured per iteration: period " << f4(measured_period) << " s (steady state: steps "
          << first_step + 1 << ".." << o.steps - 1 << ", slowest rank)";
      if (o.pace > 0 && it)
        out << " = " << f4(measured_period / o.pace) << " time units at --pace " << g9(o.pace) << " s, planned "
            << format_quanta(it->period);
      out << "\n";
    }
    out << "  optimizer " << s.optimizer;
    if (s.optimizer == kOptimizerPostValidation)
      out << ": " << rolled_back << " speculative step" << (rolled_back == 1 ? "" : "s")
          << " rolled back and redone on rank " << interp.state_chain_start() << "; " << replays << " iteration"
          << (replays == 1 ? "" : "s")
          << " replayed, " << held << " held until validated";
    out << "\n";
    out << "  peak activation memory per rank: measured [";
    for (int r = 0; r < s.p; ++r) out << (r ? ", " : "") << f4(peaks[r] / (1 << 20)) << " MiB";
    out << "], planned [";
    for (int r = 0; r < s.p; ++r) out << (r ? ", " : "") << format_quanta(planned.peak_memory[r]);
    out << "] (in the problem's memory unit)\n";
    out << "  weights digest " << digest;
    // The bits depend on the BLAS kernels, so the line says which gave them.
    if (o.backend == "cpu") out << " (" << cpu_kernels() << ")";
    out << "\n";
  }
  return 0;
}

#ifdef ZBPP_HAVE_CUDA
// --backend cuda in one process (--single-gpu, or --local): one thread per stage on GPU 0, each in
// its own green-context partition with --single-gpu when the GPU has the SMs, else on its own
// stream; activations move by device-to-device copies.
int run_cuda_threads(const Options& o, const ScheduleFile& file, const GptConfig& model, const DataSource& data,
                     const Timeline& planned, std::ostream& out, std::ostream& err, std::mutex* print_mu) {
  const Schedule& s = file.schedule;
  std::unique_ptr<GreenPartitions> parts;
  if (o.single_gpu) {
    std::string why;
    parts = GreenPartitions::create(0, s.p, &why);
    std::lock_guard<std::mutex> lock(*print_mu);
    out << "single GPU: " << (parts ? parts->describe() : "no SM partitions (" + why + "), one stream per stage") << "\n";
  }
  auto hub = make_local_hub(s.p);
  std::vector<int> codes(s.p, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < s.p; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<Transport> transport;
      CudaStage stage;
      RankBackend backend;
      try {
        cudaError_t rc = cudaSetDevice(0);
        if (rc != cudaSuccess) throw std::runtime_error(std::string("cudaSetDevice (GPU 0): ") + cudaGetErrorString(rc));
        if (parts) {
          parts->enter(r);
          stage.stream = parts->stream(r);
          stage.sm_count = parts->sm_count(r);
        }
        transport = make_device_transport(hub, r);
        backend = cuda_backend(o, model, s, stage);
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(*print_mu);
          err << "zbrun: rank " << r << ": " << e.what() << "\n";
        }
        make_local_transport(hub, r)->abort("rank " + std::to_string(r) + " failed");
        codes[r] = 1;
        return;
      }
      codes[r] = run_rank(o, file, model, data, planned, backend, transport.get(), out, err, print_mu);
    });
  for (auto& t : threads) t.join();
  for (int c : codes)
    if (c != 0) return 1;
  return 0;
}
#endif

#if defined(ZBPP_HAVE_NCCL) && defined(ZBPP_HAVE_MPI)
// --backend cuda under mpirun: this process is one rank on one GPU, NCCL between ranks.
int run_nccl_rank(const Options& o, const ScheduleFile& file, const GptConfig& model, const DataSource& data,
                  const Timeline& planned, std::ostream& out, std::ostream& err, std::mutex* print_mu) {
  const Schedule& s = file.schedule;
  std::vector<NcclChannel> channels;  // every rank derives the same list from the same schedule
  for (int r = 0; r < s.p; ++r) {
    for (const Op& op : s.stages[r]) {
      if (op.type == OpType::SEND_F) channels.push_back({r, op.peer, kActivation});
      if (op.type == OpType::SEND_B) channels.push_back({r, op.peer, kGradient});
    }
    if (r + 1 < s.p) {  // the T_comm ping-pong of --profile
      channels.push_back({r, r + 1, kActivation});
      channels.push_back({r + 1, r, kGradient});
    }
  }
  int device = 0;
  std::string why;
  auto transport = make_nccl_transport(channels, o.timeout_s, &device, &why);
  if (!transport) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    err << "zbrun: rank " << rank << ", setting up NCCL: " << why << "\n";
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  RankBackend backend;
  try {
    backend = cuda_backend(o, model, s, CudaStage{device, nullptr, 0});
  } catch (const std::exception& e) {
    err << "zbrun: rank " << transport->rank() << ": " << e.what() << "\n";
    transport->abort("rank " + std::to_string(transport->rank()) + " failed");
    return 1;
  }
  int code = run_rank(o, file, model, data, planned, backend, transport.get(), out, err, print_mu);
  transport.reset();
  return code;
}
#endif

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

}  // namespace

int run_zbrun(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool use_mpi) {
  CLI::App app{"zbrun: replays a zbplan schedule file, training a GPT with split backward (B and W)", "zbrun"};
  set_up_app(&app, "zbrun");
  Options o;
  app.add_option("schedule", o.schedule_file, "lowered schedule file from zbplan plan")->required()->check(file_name());
  app.add_option("--model", o.model,
                 std::string("a preset (") + kGptPresets + ") or a model JSON file {vocab, seq, channels, heads, "
                 "layers, batch}")
      ->check(file_name())
      ->option_text("PRESET|FILE");
  // Every number goes through cli_numbers.h: decimal, whole token, finite, in range.
  const auto positive = real_in(0, kAnyReal, true);
  app.add_option("--steps", o.steps, "training steps")->check(integer_in(1, 100000000));
  app.add_option("--seed", o.seed, "initialisation seed")->check(integer_in(0, std::numeric_limits<long long>::max()));
  app.add_option("--threads", o.blas_threads,
                 "OpenBLAS threads of the CPU backend's GEMMs, per process (more for a rank that owns several cores; "
                 "results are the same bits)")
      ->check(integer_in(1, 256));
  app.add_option("--data", o.data, "\"synthetic\" or a text file, read as bytes")
      ->check(file_name())
      ->option_text("synthetic|FILE");
  app.add_option("--metrics", o.metrics, "write one JSON object per step (JSON lines)")->check(file_name());
  app.add_option("--profile", o.profile,
                 "measure T_F, T_B, T_W, T_comm (ms) and M_B, M_W (MiB) per stage and write them as a problem file "
                 "for zbplan")
      ->check(file_name());
  app.add_option("--dump-weights", o.dump_weights,
                 "after training, write every weight tensor to DIR/tensor<id>.f32 (raw floats)")
      ->check(dir_name());
  app.add_option("--trace", o.trace,
                 "write a Chrome/Perfetto trace of the last step: measured ops per rank, planned beside")
      ->check(file_name());
  // A wait's deadline is now + timeout: a week at most keeps it far from overflowing the clock.
  app.add_option("--timeout", o.timeout_s, "seconds any wait may take before the run fails")
      ->check(real_in(0, 7 * 86400, true));
  app.add_option("--lr", o.adamw.lr, "AdamW learning rate")->check(positive);
  app.add_option("--clip-norm", o.adamw.clip_norm, "global gradient-norm clip (<= 0: off)")
      ->check(real_in(-kAnyReal, kAnyReal));
  app.add_flag("--local", o.local, "run all ranks as threads in this process (no mpirun)");
  app.add_option("--backend", o.backend, "compute backend: cpu, or cuda (bf16 on GPUs; NCCL under mpirun)")
      ->transform(one_of({"cpu", "cuda"}, "backend"));
  app.add_flag("--single-gpu", o.single_gpu,
               "--backend cuda with every stage in this process on GPU 0, each on its own SM partition "
               "(green contexts) or, where those are unavailable, its own stream");
  app.add_flag("--quiet", o.quiet, "print only the summary");
  app.add_flag("--check", o.check,
               "check the schedule, model, data, output paths and rank count, say what would run, and exit (0: ok)");
  app.add_option("--layer-split", o.layer_split,
                 "blocks per virtual stage, e.g. 1,2,2,1 (default: even, the first and last take fewer)")
      ->check(integer_list_in(0, std::numeric_limits<int>::max()));
  app.add_option("--inject-nonfinite", o.inject,
                 "a NaN in that rank's gradients at that step (the step is skipped on every rank)")
      ->type_name("STEP:RANK");
  app.add_option("--fail-at", o.fail_at,
                 "make that rank fail at that op of that step (default step 0), to test error handling")
      ->type_name("RANK:OP[@STEP]");
  app.add_option("--fault", o.fault,
                 "how --fail-at fails: error (the op fails), hang (the rank stops answering), truncate (a send op "
                 "sends half its message)")
      ->transform(one_of({"error", "hang", "truncate"}, "fault"));
  app.add_option("--pace", o.pace,
                 "every compute op lasts at least S seconds per time unit of its planned duration (sleeping the "
                 "rest), so a run follows the plan's timing where cores are too few for one rank each (default: off)")
      ->check(positive)
      ->option_text("S")
      ->default_str("");
  app.add_option("--checkpoint", o.checkpoint,
                 "directory for checkpoints: DIR/step<N>.rank<R>.ckpt, the weights and optimizer state after N steps, "
                 "written atomically")->check(dir_name());
  app.add_option("--every", o.every, "with --checkpoint: write one after every N steps (default: one, at the end)")
      ->check(integer_in(1, 1 << 30))
      ->option_text("N")
      ->default_str("");
  app.add_flag("--resume", o.resume, "with --checkpoint: continue from the latest checkpoint every rank has");
  if (int code = parse_command_line(&app, argc, argv, out, err); code >= 0) return code;
  auto usage = [&err](const std::string& message) { return usage_error(err, "zbrun", "", message); };

  if (!o.fail_at.empty()) {
    std::string bad = parse_fields(o.fail_at, ":@", 2, {&o.fail_rank, &o.fail_op, &o.fail_step});
    if (!bad.empty()) return usage("--fail-at: expected RANK:OP or RANK:OP@STEP, got '" + o.fail_at + "': " + bad);
    if (o.fail_step >= o.steps)
      return usage("--fail-at " + o.fail_at + ": no step " + std::to_string(o.fail_step) + " (--steps " +
                   std::to_string(o.steps) + " runs steps 0.." + std::to_string(o.steps - 1) + ")");
  }
  if (o.fault != "error" && o.fail_rank < 0) return usage("--fault " + o.fault + " needs --fail-at RANK:OP");
  if (o.fault == "truncate" && (o.backend == "cuda" || o.single_gpu))
    return usage("--fault truncate: only with --backend cpu (CUDA messages carry device handles)");
  cpu_set_threads(o.blas_threads);
  if ((o.every > 0 || o.resume) && o.checkpoint.empty()) return usage("--every and --resume need --checkpoint DIR");
  if (!o.checkpoint.empty() && o.every == 0) o.every = o.steps;  // at least one, at the end
  if (!o.inject.empty()) {
    std::string bad = parse_fields(o.inject, ":", 2, {&o.inject_step, &o.inject_rank});
    if (!bad.empty()) return usage("--inject-nonfinite: expected STEP:RANK, got '" + o.inject + "': " + bad);
    if (o.inject_step >= o.steps)
      return usage("--inject-nonfinite " + o.inject + ": no step " + std::to_string(o.inject_step) + " (--steps " +
                   std::to_string(o.steps) + " runs steps 0.." + std::to_string(o.steps - 1) + ")");
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
        return usage(flag + " runs every rank in this process, but mpirun started " + n + " processes (" + var + "=" +
                     n + "): each would run the whole pipeline and write the same files; drop " + flag +
                     " under mpirun, or start zbrun without mpirun");
      }
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
  // Every rank checks the same inputs, so all of them fail alike and none waits for another.
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
  std::vector<Diag> diags;
  std::string schedule_text;
  auto file = load_schedule_file(o.schedule_file, &diags, &schedule_text);
  o.schedule_hash = text_hash(schedule_text);
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
  if (o.fail_rank >= s.p || o.fail_rank < -1 || (o.fail_rank >= 0 && (o.fail_op < 0 || o.fail_op >= static_cast<int>(s.stages[o.fail_rank].size()))))
    return fail("--fail-at " + o.fail_at + ": no such rank and op in this schedule (p = " + std::to_string(s.p) + ")");
  if (!o.inject.empty() && o.inject_rank >= s.p)
    return fail("--inject-nonfinite " + o.inject + ": no rank " + std::to_string(o.inject_rank) + " in this schedule (ranks 0.." +
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
  if (!o.checkpoint.empty())
    if (std::string bad = check_writable_dir(o.checkpoint); !bad.empty())
      return fail("--checkpoint: cannot write checkpoints into " + bad);
  if (o.fault == "truncate" && o.fail_rank >= 0) {
    const Op& op = s.stages[o.fail_rank][o.fail_op];
    if (!is_send(op.type))
      return fail("--fault truncate: op " + std::to_string(o.fail_op) + " of rank " + std::to_string(o.fail_rank) +
                  " is " + op_short(op) + ", not a send");
  }
  if (!o.dump_weights.empty() && world_rank == 0)
    if (std::string bad = check_writable_file(o.dump_weights + "/tensor0.f32"); !bad.empty())
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
  const Timeline& planned = *checked;
  std::mutex print_mu;
  if (mpi && world_size != s.p)
    return fail(o.schedule_file + ": planned for " + std::to_string(s.p) + " ranks, but " + std::to_string(world_size) +
                (world_size == 1 ? " rank is" : " ranks are") + " running: start it with mpirun -n " +
                std::to_string(s.p) +
                (world_size == 1 ? ", or add --local to run every rank in this process"
                                 : ", or plan it for " + std::to_string(world_size) + " stages (zbplan plan -p " +
                                       std::to_string(world_size) + " ...)"));
  if (o.check) {
    // Everything above is what a run checks before it trains; say what it would run.
    if (world_rank == 0)
      out << o.schedule_file << ": ok: " << s.method << " (" << s.optimizer << ") on " << s.p << " ranks (p=" << s.p
          << ", m=" << s.m << ", chunks=" << s.chunks << "), model " << model->name << " (" << model->layers
          << " layers), " << o.steps << " steps on " << o.backend << (mpi ? " under MPI" : " in one process") << "\n";
    return finish(0);
  }
  if (!o.checkpoint.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.checkpoint, ec);
    if (ec) return fail("--checkpoint: cannot create " + o.checkpoint + ": " + ec.message());
  }

  if (mpi) {
#ifdef ZBPP_HAVE_MPI
    if (cuda) {
#ifdef ZBPP_HAVE_NCCL
      return finish(run_nccl_rank(o, *file, *model, *data, planned, out, err, &print_mu));
#else
      return fail("--backend cuda under mpirun needs NCCL 2.18 or newer, which was not found at configure time "
                  "(see the CMake output; --single-gpu runs without NCCL)");
#endif
    }
    auto transport = make_mpi_transport();
    int code = run_rank(o, *file, *model, *data, planned, cpu_backend(o, *model, s), transport.get(), out, err,
                        &print_mu);
    transport.reset();
    return finish(code);
#endif
  }
#ifdef ZBPP_HAVE_CUDA
  if (cuda) return run_cuda_threads(o, *file, *model, *data, planned, out, err, &print_mu);
#endif
  // --local: one thread per rank over an in-process hub.
  const RankBackend backend = cpu_backend(o, *model, s);
  auto hub = make_local_hub(s.p);
  std::vector<int> codes(s.p, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < s.p; ++r)
    threads.emplace_back([&, r] {
      auto transport = make_local_transport(hub, r);
      codes[r] = run_rank(o, *file, *model, *data, planned, backend, transport.get(), out, err, &print_mu);
    });
  for (auto& t : threads) t.join();
  for (int c : codes)
    if (c != 0) return 1;
  return 0;
}

}  // namespace zbpp
