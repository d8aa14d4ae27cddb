// The CUDA backend (see compute_cuda.h). Mirrors cpu/compute_cpu.cpp op for op: per chunk the
// parameters (fp32 master, bf16 copy, fp32 grad, m, v), per activation slot the device buffers B
// and W need. Every op is enqueued on the stage's stream and ends with a synchronize of that
// stream only, so the interpreter's wall-clock spans are GPU times and a failure is reported by the
// op that caused it. Buffers come from the stream-ordered allocator; activation_bytes() counts the
// slot buffers held, as the planner's M_B and M_W do.
#include "runtime/backend/cuda/compute_cuda.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "runtime/cuda/check.h"
#include "runtime/cuda/device_buffers.h"
#include "runtime/backend/cuda/gemm_lt.h"
#include "runtime/backend/cuda/kernels.cuh"
#include "runtime/state_format.h"

namespace zbpp {

namespace {

using cuda::bf16;

struct Param {
  int id = -1;
  long n = 0;
  float *value = nullptr, *grad = nullptr, *m = nullptr, *v = nullptr;
  bf16* value16 = nullptr;  ///< what GEMMs and bias epilogues read
};


struct Buf {
  void* p = nullptr;
  size_t bytes = 0;
  bf16* h() const { return static_cast<bf16*>(p); }
  float* f() const { return static_cast<float*>(p); }
};

struct BlockActs {
  Buf ln1, ln1_mean, ln1_rstd, qkv, lse, atty, res2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu, out;
  Buf d_qkv, d_attproj, d_ln1, d_ln2, d_fch, d_fcproj;
  std::array<Buf*, 19> all() {
    return {&ln1, &ln1_mean, &ln1_rstd, &qkv, &lse, &atty, &res2, &ln2, &ln2_mean, &ln2_rstd, &fch, &fch_gelu, &out,
            &d_qkv, &d_attproj, &d_ln1, &d_ln2, &d_fch, &d_fcproj};
  }
};

struct Stash {
  int mb = -1;
  Buf x;
  std::vector<BlockActs> blocks;
  Buf lnf, lnf_mean, lnf_rstd, logits, ce_lse, d_lnf, d_x;  // logits become dlogits in B
};

struct Chunk {
  int vs = 0;
  bool embed = false, head = false;
  int first = 0, count = 0;
  std::vector<std::array<Param, kBlockTensors>> blocks;
  Param wte, wpe, lnfw, lnfb, lmw;
  std::vector<Stash> slots;
  std::vector<Param*> params;  // in global order
};

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

class CudaCompute final : public Compute {
 public:
  CudaCompute(const GptConfig& config, const std::vector<int>& vss, int total_vs, int microbatches, std::uint64_t seed,
              const AdamWConfig& adamw, const CudaStage& stage)
      : c_(config), m_(microbatches), adamw_(adamw), losses_(microbatches, 0.0), has_loss_(microbatches, false) {
    if (stage.stream) {
      stream_ = stage.stream;
    } else {
      ZBPP_CK(cudaSetDevice(stage.device), "selecting GPU " + std::to_string(stage.device));
      ZBPP_CK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the stage stream");
      own_stream_ = true;
    }
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
    ZBPP_CK(cudaMalloc(&scratch_, cuda::column_scratch_floats(4 * C) * sizeof(float)), "column-sum scratch");
    ZBPP_CK(cudaMalloc(&norm_scratch_, (cuda::kSumPartials + global_tensor_count(c_)) * sizeof(double)),
            "gradient norm scratch");
    sync("initialising parameters");
  }

  ~CudaCompute() override {
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
                    static_cast<void*>(norm_scratch_)})
      cudaFree(q);
    cudaStreamSynchronize(stream_);
    if (own_stream_) cudaStreamDestroy(stream_);
  }

  int activation_size() const override { return cuda::kHandleFloats; }

