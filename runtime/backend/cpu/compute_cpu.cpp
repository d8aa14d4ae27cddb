// The CPU reference backend (see compute_cpu.h): per chunk, parameters with gradients and AdamW
// state, and per activation slot the tensors B and W need. Each op is one function over the
// chunk's blocks: forward, backward_input (B) and backward_weight (W).
#include "runtime/backend/cpu/compute_cpu.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <stdlib.h>
#include <unistd.h>

#include "runtime/backend/cpu/gemm.h"
#include "runtime/backend/cpu/layers.h"
#include "runtime/state_format.h"

namespace zbpp {

namespace {

struct Tensor {
  int id = -1;  ///< global tensor id (model.h)
  std::vector<float> value, grad, m, v;
  void init(size_t n, int global_id) {
    id = global_id;
    value.assign(n, 0.0f);
    grad.assign(n, 0.0f);
    m.assign(n, 0.0f);
    v.assign(n, 0.0f);
  }
};

// Parameter tensors of one block, in their global order.

// What one block keeps for one microbatch: forward activations, then the output gradients B
// computes and W consumes.
struct BlockActs {
  std::vector<float> ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu, out;
  std::vector<float> d_qkv, d_attproj, d_ln1, d_ln2, d_fch, d_fcproj;
};

struct Stash {
  int mb = -1;
  std::vector<float> x;  ///< the chunk's input activation (BT,C)
  std::vector<BlockActs> blocks;
  std::vector<float> lnf, lnf_mean, lnf_rstd, probs, losses;  // head (last virtual stage)
  std::vector<float> d_logits, d_lnf, d_x;                    // for W of head and embedding
};

struct Chunk {
  int vs = 0;
  bool embed = false, head = false;
  int first = 0, count = 0;
  std::vector<std::array<Tensor, kBlockTensors>> blocks;
  Tensor wte, wpe, lnfw, lnfb, lmw;
  std::vector<Stash> slots;
  std::vector<Tensor*> tensors;  // all of this chunk's parameters, in global order
};

void zero(std::vector<float>* v, size_t n) { v->assign(n, 0.0f); }

// Buffers B drops (what only B reads) and per-op scratch, kept for reuse: allocating them afresh
// every op would page-fault and zero megabytes each time (a fifth of an F of the C=256 model). A
// buffer taken back holds old values; each caller overwrites or zeroes it. activation_bytes()
// counts what slots hold, so the planner's M_B -> M_W drop is measured as before.
class BufferPool {
 public:
  std::vector<float> take(size_t n) {
    for (size_t i = spare_.size(); i-- > 0;)
      if (spare_[i].size() == n) {
        std::vector<float> v = std::move(spare_[i]);
        spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(i));
        return v;
      }
    return std::vector<float>(n);
  }
  void give(std::vector<float>* v) {
    if (!v->empty()) spare_.push_back(std::move(*v));
    *v = std::vector<float>();
  }
  /// `*v` sized n, from the pool when it is not already.
  void fit(std::vector<float>* v, size_t n) {
    if (v->size() == n) return;
    give(v);
    *v = take(n);
  }

 private:
  std::vector<std::vector<float>> spare_;
};

class CpuCompute final : public Compute {
 public:
  CpuCompute(const GptConfig& config, const std::vector<int>& vss, int total_vs, int microbatches, std::uint64_t seed,
             const AdamWConfig& adamw)
      : c_(config), m_(microbatches), adamw_(adamw), losses_(microbatches, 0.0),
        has_loss_(microbatches, false) {
    LayerSplit split = layer_split(config, total_vs);
    for (int vs : vss) {
      auto chunk = std::make_unique<Chunk>();
      place_chunk(chunk.get(), vs, total_vs, split);
      for (const TensorSpec& spec : stage_tensors(config, vs, total_vs)) {
        Tensor* t = tensor_field(*chunk, spec.id, config);
        t->init(static_cast<size_t>(spec.size), spec.id);
        init_tensor(&t->value, seed, spec.id, spec.std_dev, spec.constant, spec.use_constant);
        chunk->tensors.push_back(t);
      }
      chunks_.push_back(std::move(chunk));
    }
  }

