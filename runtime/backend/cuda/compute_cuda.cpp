// The CUDA backend (compute_cuda_internal.h): its construction, the step's tokens and the device
// buffers of parameters and slots; and compute_cuda.h's free functions.
#include "runtime/backend/cuda/compute_cuda.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "runtime/backend/cuda/compute_cuda_internal.h"

namespace zbpp::cuda_backend {

namespace {

// Tokens of one microbatch grouped by value, for the deterministic embedding gradient.
struct TokenGroups {
  std::vector<int> uniq, offsets, positions;
};

TokenGroups group_tokens(const std::vector<int>& tokens) {
  std::map<int, std::vector<int>> by;
  for (int i = 0; i < static_cast<int>(tokens.size()); ++i) by[tokens[i]].push_back(i);
  TokenGroups g;
  g.offsets.push_back(0);
  for (auto& [tok, pos] : by) {
    g.uniq.push_back(tok);
    g.positions.insert(g.positions.end(), pos.begin(), pos.end());
    g.offsets.push_back(static_cast<int>(g.positions.size()));
  }
  return g;
}

}  // namespace

CudaCompute::CudaCompute(const GptConfig& config, const std::vector<int>& vss, int total_vs, int microbatches,
                         std::uint64_t seed, const AdamWConfig& adamw, const CudaStage& stage)
    : c_(config), m_(microbatches), adamw_(adamw), losses_(microbatches, 0.0), has_loss_(microbatches, false) {
  if (stage.stream) {
    stream_ = stage.stream;
  } else {
    ZBPP_CK(cudaSetDevice(stage.device), "selecting GPU " + std::to_string(stage.device));
    ZBPP_CK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the stage stream");
    own_stream_ = true;
  }
  timer_ = std::make_unique<cuda::StreamTimer>(stream_);
  gemm_ = std::make_unique<cuda::GemmLt>(stage.sm_count);
  cuda::configure_default_pool(stage.device);

  LayerSplit split = layer_split(config, total_vs);
  const int C = c_.channels;
  for (int vs : vss) {
    auto ch = std::make_unique<Chunk>();
    place_chunk(ch.get(), vs, total_vs, split);
    for (const TensorSpec& spec : stage_tensors(config, vs, total_vs)) {
      Param* p = tensor_field(*ch, spec.id, config);
      make_param(p, spec.size, spec.id, seed, spec.std_dev, spec.constant, spec.use_constant);
      ch->params.push_back(p);
    }
    chunks_.push_back(std::move(ch));
  }
  // Everything the run needs up front: no cudaMalloc while NCCL kernels may be in flight.
  const size_t step_tokens = static_cast<size_t>(m_) * c_.tokens();
  ZBPP_CK(cudaMalloc(&tokens_, step_tokens * sizeof(int)), "token buffer");
  ZBPP_CK(cudaMalloc(&targets_, step_tokens * sizeof(int)), "target buffer");
  // Token groups: at most 3 BT + 1 ints per microbatch (tokens, offsets, positions).
  ZBPP_CK(cudaMalloc(&groups_, static_cast<size_t>(m_) * (3 * c_.tokens() + 2) * sizeof(int)), "token groups");
  ZBPP_CK(cudaMalloc(&token_losses_, step_tokens * sizeof(float)), "token losses");
  ZBPP_CK(cudaMemsetAsync(token_losses_, 0, step_tokens * sizeof(float), stream_), "token losses");
  ZBPP_CK(cudaMalloc(&scratch_, cuda::column_scratch_floats(4 * C) * sizeof(float)), "column-sum scratch");
  ZBPP_CK(cudaMalloc(&norm_scratch_, (cuda::kSumPartials + global_tensor_count(c_)) * sizeof(double)),
          "gradient norm scratch");
  sync("initialising parameters");
}

CudaCompute::~CudaCompute() {
  // Errors are ignored: this runs on failure paths too, and must not throw.
  cudaStreamSynchronize(stream_);
  for (auto& ch : chunks_) {
    for (Stash& s : ch->slots) free_stash(s, false);
    for (Param* p : ch->params)
      for (void* q : {static_cast<void*>(p->value), static_cast<void*>(p->grad), static_cast<void*>(p->m),
                      static_cast<void*>(p->v), static_cast<void*>(p->value16)})
        cudaFree(q);
  }
  for (void* q : {static_cast<void*>(tokens_), static_cast<void*>(targets_), static_cast<void*>(groups_), static_cast<void*>(scratch_),
                  static_cast<void*>(norm_scratch_), static_cast<void*>(token_losses_)})
    cudaFree(q);
  cudaStreamSynchronize(stream_);
  timer_.reset();  // its events, before the stream goes
  if (own_stream_) cudaStreamDestroy(stream_);
}

void CudaCompute::set_step_data(const std::vector<std::vector<int>>* microbatches) {
  const int BT = c_.tokens();
  std::vector<int> inputs(static_cast<size_t>(m_) * BT), targets(inputs.size());
  for (int mb = 0; mb < m_; ++mb) {
    const auto& all = (*microbatches)[mb];
    for (int b = 0; b < c_.batch; ++b)
      for (int t = 0; t < c_.seq; ++t) {
        inputs[static_cast<size_t>(mb) * BT + b * c_.seq + t] = all[b * (c_.seq + 1) + t];
        targets[static_cast<size_t>(mb) * BT + b * c_.seq + t] = all[b * (c_.seq + 1) + t + 1];
      }
  }
  copy_in(tokens_, inputs.data(), inputs.size() * sizeof(int), "uploading tokens");
  copy_in(targets_, targets.data(), targets.size() * sizeof(int), "uploading targets");
  // The embedding chunk may be any of this rank's chunks (a V-shape puts it first, other placements need not).
  if (std::any_of(chunks_.begin(), chunks_.end(), [](const auto& ch) { return ch->embed; })) upload_groups(inputs);
  std::fill(has_loss_.begin(), has_loss_.end(), false);
  sync("uploading the step's tokens");
}

void CudaCompute::copy_in(void* dst, const void* src, size_t bytes, const char* what) {
  ZBPP_CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), what);
}

