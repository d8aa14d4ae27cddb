// zbpp_step_dump: one training step of the GPT through a compute backend, every tensor written out
// for an outside oracle (tests/oracle/oracle.py: PyTorch autograd, or another backend's dump).
//
// The model is cut into one virtual stage per block plus an embedding-only first and a head-only
// last one (--layer-split 0,1,...,1,0), one backend object each, so what F sends and B returns at
// every block boundary is visible. Per microbatch: F through all stages, then B back; then W of
// every microbatch in order, the global gradient norm, and one AdamW step with clipping.
//
// OUT_DIR/manifest.json lists every file (format in docs/oracle.md): the tokens, the initial
// parameters, the residual stream x<l> entering block l (x<L> enters the final LayerNorm) and its
// gradient dx<l> per microbatch, each parameter's gradient, the parameters and AdamW moments after
// the step, and the per-microbatch losses and global norm. Tensors are raw little-endian fp32 (tokens int32).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/output_file.h"
#include "runtime/backend/cpu/compute_cpu.h"
#include "runtime/compute.h"
#include "runtime/model.h"
#include "runtime/optimizer.h"
#include "runtime/state_format.h"
#ifdef ZBPP_HAVE_CUDA
#include "runtime/cuda/check.h"
#include "runtime/backend/cuda/compute_cuda.h"
#include "runtime/cuda/device_buffers.h"
#endif

namespace {

using zbpp::Compute;
using zbpp::GptConfig;
using zbpp::Payload;

// Every file through the project's one atomic writer: a failed dump never leaves a file that looks whole.
void write_file(const std::filesystem::path& path, const void* data, size_t bytes) {
  std::string err;
  if (!zbpp::write_file_replacing(path.string(), std::string(static_cast<const char*>(data), bytes), &err))
    throw std::runtime_error(err);
}

struct Dump {
  std::filesystem::path dir;
  nlohmann::json tensors = nlohmann::json::array();

  void write(const std::string& name, const std::string& role, const std::vector<long>& shape, const void* data,
             size_t bytes, const char* dtype, int id = -1) {
    const std::string file = name + (dtype[0] == 'i' ? ".i32" : ".f32");
    write_file(dir / file, data, bytes);
    nlohmann::json t = {{"name", name}, {"role", role}, {"shape", shape}, {"dtype", dtype}, {"file", file}};
    if (id >= 0) t["id"] = id;
    tensors.push_back(std::move(t));
  }
  void floats(const std::string& name, const std::string& role, const std::vector<long>& shape,
              const std::vector<float>& v, int id = -1) {
    long n = 1;
    for (long d : shape) n *= d;
    if (n != static_cast<long>(v.size()))
      throw std::logic_error(name + ": " + std::to_string(v.size()) + " values for its shape");
    write(name, role, shape, v.data(), v.size() * sizeof(float), "f32", id);
  }
  void params(const GptConfig& c, const std::string& role, const std::vector<std::unique_ptr<Compute>>& stages,
              bool grads) {
    for (const auto& s : stages)
      for (const auto& [id, v] : grads ? s->gradients() : s->parameters())
        floats(role + "." + zbpp::tensor_name(c, id), role, zbpp::tensor_shape(c, id), v, id);
  }
  // AdamW's moments after the step, from the backend's checkpoint bytes (both backends write
  // state_format.h's layout). The step alone cannot show the clipping (Adam's first update does not
  // depend on the gradients' scale); m and v do.
  void adamw_state(const GptConfig& c, const Compute& stage) {
    std::string bytes, why;
    if (!stage.save_state(&bytes)) throw std::runtime_error("the backend cannot save its state");
    zbpp::StateReader in(bytes);
    std::int64_t step = 0, count = 0;
    if (!in.header(-1, &step, &count, &why)) throw std::runtime_error("the backend's state: " + why);
    for (std::int64_t t = 0; t < count; ++t) {
      std::int64_t id = -1, n = -1;
      const char* data = nullptr;
      if (!in.tensor(&id, &n, &data, &why)) throw std::runtime_error("the backend's state: " + why);
      std::vector<float> values(static_cast<size_t>(n));
      const std::string name = zbpp::tensor_name(c, static_cast<int>(id));
      for (const char* role : {"adam_m", "adam_v"}) {
        data += values.size() * sizeof(float);  // past the parameters (dumped already), then past m
        std::memcpy(values.data(), data, values.size() * sizeof(float));
        floats(std::string(role) + "." + name, role, zbpp::tensor_shape(c, static_cast<int>(id)), values,
               static_cast<int>(id));
      }
    }
  }
};

// What one stage hands the next (an activation or an input gradient), as host floats. The CPU
// backend passes the floats themselves; the CUDA backend a bf16 device buffer (runtime/payload.h,
// device_buffers.h), which is read here and put back under a new id for the next stage.
std::vector<float> boundary_values(Payload* passed, long n) {
  if (!passed->on_device() && static_cast<long>(passed->host.size()) == n) return passed->host;
#ifdef ZBPP_HAVE_CUDA
  namespace cu = zbpp::cuda;
  cu::DeviceTensor t = cu::registry().take(cu::device_id(passed, "an activation to dump"));
  if (t.ready) ZBPP_CK(cudaEventSynchronize(t.ready), "waiting for an activation to dump");
  std::vector<std::uint16_t> raw(t.bytes / 2);
  ZBPP_CK(cudaMemcpy(raw.data(), t.ptr, t.bytes, cudaMemcpyDeviceToHost), "copying an activation to dump");
  *passed = Payload::of_device(cu::registry().put(t));
  if (static_cast<long>(raw.size()) != n)
    throw std::runtime_error("a device activation of " + std::to_string(t.bytes) + " bytes, expected bf16 x " +
                             std::to_string(n));
  std::vector<float> out(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(raw[i]) << 16;  // bf16 is fp32's upper half
    std::memcpy(&out[i], &bits, sizeof bits);
  }
  return out;
#else
  throw std::runtime_error("a stage passed " + passed->what() + ", expected " + std::to_string(n) + " floats");
#endif
}

// Tokens that reach every part of the vocabulary (ids >= 256 included) without a visible pattern.
std::vector<std::vector<int>> make_tokens(const GptConfig& c, int m, std::uint64_t seed) {
  std::vector<std::vector<int>> data(m);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 12345;
  for (auto& mb : data)
    for (int i = 0; i < c.batch * (c.seq + 1); ++i) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      mb.push_back(static_cast<int>((s >> 33) % static_cast<std::uint64_t>(c.vocab)));
    }
  return data;
}