  std::string refuses(const Payload& p) const override {
    const size_t n = static_cast<size_t>(c_.tokens()) * c_.channels;
    if (p.on_device()) return "a device buffer, where the CPU backend takes host floats";
    if (p.host.size() != n)
      return std::to_string(p.host.size()) + " values, expected " + std::to_string(n) + " (a truncated message)";
    return "";
  }

  void set_step_data(const std::vector<std::vector<int>>* microbatches) override {
    inputs_.assign(m_, {});
    targets_.assign(m_, {});
    for (int mb = 0; mb < m_; ++mb) {
      const auto& all = (*microbatches)[mb];
      for (int b = 0; b < c_.batch; ++b)
        for (int t = 0; t < c_.seq; ++t) {
          inputs_[mb].push_back(all[b * (c_.seq + 1) + t]);
          targets_[mb].push_back(all[b * (c_.seq + 1) + t + 1]);
        }
    }
    std::fill(has_loss_.begin(), has_loss_.end(), false);
  }

  void forward(int chunk_index, int mb, int slot, const Payload* input, Payload* output) override {
    Chunk& ch = *chunks_.at(chunk_index);
    Stash& s = stash(ch, slot);
    s.mb = mb;
    const int BT = c_.tokens(), C = c_.channels;
    s.x.resize(static_cast<size_t>(BT) * C);
    if (ch.embed) cpu::encoder_forward(s.x.data(), inputs_[mb].data(), ch.wte.value.data(), ch.wpe.value.data(), c_.batch, c_.seq, C);
    else std::copy_n(host_activation(input, "input activation"), s.x.size(), s.x.begin());
    s.blocks.resize(ch.count);
    const float* x = s.x.data();
    for (int i = 0; i < ch.count; ++i) {
      block_forward(ch.blocks[i], s.blocks[i], x);
      x = s.blocks[i].out.data();
    }
    if (ch.head) {
      head_forward(ch, s, x, mb);
    } else if (output) {
      output->host.assign(x, x + static_cast<size_t>(BT) * C);
    }
  }

  void backward_input(int chunk_index, int mb, int slot, const Payload* doutput, Payload* dinput) override {
    Chunk& ch = *chunks_.at(chunk_index);
    Stash& s = stash(ch, slot);
    check_slot(s, mb, slot);
    const size_t n = static_cast<size_t>(c_.tokens()) * c_.channels;
    std::vector<float> d = pool_.take(n);
    if (ch.head) head_backward_input(ch, s, mb, &d);
    else std::copy_n(host_activation(doutput, "output gradient"), n, d.begin());
    for (int i = ch.count - 1; i >= 0; --i) {
      const float* x = i == 0 ? s.x.data() : s.blocks[i - 1].out.data();
      std::vector<float> dx = pool_.take(n);
      block_backward_input(ch.blocks[i], s.blocks[i], x, d, &dx);
      std::swap(d, dx);
      pool_.give(&dx);
    }
    if (ch.embed) std::swap(s.d_x, d);
    else if (dinput) dinput->host.assign(d.begin(), d.end());
    pool_.give(&d);
    // B is done with what only B reads (attention probabilities and qkv, the GELU input, the
    // softmax); W keeps the layer inputs and the output gradients. This is the M_B -> M_W drop.
    for (BlockActs& a : s.blocks)
      for (auto* v : {&a.att, &a.qkv, &a.fch}) pool_.give(v);
    pool_.give(&s.probs);
  }