void CudaCompute::make_param(Param* p, long n, int id, std::uint64_t seed, float stdv, float constant,
                             bool use_constant) {
  p->id = id;
  p->n = n;
  const std::string what = "parameter tensor " + std::to_string(id);
  for (float** q : {&p->value, &p->grad, &p->m, &p->v}) ZBPP_CK(cudaMalloc(q, n * sizeof(float)), what);
  ZBPP_CK(cudaMalloc(&p->value16, n * sizeof(bf16)), what);
  std::vector<float> host(static_cast<size_t>(n));
  init_tensor(&host, seed, id, stdv, constant, use_constant);  // the CPU backend's values exactly
  copy_in(p->value, host.data(), n * sizeof(float), what.c_str());
  for (float* q : {p->grad, p->m, p->v}) ZBPP_CK(cudaMemsetAsync(q, 0, n * sizeof(float), stream_), what);
  cuda::to_bf16(p->value16, p->value, n, stream_);
  ZBPP_CK(cudaStreamSynchronize(stream_), what);  // `host` goes out of scope
}

void CudaCompute::upload_groups(const std::vector<int>& inputs) {
  const int BT = c_.tokens();
  std::vector<int> all;
  groups_of_.assign(m_, {});
  for (int mb = 0; mb < m_; ++mb) {
    TokenGroups g = group_tokens(std::vector<int>(inputs.begin() + static_cast<long>(mb) * BT,
                                                  inputs.begin() + static_cast<long>(mb + 1) * BT));
    Group& d = groups_of_[mb];
    d.n_uniq = static_cast<int>(g.uniq.size());
    d.uniq = static_cast<long>(all.size());
    all.insert(all.end(), g.uniq.begin(), g.uniq.end());
    d.offsets = static_cast<long>(all.size());
    all.insert(all.end(), g.offsets.begin(), g.offsets.end());
    d.positions = static_cast<long>(all.size());
    all.insert(all.end(), g.positions.begin(), g.positions.end());
  }
  copy_in(groups_, all.data(), all.size() * sizeof(int), "uploading token groups");
  ZBPP_CK(cudaStreamSynchronize(stream_), "uploading token groups");
}

// Slot buffers: counted in activation_bytes while held.
Buf CudaCompute::hold(size_t bytes, const char* what) {
  Buf b{cuda::device_alloc(bytes, stream_, what), bytes};
  held_bytes_ += bytes;
  return b;
}

void CudaCompute::drop(Buf* b) {
  if (!b->p) return;
  cuda::device_free(b->p, stream_);
  held_bytes_ -= b->bytes;
  *b = Buf{};
}

