// zbrun --profile-layers' measuring (see profile_layers.h): one compute holding an embedding-only,
// a one-block and a head-only virtual stage, driven F, B, W per chunk like the interpreter does.
#include "runtime/profile_layers.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/backend/cpu/compute_cpu.h"
#include "runtime/data.h"
#ifdef ZBPP_HAVE_CUDA
#include "runtime/backend/cuda/compute_cuda.h"
#include "runtime/backend/cuda/green_context.h"
#endif

namespace zbpp {

namespace {

constexpr int kKinds = 3;  // embedding, block, head: virtual stages (and chunks) 0, 1, 2
constexpr LayerKind kKinds_[kKinds] = {LayerKind::kEmbedding, LayerKind::kBlock, LayerKind::kHead};

double round6(double v) { return std::round(v * 1e6) / 1e6; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Milliseconds `op` takes: by the backend's timer where its calls return before the work is done
// (CUDA), else by the wall clock around the call.
template <class Op>
double time_ms(Compute& compute, Op op) {
  if (OpTimer* timer = compute.timer()) {
    timer->start();
    timer->begin();
    op();
    timer->end();
    std::vector<std::pair<double, double>> times;
    std::string err;
    if (!timer->collect(&times, &err)) throw std::runtime_error("timing a layer: " + err);
    return (times.at(0).second - times.at(0).first) * 1e3;
  }
  const auto start = std::chrono::steady_clock::now();
  op();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// One microbatch's F, B and W of every chunk, in step order. Times land in t[kind][F/B/W]; the
// bytes each chunk holds from F to B and from B to W in held_f and held_w.
void run_once(Compute& compute, double t[kKinds][3], long long held_f[kKinds], long long held_w[kKinds]) {
  // x[c]: chunk c's output and chunk c + 1's input; d[c]: chunk c + 1's input gradient, chunk c's doutput.
  Payload x[2], d[2];
  auto held = [&compute] { return static_cast<long long>(compute.activation_bytes()); };
  for (int c = 0; c < kKinds; ++c) {
    const long long before = held();
    t[c][0] = time_ms(compute, [&] { compute.forward(c, 0, 0, c > 0 ? &x[c - 1] : nullptr, c < 2 ? &x[c] : nullptr); });
    held_f[c] = held() - before;
  }
  for (int c = kKinds - 1; c >= 0; --c) {
    const long long before = held();
    t[c][1] = time_ms(compute, [&] { compute.backward_input(c, 0, 0, c < 2 ? &d[c] : nullptr, c > 0 ? &d[c - 1] : nullptr); });
    held_w[c] = held_f[c] + (held() - before);  // B drops what only B reads
  }
  for (int c = kKinds - 1; c >= 0; --c) t[c][2] = time_ms(compute, [&] { compute.backward_weight(c, 0, 0); });
}

}  // namespace

GptConfig one_block_model(const GptConfig& model) {
  GptConfig one = model;
  one.layers = 1;
  one.split = {0, 1, 0};
  return one;
}

std::vector<LayerCost> measure_layer_kinds(Compute& compute, const GptConfig& model, int repeats,
                                           const BackendBytes& bytes) {
  const GptConfig one = one_block_model(model);
  auto data = DataSource::open("synthetic", nullptr);
  const auto batches = data->step_batches(one, 0, 1);
  compute.set_step_data(&batches);
  std::vector<double> times[kKinds][3];
  long long held_f[kKinds] = {}, held_w[kKinds] = {};
  for (int r = 0; r <= repeats; ++r) {  // run 0 warms up: first-touch pages, pools, kernel loads
    double t[kKinds][3];
    run_once(compute, t, held_f, held_w);
    if (r == 0) continue;
    for (int c = 0; c < kKinds; ++c)
      for (int k = 0; k < 3; ++k) times[c][k].push_back(t[c][k]);
  }
  std::vector<LayerCost> kinds(kKinds);
  for (int c = 0; c < kKinds; ++c) {
    LayerCost& k = kinds[c];
    k.kind = kKinds_[c];
    k.name = layer_kind_name(k.kind);
    // Rounded to 1e-6 ms, the planner's tick, so the file holds exactly what the planner reads.
    k.t_f = round6(median(times[c][0]));
    k.t_b = round6(median(times[c][1]));
    k.t_w = round6(median(times[c][2]));
    // Held bytes are the same every run (the last run's are kept). M_W may exceed M_B: the CUDA
    // backend keeps each linear layer's output gradient for W, more than B drops.
    k.activation_bytes = static_cast<double>(std::max(held_f[c], 0LL));
    k.activation_bytes_w = static_cast<double>(std::max(held_w[c], 0LL));
    double values = 0;
    for (const TensorSpec& spec : stage_tensors(one, c, kKinds)) values += static_cast<double>(spec.size);
    k.parameter_bytes = std::round(values * bytes.parameter);
    k.gradient_bytes = std::round(values * bytes.gradient);
    k.optimizer_bytes = std::round(values * bytes.optimizer);
    // The head sends nothing forward.
    k.output_bytes = c < 2 ? std::round(static_cast<double>(one.tokens()) * one.channels * bytes.activation) : 0;
  }
  return kinds;
}

std::optional<std::vector<LayerCost>> profile_layer_kinds(const GptConfig& model, const ProfileLayersOptions& o,
                                                          std::string* err) {
  const GptConfig one = one_block_model(model);
  if (std::string bad = check_layer_split(one, kKinds); !bad.empty()) {
    *err = bad;
    return std::nullopt;
  }
  const std::vector<int> all = {0, 1, 2};
  if (o.backend == Backend::kCuda) {
#ifdef ZBPP_HAVE_CUDA
    std::string why;
    if (cuda_device_count(&why) == 0) {
      *err = "--backend cuda: " + (why.empty() ? std::string("no GPU is visible to this process") : why);
      return std::nullopt;
    }
    if (cudaError_t rc = cudaSetDevice(0); rc != cudaSuccess) {
      *err = std::string("--backend cuda: cudaSetDevice (GPU 0): ") + cudaGetErrorString(rc);
      return std::nullopt;
    }
    // bf16 weights beside fp32 masters; fp32 gradients and AdamW moments; bf16 activations.
    BackendBytes bytes{4 + 2, 4, 8, 2};
    std::unique_ptr<GreenPartitions> parts;
    CudaStage stage;
    if (o.sm_parts > 1) {
      parts = GreenPartitions::create(0, o.sm_parts, &why);
      if (!parts) {
        *err = "--profile-sm-parts " + std::to_string(o.sm_parts) + ": " + why;
        return std::nullopt;
      }
      parts->enter(0);
      stage = CudaStage{0, parts->stream(0), parts->sm_count(0)};
    }
    auto compute = make_cuda_compute(one, all, kKinds, 1, o.seed, AdamWConfig{}, stage);
    auto kinds = measure_layer_kinds(*compute, model, o.repeats, bytes);
    compute.reset();  // before the partitions it runs on
    return kinds;
#else
    *err = "--backend cuda: this zbrun was built without CUDA (no nvcc at configure time)";
    return std::nullopt;
#endif
  }
  auto compute = make_cpu_compute(one, all, kKinds, 1, o.seed, AdamWConfig{});
  return measure_layer_kinds(*compute, model, o.repeats, BackendBytes{});
}

LayerCosts model_layer_costs(const GptConfig& model, const std::vector<LayerCost>& kinds, const std::string& source) {
  LayerCosts out;
  out.model = model.name;
  out.source = source;
  out.layers.push_back(kinds.at(0));
  for (int l = 0; l < model.layers; ++l) {
    out.layers.push_back(kinds.at(1));
    out.layers.back().name = "h" + std::to_string(l);
  }
  out.layers.push_back(kinds.at(2));
  return out;
}

}  // namespace zbpp