// Every microbatch's F through the stages (dumping what each boundary sends), its B back (dumping
// each boundary's gradient), then every W: one step's compute on one process.
void run_microbatches(const GptConfig& c, int m, std::vector<std::unique_ptr<Compute>>& stages, Dump& dump) {
  const int vs_count = static_cast<int>(stages.size());
  const long BT = c.tokens(), C = c.channels;
  for (int mb = 0; mb < m; ++mb) {
    Payload act;
    for (int vs = 0; vs < vs_count; ++vs) {
      Payload out;
      stages[vs]->forward(0, mb, mb, vs == 0 ? nullptr : &act, vs + 1 < vs_count ? &out : nullptr);
      act = std::move(out);
      // What stage vs sends is the residual stream entering block vs (the last block's output for vs = L).
      if (vs + 1 < vs_count)
        dump.floats("x" + std::to_string(vs) + ".mb" + std::to_string(mb), "act", {c.batch, c.seq, C},
                    boundary_values(&act, BT * C));
    }
    Payload grad;
    for (int vs = vs_count - 1; vs >= 0; --vs) {
      Payload din;
      stages[vs]->backward_input(0, mb, mb, vs == vs_count - 1 ? nullptr : &grad, vs > 0 ? &din : nullptr);
      grad = std::move(din);
      if (vs > 0)
        dump.floats("dx" + std::to_string(vs - 1) + ".mb" + std::to_string(mb), "dact", {c.batch, c.seq, C},
                    boundary_values(&grad, BT * C));
    }
  }
  for (int mb = 0; mb < m; ++mb)
    for (auto& s : stages) s->backward_weight(0, mb, mb);

}