  void backward_weight(int chunk_index, int mb, int slot) override {
    Chunk& ch = *chunks_.at(chunk_index);
    Stash& s = stash(ch, slot);
    check_slot(s, mb, slot);
    const int BT = c_.tokens(), C = c_.channels;
    if (ch.head) {
      const float* last = ch.count > 0 ? s.blocks.back().out.data() : s.x.data();
      cpu::matmul_backward_weight(ch.lmw.grad.data(), nullptr, s.d_logits.data(), s.lnf.data(), BT, C, c_.vocab);
      cpu::layernorm_backward_weight(ch.lnfw.grad.data(), ch.lnfb.grad.data(), s.d_lnf.data(), last, s.lnf_mean.data(),
                                     s.lnf_rstd.data(), BT, C);
    }
    for (int i = ch.count - 1; i >= 0; --i) {
      const float* x = i == 0 ? s.x.data() : s.blocks[i - 1].out.data();
      block_backward_weight(ch.blocks[i], s.blocks[i], x);
    }
    if (ch.embed)
      cpu::encoder_backward_weight(ch.wte.grad.data(), ch.wpe.grad.data(), s.d_x.data(), inputs_[mb].data(), c_.batch,
                                   c_.seq, C);
    s.mb = -1;  // the slot is free for the next microbatch; its buffers are reused by the next F
  }

  bool loss(int mb, double* out) const override {
    if (!has_loss_[mb]) return false;
    *out = losses_[mb];
    return true;
  }

  void zero_grad() override {
    for (auto& ch : chunks_)
      for (Tensor* t : ch->tensors) std::fill(t->grad.begin(), t->grad.end(), 0.0f);
  }

  GradStats grad_stats() const override {
    GradStats g;
    g.squared_norms.assign(global_tensor_count(c_), 0.0);
    for (const auto& ch : chunks_)
      for (const Tensor* t : ch->tensors) {
        double sum = 0;
        for (float x : t->grad) {
          if (!std::isfinite(x)) g.nonfinite = true;
          sum += static_cast<double>(x) * x;
        }
        g.squared_norms[t->id] = sum;
      }
    return g;
  }

  void optimizer_step(double global_norm) override {
    ++step_;
    float grad_scale = clip_scale(global_norm, adamw_);
    for (auto& ch : chunks_)
      for (Tensor* t : ch->tensors) adamw_step(&t->value, &t->m, &t->v, t->grad, grad_scale, step_, adamw_);
  }

  void optimizer_rollback(double global_norm) override {
    float grad_scale = clip_scale(global_norm, adamw_);
    for (auto& ch : chunks_)
      for (Tensor* t : ch->tensors) adamw_rollback(&t->value, &t->m, &t->v, t->grad, grad_scale, step_, adamw_);
    --step_;
  }

  void inject_nonfinite() override {
    for (auto& ch : chunks_)
      if (!ch->tensors.empty() && !ch->tensors[0]->grad.empty()) {
        ch->tensors[0]->grad[0] = std::nanf("");
        return;
      }
  }

  size_t activation_bytes() const override {
    size_t floats = 0;
    for (const auto& ch : chunks_)
      for (const Stash& s : ch->slots) {
        if (s.mb < 0) continue;
        auto add = [&floats](const std::vector<float>& v) { floats += v.size(); };
        for (auto* v : {&s.x, &s.lnf, &s.lnf_mean, &s.lnf_rstd, &s.probs, &s.losses, &s.d_logits, &s.d_lnf, &s.d_x}) add(*v);
        for (const BlockActs& a : s.blocks)
          for (auto* v : {&a.ln1, &a.ln1_mean, &a.ln1_rstd, &a.qkv, &a.att, &a.atty, &a.res2, &a.ln2, &a.ln2_mean,
                          &a.ln2_rstd, &a.fch, &a.fch_gelu, &a.out, &a.d_qkv, &a.d_attproj, &a.d_ln1, &a.d_ln2, &a.d_fch,
                          &a.d_fcproj})
            add(*v);
      }
    return floats * sizeof(float);
  }

  // Layout: state_format.h.
  bool save_state(std::string* bytes) const override {
    std::int64_t tensors = 0;
    for (const auto& ch : chunks_) tensors += static_cast<std::int64_t>(ch->tensors.size());
    StateWriter out(bytes, step_, tensors);
    for (const auto& ch : chunks_)
      for (const Tensor* t : ch->tensors) {
        out.tensor(t->id, static_cast<std::int64_t>(t->value.size()));
        for (const auto* v : {&t->value, &t->m, &t->v}) out.floats(v->data(), static_cast<std::int64_t>(v->size()));
      }
    return true;
  }