// A buffer another stage made: wait for it on this stream and own it.
Buf CudaCompute::adopt(const Payload* from, size_t bytes, const char* what) {
  cuda::DeviceTensor t = cuda::registry().take(cuda::device_id(from, what));
  if (t.ready) {
    ZBPP_CK(cudaStreamWaitEvent(stream_, t.ready, 0), what);
    ZBPP_CK(cudaEventDestroy(t.ready), what);
  }
  if (t.bytes != bytes) {
    cuda::device_free(t.ptr, stream_);
    throw std::runtime_error(std::string(what) + " has " + std::to_string(t.bytes) + " bytes, expected " +
                             std::to_string(bytes));
  }
  held_bytes_ += bytes;
  return Buf{t.ptr, bytes};
}

// Gives `b` to whoever takes `out` (the next stage or a transport); a null `out` drops it.
void CudaCompute::hand_off(Buf* b, Payload* out) {
  if (!out) {
    drop(b);
    return;
  }
  cudaEvent_t ready = cuda::make_event("marking an activation ready");
  ZBPP_CK(cudaEventRecord(ready, stream_), "marking an activation ready");
  *out = Payload::of_device(cuda::registry().put({b->p, b->bytes, ready}));
  held_bytes_ -= b->bytes;
  *b = Buf{};
}

void CudaCompute::free_stash(Stash& s, bool counted) {
  auto release = [&](Buf* b) {
    if (counted) drop(b);
    else if (b->p) cudaFreeAsync(b->p, stream_);
  };
  for (BlockActs& a : s.blocks)
    for (Buf* b : a.all()) release(b);
  for (Buf* b : {&s.x, &s.lnf, &s.lnf_mean, &s.lnf_rstd, &s.logits, &s.d_lnf, &s.d_x}) release(b);
  s.mb = -1;
}

}  // namespace zbpp::cuda_backend

namespace zbpp {

std::unique_ptr<Compute> make_cuda_compute(const GptConfig& config, const std::vector<int>& virtual_stages,
                                           int total_virtual_stages, int microbatches, std::uint64_t seed,
                                           const AdamWConfig& adamw, const CudaStage& stage) {
  return std::make_unique<cuda_backend::CudaCompute>(config, virtual_stages, total_virtual_stages, microbatches, seed,
                                                     adamw, stage);
}

int cuda_device_count(std::string* why) {
  why->clear();
  int driver = 0, runtime = 0;
  // No driver library at all reads as driver version 0: a machine without a GPU, not an error.
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
    cudaGetLastError();
    return 0;
  }
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc == cudaErrorNoDevice) {
    cudaGetLastError();
    return 0;
  }
  if (rc != cudaSuccess) {
    cudaGetLastError();
    cudaRuntimeGetVersion(&runtime);
    auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    *why = std::string("the CUDA driver is there but no GPU can be used: ") + cudaGetErrorString(rc) +
           " (the driver supports CUDA " + version(driver) + ", zbrun was built with CUDA " + version(runtime) + ")";
    if (rc == cudaErrorInsufficientDriver)
      *why += ": install an NVIDIA driver for CUDA " + version(runtime) +
              " or newer (CUDA 13 needs driver 580 or newer)";
    return 0;
  }
  return n;
}

size_t cuda_activation_bytes(const GptConfig& config) {
  return static_cast<size_t>(config.tokens()) * config.channels * sizeof(cuda::bf16);
}

Payload make_payload(size_t bytes, cudaStream_t stream) {
  void* p = cuda::device_alloc(bytes, stream, "T_comm payload");
  ZBPP_CK(cudaMemsetAsync(p, 0, bytes, stream), "T_comm payload");
  cudaEvent_t ready = cuda::make_event("T_comm payload");
  ZBPP_CK(cudaEventRecord(ready, stream), "T_comm payload");
  return Payload::of_device(cuda::registry().put({p, bytes, ready}));
}

void release_payload(const Payload& payload, cudaStream_t stream) {
  cuda::DeviceTensor t = cuda::registry().take(cuda::device_id(&payload, "T_comm payload"));
  if (t.ready) {
    ZBPP_CK(cudaStreamWaitEvent(stream, t.ready, 0), "T_comm payload");
    ZBPP_CK(cudaEventDestroy(t.ready), "T_comm payload");
  }
  cuda::device_free(t.ptr, stream);
}

}  // namespace zbpp