  void set_step_data(const std::vector<std::vector<int>>* microbatches) override {
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

  void forward(int chunk_index, int mb, int slot, const float* input, float* output) override {
    Chunk& ch = *chunks_.at(chunk_index);
    Stash& s = stash(ch, slot);
    s.mb = mb;
    const int BT = c_.tokens(), C = c_.channels;
    const size_t n = static_cast<size_t>(BT) * C;
    if (ch.embed) {
      s.x = hold(n * 2, "embedding output");
      cuda::encoder_forward(s.x.h(), tokens_ + static_cast<long>(mb) * BT, ch.wte.value, ch.wpe.value, c_.batch, c_.seq,
                            C, stream_);
    } else {
      s.x = adopt(input, n * 2, "input activation");
    }
    s.blocks.resize(ch.count);
    const Buf* x = &s.x;
    for (int i = 0; i < ch.count; ++i) {
      block_forward(ch.blocks[i], s.blocks[i], *x, ch.first + i);
      x = &s.blocks[i].out;
    }
    if (ch.head) {
      head_forward(ch, s, *x, mb);
    } else if (ch.count > 0) {
      hand_off(&s.blocks.back().out, output);  // only the next virtual stage reads it
    } else {
      Buf copy = hold(n * 2, "chunk output");
      ZBPP_CK(cudaMemcpyAsync(copy.p, s.x.p, n * 2, cudaMemcpyDeviceToDevice, stream_), "copying the chunk output");
      hand_off(&copy, output);
    }
    sync("forward");
  }

  void backward_input(int chunk_index, int mb, int slot, const float* doutput, float* dinput) override {
    Chunk& ch = *chunks_.at(chunk_index);
    Stash& s = stash(ch, slot);
    check_slot(s, mb, slot);
    const size_t n = static_cast<size_t>(c_.tokens()) * c_.channels;
    Buf d = ch.head ? head_backward_input(ch, s, mb) : adopt(doutput, n * 2, "output gradient");
    for (int i = ch.count - 1; i >= 0; --i) {
      const Buf& x = i == 0 ? s.x : s.blocks[i - 1].out;
      d = block_backward_input(ch.blocks[i], s.blocks[i], x, d, ch.first + i);
    }
    if (ch.embed) s.d_x = d;
    else hand_off(&d, dinput);
    // B is done with what only B reads; W keeps the layer inputs and output gradients (M_B -> M_W).
    for (BlockActs& a : s.blocks)
      for (Buf* b : {&a.qkv, &a.lse, &a.fch}) drop(b);
    drop(&s.ce_lse);
    sync("backward_input");
  }

  void backward_weight(int chunk_index, int mb, int slot) override {
    Chunk& ch = *chunks_.at(chunk_index);
    Stash& s = stash(ch, slot);
    check_slot(s, mb, slot);
    const int BT = c_.tokens(), C = c_.channels;
    if (ch.head) {
      const Buf& last = ch.count > 0 ? s.blocks.back().out : s.x;
      gemm_->backward_weight(ch.lmw.grad, s.logits.h(), s.lnf.h(), BT, C, c_.vocab, stream_, "lm head");
      cuda::layernorm_backward_weight(ch.lnfw.grad, ch.lnfb.grad, scratch_, s.d_lnf.h(), last.h(), s.lnf_mean.f(),
                                      s.lnf_rstd.f(), BT, C, stream_);
    }
    for (int i = ch.count - 1; i >= 0; --i) {
      const Buf& x = i == 0 ? s.x : s.blocks[i - 1].out;
      block_backward_weight(ch.blocks[i], s.blocks[i], x, ch.first + i);
    }
    if (ch.embed) {
      const Group& g = groups_of_[mb];
      cuda::encoder_backward_weight(ch.wte.grad, ch.wpe.grad, s.d_x.h(), groups_ + g.uniq, groups_ + g.offsets,
                                    groups_ + g.positions, g.n_uniq, c_.batch, c_.seq, C, stream_);
    }
    free_stash(s, true);
    sync("backward_weight");
  }

  bool loss(int mb, double* out) const override {
    if (!has_loss_[mb]) return false;
    *out = losses_[mb];
    return true;
  }

  void zero_grad() override {
    for (auto& ch : chunks_)
      for (Param* p : ch->params) ZBPP_CK(cudaMemsetAsync(p->grad, 0, p->n * sizeof(float), stream_), "zeroing gradients");
    sync("zero_grad");
  }

  GradStats grad_stats() const override {
    GradStats g;
    g.squared_norms.assign(global_tensor_count(c_), 0.0);
    std::vector<const Param*> params;
    for (const auto& ch : chunks_)
      for (const Param* p : ch->params) params.push_back(p);
    double* sums = norm_scratch_ + cuda::kSumPartials;
    for (size_t i = 0; i < params.size(); ++i)
      cuda::sum_squares(sums + i, norm_scratch_, params[i]->grad, params[i]->n, stream_);
    std::vector<double> host(params.size());
    ZBPP_CK(cudaMemcpyAsync(host.data(), sums, host.size() * sizeof(double), cudaMemcpyDeviceToHost, stream_),
            "reading gradient norms");
    ZBPP_CK(cudaStreamSynchronize(stream_), "grad_stats");
    for (size_t i = 0; i < params.size(); ++i) {
      g.squared_norms[params[i]->id] = host[i];
      if (!std::isfinite(host[i])) g.nonfinite = true;
    }
    return g;
  }

  void optimizer_step(double global_norm) override {
    ++step_;
    adamw_all(global_norm, false);
  }

  void optimizer_rollback(double global_norm) override {
    adamw_all(global_norm, true);
    --step_;
  }

  void inject_nonfinite() override {
    for (auto& ch : chunks_)
      if (!ch->params.empty()) {
        float nan = std::nanf("");
        ZBPP_CK(cudaMemcpyAsync(ch->params[0]->grad, &nan, sizeof nan, cudaMemcpyHostToDevice, stream_),
                "injecting a NaN gradient");
        sync("inject_nonfinite");
        return;
      }
  }

  size_t activation_bytes() const override { return held_bytes_; }

  // The CPU backend's layout (step count, tensor count, then per tensor id, size, value, m, v), so
  // a checkpoint written on one backend loads on the other.
  // Layout: state_format.h, the CPU backend's.
  bool save_state(std::string* bytes) const override {
    std::int64_t tensors = 0;
    for (const auto& ch : chunks_) tensors += static_cast<std::int64_t>(ch->params.size());
    StateWriter out(bytes, step_, tensors);
    std::vector<float> host;
    for (const auto& ch : chunks_)
      for (const Param* p : ch->params) {
        out.tensor(p->id, p->n);
        host.resize(static_cast<size_t>(p->n));
        for (const float* d : {p->value, p->m, p->v}) {
          ZBPP_CK(cudaMemcpyAsync(host.data(), d, host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_),
                  "reading the optimizer state for a checkpoint");
          ZBPP_CK(cudaStreamSynchronize(stream_), "reading the optimizer state for a checkpoint");
          out.floats(host.data(), p->n);
        }
      }
    return true;
  }

  bool load_state(const std::string& bytes, std::string* err) override {
    StateReader in(bytes);
    std::int64_t tensors = 0, step = 0, count = 0;
    for (const auto& ch : chunks_) tensors += static_cast<std::int64_t>(ch->params.size());
    if (!in.header(tensors, &step, &count, err)) return false;
    // Read through before copying any, so a bad state leaves the weights as they were.
    std::vector<const char*> data;
    for (auto& ch : chunks_)
      for (Param* p : ch->params) {
        std::int64_t id = p->id, n = p->n;
        if (!in.tensor(&id, &n, &data.emplace_back(), err)) return false;
      }
    if (!in.finish(err)) return false;
    size_t k = 0;
    for (auto& ch : chunks_)
      for (Param* p : ch->params) {
        const size_t floats = static_cast<size_t>(p->n) * sizeof(float);
        const char* at = data[k++];
        for (float* d : {p->value, p->m, p->v}) {
          ZBPP_CK(cudaMemcpyAsync(d, at, floats, cudaMemcpyHostToDevice, stream_), "loading a checkpoint");
          at += floats;
        }
        cuda::to_bf16(p->value16, p->value, p->n, stream_);
      }
    sync("loading a checkpoint");  // before `bytes` may go
    step_ = static_cast<int>(step);
    return true;
  }

  std::vector<std::pair<int, std::vector<float>>> parameters() const override {
    return all(&Param::value, "reading parameters");
  }
  std::vector<std::pair<int, std::vector<float>>> gradients() const override {
    return all(&Param::grad, "reading gradients");
  }

 private:
  // One fp32 field (master weights or gradients) of every parameter, copied to the host.
  std::vector<std::pair<int, std::vector<float>>> all(float* Param::*field, const char* what) const {
    std::vector<std::pair<int, std::vector<float>>> out;
    for (const auto& ch : chunks_)
      for (const Param* p : ch->params) {
        std::vector<float> v(static_cast<size_t>(p->n));
        ZBPP_CK(cudaMemcpyAsync(v.data(), p->*field, v.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_), what);
        ZBPP_CK(cudaStreamSynchronize(stream_), what);
        out.emplace_back(p->id, std::move(v));
      }
    return out;
  }
  struct Group {
    long uniq = 0, offsets = 0, positions = 0;  // offsets into groups_
    int n_uniq = 0;
  };

  void sync(const char* what) const { ZBPP_CK(cudaStreamSynchronize(stream_), std::string(what) + " on the stage stream"); }

  void copy_in(void* dst, const void* src, size_t bytes, const char* what) {
    ZBPP_CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), what);
  }

  void make_param(Param* p, long n, int id, std::uint64_t seed, float stdv, float constant, bool use_constant) {
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

  void upload_groups(const std::vector<int>& inputs) {
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
  Buf hold(size_t bytes, const char* what) {
    Buf b{cuda::device_alloc(bytes, stream_, what), bytes};
    held_bytes_ += bytes;
    return b;
  }
  void drop(Buf* b) {
    if (!b->p) return;
    cuda::device_free(b->p, stream_);
    held_bytes_ -= b->bytes;
    *b = Buf{};
  }
  // A buffer another stage made: wait for it on this stream and own it.
  Buf adopt(const float* handle, size_t bytes, const char* what) {
    cuda::DeviceTensor t = cuda::registry().take(cuda::read_handle(handle));
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
  // Gives `b` to whoever reads the handle written to `out` (the next stage or a transport).
  void hand_off(Buf* b, float* out) {
    cudaEvent_t ready = cuda::make_event("marking an activation ready");
    ZBPP_CK(cudaEventRecord(ready, stream_), "marking an activation ready");
    cuda::write_handle(out, cuda::registry().put({b->p, b->bytes, ready}));
    held_bytes_ -= b->bytes;
    *b = Buf{};
  }

  void free_stash(Stash& s, bool counted) {
    auto release = [&](Buf* b) {
      if (counted) drop(b);
      else if (b->p) cudaFreeAsync(b->p, stream_);
    };
    for (BlockActs& a : s.blocks)
      for (Buf* b : a.all()) release(b);
    for (Buf* b : {&s.x, &s.lnf, &s.lnf_mean, &s.lnf_rstd, &s.logits, &s.ce_lse, &s.d_lnf, &s.d_x}) release(b);
    s.mb = -1;
  }

  Stash& stash(Chunk& ch, int slot) { return slot_stash(ch, slot); }
  static void check_slot(const Stash& s, int mb, int slot) { zbpp::check_slot(s.mb, mb, slot); }

  static std::string layer(int block, const char* name) { return "block " + std::to_string(block) + " " + name; }

  void block_forward(const std::array<Param, kBlockTensors>& p, BlockActs& a, const Buf& x, int l) {
    const int BT = c_.tokens(), C = c_.channels, NH = c_.heads;
    const size_t n = static_cast<size_t>(BT) * C, rows = static_cast<size_t>(c_.batch) * NH * c_.seq;
    a.ln1 = hold(n * 2, "ln1");
    a.ln1_mean = hold(BT * 4, "ln1 mean");
    a.ln1_rstd = hold(BT * 4, "ln1 rstd");
    cuda::layernorm_forward(a.ln1.h(), a.ln1_mean.f(), a.ln1_rstd.f(), x.h(), p[LN1W].value, p[LN1B].value, BT, C, stream_);
    a.qkv = hold(3 * n * 2, "qkv");
    gemm_->forward(a.qkv.h(), a.ln1.h(), p[QKVW].value16, p[QKVB].value16, BT, C, 3 * C, stream_, layer(l, "qkv"));
    a.atty = hold(n * 2, "attention output");
    a.lse = hold(rows * 4, "attention log-sum-exp");
    cuda::attention_forward(a.atty.h(), a.lse.f(), a.qkv.h(), c_.batch, c_.seq, C, NH, stream_, attention_);
    Buf proj = hold(n * 2, "projection");
    gemm_->forward(proj.h(), a.atty.h(), p[ATTPROJW].value16, p[ATTPROJB].value16, BT, C, C, stream_, layer(l, "attproj"));
    a.res2 = hold(n * 2, "residual");
    cuda::add(a.res2.h(), x.h(), proj.h(), static_cast<long>(n), stream_);
    a.ln2 = hold(n * 2, "ln2");
    a.ln2_mean = hold(BT * 4, "ln2 mean");
    a.ln2_rstd = hold(BT * 4, "ln2 rstd");
    cuda::layernorm_forward(a.ln2.h(), a.ln2_mean.f(), a.ln2_rstd.f(), a.res2.h(), p[LN2W].value, p[LN2B].value, BT, C,
                            stream_);
    a.fch = hold(4 * n * 2, "fc");
    gemm_->forward(a.fch.h(), a.ln2.h(), p[FCW].value16, p[FCB].value16, BT, C, 4 * C, stream_, layer(l, "fc"));
    a.fch_gelu = hold(4 * n * 2, "gelu");
    cuda::gelu_forward(a.fch_gelu.h(), a.fch.h(), static_cast<long>(4 * n), stream_);
    gemm_->forward(proj.h(), a.fch_gelu.h(), p[FCPROJW].value16, p[FCPROJB].value16, BT, 4 * C, C, stream_,
                  layer(l, "fcproj"));
    a.out = hold(n * 2, "block output");
    cuda::add(a.out.h(), a.res2.h(), proj.h(), static_cast<long>(n), stream_);
    drop(&proj);
  }

  // B of one block: takes the output gradient `dout` (kept as d_fcproj for W), returns the input's.
  Buf block_backward_input(const std::array<Param, kBlockTensors>& p, BlockActs& a, const Buf& x, Buf dout, int l) {
    const int BT = c_.tokens(), C = c_.channels, NH = c_.heads;
    const size_t n = static_cast<size_t>(BT) * C;
    a.d_fcproj = dout;
    Buf d_gelu = hold(4 * n * 2, "gelu gradient");
    gemm_->backward_input(d_gelu.h(), a.d_fcproj.h(), p[FCPROJW].value16, BT, 4 * C, C, stream_, layer(l, "fcproj"));
    a.d_fch = hold(4 * n * 2, "fc gradient");
    cuda::gelu_backward(a.d_fch.h(), a.fch.h(), d_gelu.h(), static_cast<long>(4 * n), stream_);
    drop(&d_gelu);
    a.d_ln2 = hold(n * 2, "ln2 gradient");
    gemm_->backward_input(a.d_ln2.h(), a.d_fch.h(), p[FCW].value16, BT, C, 4 * C, stream_, layer(l, "fc"));
    a.d_attproj = hold(n * 2, "residual gradient");  // d res2: the residual path plus LayerNorm 2's
    cuda::layernorm_backward_input(a.d_attproj.h(), a.d_fcproj.h(), a.d_ln2.h(), a.res2.h(), a.ln2_mean.f(),
                                   a.ln2_rstd.f(), p[LN2W].value, BT, C, stream_);
    Buf d_atty = hold(n * 2, "attention output gradient");
    gemm_->backward_input(d_atty.h(), a.d_attproj.h(), p[ATTPROJW].value16, BT, C, C, stream_, layer(l, "attproj"));
    a.d_qkv = hold(3 * n * 2, "qkv gradient");
    Buf scratch = hold(cuda::attention_backward_scratch_floats(c_.batch, c_.seq, C, NH, attention_) * 4,
                       "attention backward scratch");
    cuda::attention_backward(a.d_qkv.h(), scratch.f(), d_atty.h(), a.atty.h(), a.qkv.h(), a.lse.f(), c_.batch, c_.seq,
                             C, NH, stream_, attention_);
    drop(&scratch);
    drop(&d_atty);
    a.d_ln1 = hold(n * 2, "ln1 gradient");
    gemm_->backward_input(a.d_ln1.h(), a.d_qkv.h(), p[QKVW].value16, BT, C, 3 * C, stream_, layer(l, "qkv"));
    Buf dx = hold(n * 2, "block input gradient");
    cuda::layernorm_backward_input(dx.h(), a.d_attproj.h(), a.d_ln1.h(), x.h(), a.ln1_mean.f(), a.ln1_rstd.f(),
                                   p[LN1W].value, BT, C, stream_);
    return dx;
  }

  void block_backward_weight(std::array<Param, kBlockTensors>& p, BlockActs& a, const Buf& x, int l) {
    const int BT = c_.tokens(), C = c_.channels;
    gemm_->backward_weight(p[FCPROJW].grad, a.d_fcproj.h(), a.fch_gelu.h(), BT, 4 * C, C, stream_, layer(l, "fcproj"));
    cuda::bias_backward(p[FCPROJB].grad, scratch_, a.d_fcproj.h(), BT, C, stream_);
    gemm_->backward_weight(p[FCW].grad, a.d_fch.h(), a.ln2.h(), BT, C, 4 * C, stream_, layer(l, "fc"));
    cuda::bias_backward(p[FCB].grad, scratch_, a.d_fch.h(), BT, 4 * C, stream_);
    cuda::layernorm_backward_weight(p[LN2W].grad, p[LN2B].grad, scratch_, a.d_ln2.h(), a.res2.h(), a.ln2_mean.f(),
                                    a.ln2_rstd.f(), BT, C, stream_);
    gemm_->backward_weight(p[ATTPROJW].grad, a.d_attproj.h(), a.atty.h(), BT, C, C, stream_, layer(l, "attproj"));
    cuda::bias_backward(p[ATTPROJB].grad, scratch_, a.d_attproj.h(), BT, C, stream_);
    gemm_->backward_weight(p[QKVW].grad, a.d_qkv.h(), a.ln1.h(), BT, C, 3 * C, stream_, layer(l, "qkv"));
    cuda::bias_backward(p[QKVB].grad, scratch_, a.d_qkv.h(), BT, 3 * C, stream_);
    cuda::layernorm_backward_weight(p[LN1W].grad, p[LN1B].grad, scratch_, a.d_ln1.h(), x.h(), a.ln1_mean.f(),
                                    a.ln1_rstd.f(), BT, C, stream_);
  }

  void head_forward(Chunk& ch, Stash& s, const Buf& last, int mb) {
    const int BT = c_.tokens(), C = c_.channels, V = c_.vocab;
    s.lnf = hold(static_cast<size_t>(BT) * C * 2, "final layernorm");
    s.lnf_mean = hold(BT * 4, "final layernorm mean");
    s.lnf_rstd = hold(BT * 4, "final layernorm rstd");
    cuda::layernorm_forward(s.lnf.h(), s.lnf_mean.f(), s.lnf_rstd.f(), last.h(), ch.lnfw.value, ch.lnfb.value, BT, C,
                            stream_);
    s.logits = hold(static_cast<size_t>(BT) * V * 2, "logits");
    gemm_->forward(s.logits.h(), s.lnf.h(), ch.lmw.value16, nullptr, BT, C, V, stream_, "lm head");
    s.ce_lse = hold(BT * 4, "softmax log-sum-exp");
    Buf losses = hold(BT * 4, "losses");
    cuda::crossentropy_forward(losses.f(), s.ce_lse.f(), s.logits.h(), targets_ + static_cast<long>(mb) * BT, BT, V,
                               stream_);
    std::vector<float> host(BT);
    ZBPP_CK(cudaMemcpyAsync(host.data(), losses.p, BT * 4, cudaMemcpyDeviceToHost, stream_), "reading losses");
    drop(&losses);
    sync("loss");
    double sum = 0;
    for (float l : host) sum += l;  // in token order, as the CPU backend does
    losses_[mb] = sum / BT;
    has_loss_[mb] = true;
  }

  // The loss is the mean over the step's microbatches and tokens, so each token's gradient is 1/(BT*m).
  Buf head_backward_input(Chunk& ch, Stash& s, int mb) {
    const int BT = c_.tokens(), C = c_.channels, V = c_.vocab;
    cuda::crossentropy_backward(s.logits.h(), s.ce_lse.f(), targets_ + static_cast<long>(mb) * BT,
                                1.0f / (static_cast<float>(BT) * m_), BT, V, stream_);
    s.d_lnf = hold(static_cast<size_t>(BT) * C * 2, "final layernorm gradient");
    gemm_->backward_input(s.d_lnf.h(), s.logits.h(), ch.lmw.value16, BT, C, V, stream_, "lm head");
    const Buf& last = ch.count > 0 ? s.blocks.back().out : s.x;
    Buf d_last = hold(static_cast<size_t>(BT) * C * 2, "last block output gradient");
    cuda::layernorm_backward_input(d_last.h(), nullptr, s.d_lnf.h(), last.h(), s.lnf_mean.f(), s.lnf_rstd.f(),
                                   ch.lnfw.value, BT, C, stream_);
    return d_last;
  }

  void adamw_all(double global_norm, bool rollback) {
    const cuda::AdamWArgs a = adamw_scalars(adamw_, clip_scale(global_norm, adamw_), step_);
    for (auto& ch : chunks_)
      for (Param* p : ch->params) {
        if (rollback) cuda::adamw_rollback(p->value, p->m, p->v, p->value16, p->grad, p->n, a, stream_);
        else cuda::adamw_step(p->value, p->m, p->v, p->value16, p->grad, p->n, a, stream_);
      }
    sync(rollback ? "optimizer_rollback" : "optimizer_step");
  }

  GptConfig c_;
  int m_;
  AdamWConfig adamw_;
  std::vector<double> losses_;
  std::vector<bool> has_loss_;
  std::unique_ptr<cuda::GemmLt> gemm_;  // made once the device is selected
  // ZBPP_CUDA_ATTENTION: which attention kernels run (kernels.cuh).
  const cuda::AttentionVariant attention_ = cuda::attention_variant_from_env(c_.channels / c_.heads);
  cudaStream_t stream_ = nullptr;
  bool own_stream_ = false;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  int* tokens_ = nullptr;
  int* targets_ = nullptr;
  int* groups_ = nullptr;
  std::vector<Group> groups_of_;
  float* scratch_ = nullptr;
  double* norm_scratch_ = nullptr;
  size_t held_bytes_ = 0;
  int step_ = 0;
};

}  // namespace

std::unique_ptr<Compute> make_cuda_compute(const GptConfig& config, const std::vector<int>& virtual_stages,
                                           int total_virtual_stages, int microbatches, std::uint64_t seed,
                                           const AdamWConfig& adamw, const CudaStage& stage) {
  return std::make_unique<CudaCompute>(config, virtual_stages, total_virtual_stages, microbatches, seed, adamw, stage);
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
  return static_cast<size_t>(config.tokens()) * config.channels * sizeof(bf16);
}

std::vector<float> make_payload(size_t bytes, cudaStream_t stream) {
  void* p = cuda::device_alloc(bytes, stream, "T_comm payload");
  ZBPP_CK(cudaMemsetAsync(p, 0, bytes, stream), "T_comm payload");
  cudaEvent_t ready = cuda::make_event("T_comm payload");
  ZBPP_CK(cudaEventRecord(ready, stream), "T_comm payload");
  return cuda::handle_vector(cuda::registry().put({p, bytes, ready}));
}

void release_payload(const std::vector<float>& handle, cudaStream_t stream) {
  cuda::DeviceTensor t = cuda::registry().take(cuda::read_handle(handle.data()));
  if (t.ready) {
    ZBPP_CK(cudaStreamWaitEvent(stream, t.ready, 0), "T_comm payload");
    ZBPP_CK(cudaEventDestroy(t.ready), "T_comm payload");
  }
  cuda::device_free(t.ptr, stream);
}

}  // namespace zbpp