  bool load_state(const std::string& bytes, std::string* err) override {
    StateReader in(bytes);
    std::int64_t tensors = 0, step = 0, count = 0;
    for (const auto& ch : chunks_) tensors += static_cast<std::int64_t>(ch->tensors.size());
    if (!in.header(tensors, &step, &count, err)) return false;
    // Read through before loading any, so a bad state leaves the weights as they were.
    std::vector<const char*> data;
    for (auto& ch : chunks_)
      for (Tensor* t : ch->tensors) {
        std::int64_t id = t->id, n = static_cast<std::int64_t>(t->value.size());
        if (!in.tensor(&id, &n, &data.emplace_back(), err)) return false;
      }
    if (!in.finish(err)) return false;
    size_t k = 0;
    for (auto& ch : chunks_)
      for (Tensor* t : ch->tensors) {
        const char* at = data[k++];
        for (auto* v : {&t->value, &t->m, &t->v}) {
          std::memcpy(v->data(), at, v->size() * sizeof(float));
          at += v->size() * sizeof(float);
        }
      }
    step_ = static_cast<int>(step);
    return true;
  }

  std::vector<std::pair<int, std::vector<float>>> parameters() const override { return all(&Tensor::value); }
  std::vector<std::pair<int, std::vector<float>>> gradients() const override { return all(&Tensor::grad); }

 private:
  std::vector<std::pair<int, std::vector<float>>> all(std::vector<float> Tensor::*field) const {
    std::vector<std::pair<int, std::vector<float>>> out;
    for (const auto& ch : chunks_)
      for (const Tensor* t : ch->tensors) out.emplace_back(t->id, t->*field);
    return out;
  }
  Stash& stash(Chunk& ch, int slot) { return slot_stash(ch, slot); }
  static void check_slot(const Stash& s, int mb, int slot) { zbpp::check_slot(s.mb, mb, slot); }
  // The floats of an input activation or output gradient; throws on what refuses() names.
  const float* host_activation(const Payload* p, const char* what) const {
    const std::string why = p ? refuses(*p) : "none given";
    if (!why.empty()) throw std::runtime_error(std::string(what) + ": " + why);
    return p->host.data();
  }