int run(int argc, char** argv) {
  CLI::App app{"One training step of the GPT with every tensor dumped, for the oracle tests (docs/oracle.md)."};
  std::string out_dir, model = "tiny", backend = "cpu";
  int m = 2;
  std::uint64_t seed = 1;
  zbpp::AdamWConfig adamw;
  adamw.clip_norm = 0.5f;  // below the tiny model's first gradient norm: the step clips
  adamw.weight_decay = 0.1f;
  app.add_option("out", out_dir, "directory to write (created; files in it are replaced)")->required();
  app.add_option("--model", model, "tiny, or a model JSON file")->capture_default_str();
  app.add_option("--microbatches", m, "microbatches in the step")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--seed", seed, "weights and tokens")->capture_default_str();
  app.add_option("--lr", adamw.lr, "AdamW learning rate")->capture_default_str();
  app.add_option("--weight-decay", adamw.weight_decay, "AdamW weight decay")->capture_default_str();
  app.add_option("--clip-norm", adamw.clip_norm, "global gradient-norm limit (<= 0: no clipping)")
      ->capture_default_str();
  app.add_option("--backend", backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::string err;
  auto config = zbpp::load_gpt_config(model, &err);
  if (!config) {
    std::cerr << "zbpp_step_dump: " << err << "\n";
    return 1;
  }
  GptConfig& c = *config;
  const int vs_count = c.layers + 2;
  c.split.assign(vs_count, 1);
  c.split.front() = c.split.back() = 0;

  std::vector<std::unique_ptr<Compute>> stages;
  for (int vs = 0; vs < vs_count; ++vs) {
    if (backend == "cpu") {
      stages.push_back(zbpp::make_cpu_compute(c, {vs}, vs_count, m, seed, adamw));
    } else {
#ifdef ZBPP_HAVE_CUDA
      stages.push_back(zbpp::make_cuda_compute(c, {vs}, vs_count, m, seed, adamw, zbpp::CudaStage{}));
#else
      std::cerr << "zbpp_step_dump: --backend cuda: this build has no CUDA backend\n";
      return 1;
#endif
    }
  }
  std::filesystem::create_directories(out_dir);
  Dump dump{out_dir};
  const auto tokens = make_tokens(c, m, seed);
  std::vector<int> flat;
  for (const auto& mb : tokens) flat.insert(flat.end(), mb.begin(), mb.end());
  dump.write("tokens", "tokens", {m, c.batch, c.seq + 1}, flat.data(), flat.size() * sizeof(int), "i32");
  dump.params(c, "param", stages, false);

  for (auto& s : stages) {
    s->set_step_data(&tokens);
    s->zero_grad();
  }
  run_microbatches(c, m, stages, dump);

  std::vector<double> squared(zbpp::global_tensor_count(c), 0.0);
  bool nonfinite = false;
  for (auto& s : stages) {
    zbpp::GradStats g = s->grad_stats();
    nonfinite = nonfinite || g.nonfinite;
    for (size_t i = 0; i < squared.size(); ++i) squared[i] += g.squared_norms[i];
  }
  const double norm = zbpp::global_norm(squared);
  dump.params(c, "grad", stages, true);
  for (auto& s : stages) s->optimizer_step(norm);
  dump.params(c, "param_after", stages, false);
  for (auto& s : stages) dump.adamw_state(c, *s);

  nlohmann::json losses = nlohmann::json::array();
  for (int mb = 0; mb < m; ++mb) {
    double loss = NAN;
    stages.back()->loss(mb, &loss);
    losses.push_back(loss);
  }
  nlohmann::json manifest = {
      {"format", "zbpp-step-dump"},
      {"version", 1},
      {"backend", backend},
      {"model",
       {{"vocab", c.vocab}, {"seq", c.seq}, {"channels", c.channels}, {"heads", c.heads}, {"layers", c.layers},
        {"batch", c.batch}}},
      {"seed", seed},
      {"microbatches", m},
      {"adamw",
       {{"lr", adamw.lr}, {"beta1", adamw.beta1}, {"beta2", adamw.beta2}, {"eps", adamw.eps},
        {"weight_decay", adamw.weight_decay}, {"clip_norm", adamw.clip_norm}}},
      {"losses", losses},
      {"global_norm", norm},
      {"nonfinite", nonfinite},
      {"tensors", dump.tensors}};
  const std::string text = manifest.dump(1) + "\n";
  write_file(dump.dir / "manifest.json", text.data(), text.size());
  std::cout << "wrote " << dump.tensors.size() << " tensors of one " << backend << " step (" << model << ", m=" << m
            << ", loss " << losses[0].get<double>() << ", norm " << norm << ") to " << out_dir << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  zbpp::cpu_restart_with_faster_kernels(argv);  // the kernels zbrun computes with
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "zbpp_step_dump: " << e.what() << "\n";
    return 1;
  }
}