  void block_forward(const std::array<Tensor, kBlockTensors>& p, BlockActs& a, const float* x) {
    const int BT = c_.tokens(), C = c_.channels, NH = c_.heads;
    const size_t n = static_cast<size_t>(BT) * C;
    a.ln1.resize(n);
    a.ln1_mean.resize(BT);
    a.ln1_rstd.resize(BT);
    pool_.fit(&a.qkv, 3 * n);
    pool_.fit(&a.att, static_cast<size_t>(c_.batch) * NH * c_.seq * c_.seq);
    a.atty.resize(n);
    a.res2.resize(n);
    a.ln2.resize(n);
    a.ln2_mean.resize(BT);
    a.ln2_rstd.resize(BT);
    pool_.fit(&a.fch, 4 * n);
    a.fch_gelu.resize(4 * n);
    a.out.resize(n);
    std::vector<float> proj = pool_.take(n);
    cpu::layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, p[LN1W].value.data(), p[LN1B].value.data(), BT, C);
    cpu::matmul_forward(a.qkv.data(), a.ln1.data(), p[QKVW].value.data(), p[QKVB].value.data(), BT, C, 3 * C);
    cpu::attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), c_.batch, c_.seq, C, NH);
    cpu::matmul_forward(proj.data(), a.atty.data(), p[ATTPROJW].value.data(), p[ATTPROJB].value.data(), BT, C, C);
    for (size_t i = 0; i < n; ++i) a.res2[i] = x[i] + proj[i];
    cpu::layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res2.data(), p[LN2W].value.data(), p[LN2B].value.data(), BT, C);
    cpu::matmul_forward(a.fch.data(), a.ln2.data(), p[FCW].value.data(), p[FCB].value.data(), BT, C, 4 * C);
    cpu::gelu_forward(a.fch_gelu.data(), a.fch.data(), static_cast<int>(4 * n));
    cpu::matmul_forward(proj.data(), a.fch_gelu.data(), p[FCPROJW].value.data(), p[FCPROJB].value.data(), BT, 4 * C, C);
    for (size_t i = 0; i < n; ++i) a.out[i] = a.res2[i] + proj[i];
    pool_.give(&proj);
  }

  // B of one block: *dx = gradient w.r.t. the block input; keeps the output gradients W needs.
  void block_backward_input(const std::array<Tensor, kBlockTensors>& p, BlockActs& a, const float* x,
                            const std::vector<float>& dout, std::vector<float>* dx) {
    const int BT = c_.tokens(), C = c_.channels, NH = c_.heads;
    const size_t n = static_cast<size_t>(BT) * C;
    a.d_fcproj = dout;
    // Fresh outputs are set (cpu::Out::kSet), not zeroed and added to: the same bits, less traffic.
    std::vector<float> d_gelu = pool_.take(4 * n);
    cpu::matmul_backward_input(d_gelu.data(), dout.data(), p[FCPROJW].value.data(), BT, 4 * C, C, cpu::Out::kSet);
    pool_.fit(&a.d_fch, 4 * n);
    cpu::gelu_backward(a.d_fch.data(), a.fch.data(), d_gelu.data(), static_cast<int>(4 * n), cpu::Out::kSet);
    pool_.give(&d_gelu);
    pool_.fit(&a.d_ln2, n);
    cpu::matmul_backward_input(a.d_ln2.data(), a.d_fch.data(), p[FCW].value.data(), BT, C, 4 * C, cpu::Out::kSet);
    a.d_attproj = dout;  // d res2: the residual path, plus LayerNorm 2's input gradient
    cpu::layernorm_backward_input(a.d_attproj.data(), a.d_ln2.data(), a.res2.data(), a.ln2_mean.data(), a.ln2_rstd.data(),
                                  p[LN2W].value.data(), BT, C);
    std::vector<float> d_atty = pool_.take(n);
    cpu::matmul_backward_input(d_atty.data(), a.d_attproj.data(), p[ATTPROJW].value.data(), BT, C, C, cpu::Out::kSet);
    pool_.fit(&a.d_qkv, 3 * n);
    cpu::attention_backward(a.d_qkv.data(), d_atty.data(), a.qkv.data(), a.att.data(), c_.batch, c_.seq, C, NH,
                            cpu::Out::kSet);
    pool_.give(&d_atty);
    pool_.fit(&a.d_ln1, n);
    cpu::matmul_backward_input(a.d_ln1.data(), a.d_qkv.data(), p[QKVW].value.data(), BT, C, 3 * C, cpu::Out::kSet);
    *dx = a.d_attproj;  // the residual path around attention
    cpu::layernorm_backward_input(dx->data(), a.d_ln1.data(), x, a.ln1_mean.data(), a.ln1_rstd.data(), p[LN1W].value.data(),
                                  BT, C);
  }

  // W of one block: accumulates its weight gradients from what B kept.
  void block_backward_weight(std::array<Tensor, kBlockTensors>& p, const BlockActs& a, const float* x) {
    const int BT = c_.tokens(), C = c_.channels;
    cpu::matmul_backward_weight(p[FCPROJW].grad.data(), p[FCPROJB].grad.data(), a.d_fcproj.data(), a.fch_gelu.data(), BT, 4 * C, C);
    cpu::matmul_backward_weight(p[FCW].grad.data(), p[FCB].grad.data(), a.d_fch.data(), a.ln2.data(), BT, C, 4 * C);
    cpu::layernorm_backward_weight(p[LN2W].grad.data(), p[LN2B].grad.data(), a.d_ln2.data(), a.res2.data(), a.ln2_mean.data(),
                                   a.ln2_rstd.data(), BT, C);
    cpu::matmul_backward_weight(p[ATTPROJW].grad.data(), p[ATTPROJB].grad.data(), a.d_attproj.data(), a.atty.data(), BT, C, C);
    cpu::matmul_backward_weight(p[QKVW].grad.data(), p[QKVB].grad.data(), a.d_qkv.data(), a.ln1.data(), BT, C, 3 * C);
    cpu::layernorm_backward_weight(p[LN1W].grad.data(), p[LN1B].grad.data(), a.d_ln1.data(), x, a.ln1_mean.data(),
                                   a.ln1_rstd.data(), BT, C);
  }

  void head_forward(Chunk& ch, Stash& s, const float* last, int mb) {
    const int BT = c_.tokens(), C = c_.channels, V = c_.vocab;
    s.lnf.resize(static_cast<size_t>(BT) * C);
    s.lnf_mean.resize(BT);
    s.lnf_rstd.resize(BT);
    pool_.fit(&s.probs, static_cast<size_t>(BT) * V);
    s.losses.resize(BT);
    std::vector<float> logits = pool_.take(static_cast<size_t>(BT) * V);
    cpu::layernorm_forward(s.lnf.data(), s.lnf_mean.data(), s.lnf_rstd.data(), last, ch.lnfw.value.data(), ch.lnfb.value.data(), BT, C);
    cpu::matmul_forward(logits.data(), s.lnf.data(), ch.lmw.value.data(), nullptr, BT, C, V);
    cpu::crossentropy_forward(s.losses.data(), s.probs.data(), logits.data(), targets_[mb].data(), BT, V);
    pool_.give(&logits);
    double sum = 0;
    for (float l : s.losses) sum += l;
    losses_[mb] = sum / BT;
    has_loss_[mb] = true;
  }

  // The loss is the mean over the step's microbatches and tokens, so each token's gradient is 1/(BT*m).
  void head_backward_input(Chunk& ch, Stash& s, int mb, std::vector<float>* d_last) {
    const int BT = c_.tokens(), C = c_.channels, V = c_.vocab;
    zero(&s.d_logits, static_cast<size_t>(BT) * V);
    cpu::crossentropy_backward(s.d_logits.data(), s.probs.data(), targets_[mb].data(), 1.0f / (static_cast<float>(BT) * m_), BT, V);
    zero(&s.d_lnf, static_cast<size_t>(BT) * C);
    cpu::matmul_backward_input(s.d_lnf.data(), s.d_logits.data(), ch.lmw.value.data(), BT, C, V);
    const float* last = ch.count > 0 ? s.blocks.back().out.data() : s.x.data();
    std::fill(d_last->begin(), d_last->end(), 0.0f);
    cpu::layernorm_backward_input(d_last->data(), s.d_lnf.data(), last, s.lnf_mean.data(), s.lnf_rstd.data(),
                                  ch.lnfw.value.data(), BT, C);
  }

  GptConfig c_;
  int m_;
  AdamWConfig adamw_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::vector<std::vector<int>> inputs_, targets_;
  std::vector<double> losses_;
  std::vector<bool> has_loss_;
  int step_ = 0;
  BufferPool pool_;
};

}  // namespace

void cpu_set_threads(int threads) { cpu::set_threads(threads); }
std::string cpu_kernels() { return "OpenBLAS " + cpu::blas_core() + " kernels"; }
void cpu_restart_with_faster_kernels(char** argv) {
  // Set, the variable is the user's choice (or this restart's: it also stops a second one).
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || cpu::blas_core() != "Prescott") return;
  __builtin_cpu_init();
  const char* core = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
  if (core == nullptr) return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);
}

std::unique_ptr<Compute> make_cpu_compute(const GptConfig& config, const std::vector<int>& virtual_stages,
                                          int total_virtual_stages, int microbatches, std::uint64_t seed,
                                          const AdamWConfig& adamw) {
  return std::make_unique<CpuCompute>(config, virtual_stages, total_virtual_stages, microbatches, seed, adamw);
}

}  // namespace zbpp
