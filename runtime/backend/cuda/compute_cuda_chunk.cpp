// The CUDA backend's F, B and W of a chunk (compute_cuda_internal.h): the embedding, each block's
// layers and the head, op for op as cpu/compute_cpu.cpp.
#include "runtime/backend/cuda/compute_cuda_internal.h"

#include <vector>

namespace zbpp::cuda_backend {

void CudaCompute::forward(int chunk_index, int mb, int slot, const Payload* input, Payload* output) {
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
    // Each block's last residual add also normalises for what follows it: the next block's
    // LayerNorm 1, or the head's final one (the block before made this one's LayerNorm 1).
    Norm next{};
    if (i + 1 < ch.count) next = ln1_of(ch.blocks[i + 1], s.blocks[i + 1]);
    else if (ch.head) next = lnf_of(ch, s);
    block_forward(ch.blocks[i], s.blocks[i], *x, ch.first + i, i > 0, next.out ? &next : nullptr);
    x = &s.blocks[i].out;
  }
  if (ch.head) {
    head_forward(ch, s, *x, mb, ch.count > 0);
  } else if (ch.count > 0) {
    hand_off(&s.blocks.back().out, output);  // only the next virtual stage reads it
  } else {
    Buf copy = hold(n * 2, "chunk output");
    ZBPP_CK(cudaMemcpyAsync(copy.p, s.x.p, n * 2, cudaMemcpyDeviceToDevice, stream_), "copying the chunk output");
    hand_off(&copy, output);
  }
}

void CudaCompute::backward_input(int chunk_index, int mb, int slot, const Payload* doutput, Payload* dinput) {
  Chunk& ch = *chunks_.at(chunk_index);
  Stash& s = stash(ch, slot);
  check_slot(s, mb, slot);
  const size_t n = static_cast<size_t>(c_.tokens()) * c_.channels;
  Buf d = ch.head ? head_backward_input(ch, s) : adopt(doutput, n * 2, "output gradient");
  for (int i = ch.count - 1; i >= 0; --i) {
    const Buf& x = i == 0 ? s.x : s.blocks[i - 1].out;
    d = block_backward_input(ch.blocks[i], s.blocks[i], x, d, ch.first + i);
  }
  if (ch.embed) s.d_x = d;
  else hand_off(&d, dinput);
  // B is done with what only B reads; W keeps the layer inputs and output gradients (M_B -> M_W).
  for (BlockActs& a : s.blocks)
    for (Buf* b : {&a.qkv, &a.lse, &a.fch}) drop(b);
}

void CudaCompute::backward_weight(int chunk_index, int mb, int slot) {
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
}

CudaCompute::Norm CudaCompute::ln1_of(const std::array<Param, kBlockTensors>& p, BlockActs& a) {
  return {&a.ln1, &a.ln1_mean, &a.ln1_rstd, p[LN1W].value, p[LN1B].value, "ln1"};
}

CudaCompute::Norm CudaCompute::lnf_of(Chunk& ch, Stash& s) {
  return {&s.lnf, &s.lnf_mean, &s.lnf_rstd, ch.lnfw.value, ch.lnfb.value, "final layernorm"};
}

void CudaCompute::hold_norm(const Norm& to) {
  const int BT = c_.tokens();
  *to.out = hold(static_cast<size_t>(BT) * c_.channels * 2, to.what);
  *to.mean = hold(BT * 4, to.what);
  *to.rstd = hold(BT * 4, to.what);
}

void CudaCompute::layernorm_into(const Norm& to, const Buf& x) {
  hold_norm(to);
  cuda::layernorm_forward(to.out->h(), to.mean->f(), to.rstd->f(), x.h(), to.w, to.b, c_.tokens(), c_.channels,
                          stream_);
}

// sum = a + b and its LayerNorm, in one kernel.
void CudaCompute::add_layernorm_into(const Norm& to, Buf* sum, const Buf& a, const Buf& b) {
  hold_norm(to);
  cuda::add_layernorm_forward(sum->h(), to.out->h(), to.mean->f(), to.rstd->f(), a.h(), b.h(), to.w, to.b, c_.tokens(),
                              c_.channels, stream_);
}

// `ln1_ready`: the block before made this one's LayerNorm 1. `next`: where the LayerNorm after the
// block's output goes, made with its residual add (null: the output alone).
void CudaCompute::block_forward(const std::array<Param, kBlockTensors>& p, BlockActs& a, const Buf& x, int l,
                                bool ln1_ready, const Norm* next) {
  const int BT = c_.tokens(), C = c_.channels, NH = c_.heads;
  const size_t n = static_cast<size_t>(BT) * C, rows = static_cast<size_t>(c_.batch) * NH * c_.seq;
  if (!ln1_ready) layernorm_into(ln1_of(p, a), x);
  a.qkv = hold(3 * n * 2, "qkv");
  gemm_->forward(a.qkv.h(), a.ln1.h(), p[QKVW].value16, p[QKVB].value16, BT, C, 3 * C, stream_, layer(l, "qkv"));
  a.atty = hold(n * 2, "attention output");
  a.lse = hold(rows * 4, "attention log-sum-exp");
  cuda::attention_forward(a.atty.h(), a.lse.f(), a.qkv.h(), c_.batch, c_.seq, C, NH, stream_, attention_);
  Buf proj = hold(n * 2, "projection");
  gemm_->forward(proj.h(), a.atty.h(), p[ATTPROJW].value16, p[ATTPROJB].value16, BT, C, C, stream_, layer(l, "attproj"));
  a.res2 = hold(n * 2, "residual");
  add_layernorm_into({&a.ln2, &a.ln2_mean, &a.ln2_rstd, p[LN2W].value, p[LN2B].value, "ln2"}, &a.res2, x, proj);
  a.fch = hold(4 * n * 2, "fc");
  a.fch_gelu = hold(4 * n * 2, "gelu");
  // The GELU in the GEMM's epilogue where cuBLASLt has it for this shape, else our kernel after it.
  if (!gemm_->forward_gelu(a.fch_gelu.h(), a.fch.h(), a.ln2.h(), p[FCW].value16, p[FCB].value16, BT, C, 4 * C, stream_,
                           layer(l, "fc"))) {
    gemm_->forward(a.fch.h(), a.ln2.h(), p[FCW].value16, p[FCB].value16, BT, C, 4 * C, stream_, layer(l, "fc"));
    cuda::gelu_forward(a.fch_gelu.h(), a.fch.h(), static_cast<long>(4 * n), stream_);
  }
  gemm_->forward(proj.h(), a.fch_gelu.h(), p[FCPROJW].value16, p[FCPROJB].value16, BT, 4 * C, C, stream_,
                layer(l, "fcproj"));
  a.out = hold(n * 2, "block output");
  if (next) add_layernorm_into(*next, &a.out, a.res2, proj);
  else cuda::add(a.out.h(), a.res2.h(), proj.h(), static_cast<long>(n), stream_);
  drop(&proj);
}

// B of one block: takes the output gradient `dout` (kept as d_fcproj for W), returns the input's.
Buf CudaCompute::block_backward_input(const std::array<Param, kBlockTensors>& p, BlockActs& a, const Buf& x, Buf dout,
                                      int l) {
  const int BT = c_.tokens(), C = c_.channels, NH = c_.heads;
  const size_t n = static_cast<size_t>(BT) * C;
  a.d_fcproj = dout;
  a.d_fch = hold(4 * n * 2, "fc gradient");
  // GELU's derivative in the GEMM's epilogue where cuBLASLt has it (as in the forward), else our kernel.
  if (!gemm_->backward_input_dgelu(a.d_fch.h(), a.d_fcproj.h(), p[FCPROJW].value16, a.fch.h(), BT, 4 * C, C, stream_,
                                   layer(l, "fcproj"))) {
    Buf d_gelu = hold(4 * n * 2, "gelu gradient");
    gemm_->backward_input(d_gelu.h(), a.d_fcproj.h(), p[FCPROJW].value16, BT, 4 * C, C, stream_, layer(l, "fcproj"));
    cuda::gelu_backward(a.d_fch.h(), a.fch.h(), d_gelu.h(), static_cast<long>(4 * n), stream_);
    drop(&d_gelu);
  }
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

void CudaCompute::block_backward_weight(std::array<Param, kBlockTensors>& p, BlockActs& a, const Buf& x, int l) {
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

// `lnf_ready`: the last block made the final LayerNorm.
void CudaCompute::head_forward(Chunk& ch, Stash& s, const Buf& last, int mb, bool lnf_ready) {
  const int BT = c_.tokens(), C = c_.channels, V = c_.vocab;
  if (!lnf_ready) layernorm_into(lnf_of(ch, s), last);
  s.logits = hold(static_cast<size_t>(BT) * V * 2, "logits");
  gemm_->forward(s.logits.h(), s.lnf.h(), ch.lmw.value16, nullptr, BT, C, V, stream_, "lm head");
  // The loss and, in the same kernel, the logits' gradient (B starts from it). The loss is the mean
  // over the step's microbatches and tokens, so each token's gradient is 1/(BT*m). The token
  // losses stay on the device until loss() reads the step's (no wait here).
  cuda::crossentropy(token_losses_ + static_cast<long>(mb) * BT, s.logits.h(), targets_ + static_cast<long>(mb) * BT,
                     1.0f / (static_cast<float>(BT) * m_), BT, V, stream_);
  has_loss_[mb] = true;
  losses_read_ = false;
}

// F left the logits' gradient in s.logits.
Buf CudaCompute::head_backward_input(Chunk& ch, Stash& s) {
  const int BT = c_.tokens(), C = c_.channels, V = c_.vocab;
  s.d_lnf = hold(static_cast<size_t>(BT) * C * 2, "final layernorm gradient");
  gemm_->backward_input(s.d_lnf.h(), s.logits.h(), ch.lmw.value16, BT, C, V, stream_, "lm head");
  const Buf& last = ch.count > 0 ? s.blocks.back().out : s.x;
  Buf d_last = hold(static_cast<size_t>(BT) * C * 2, "last block output gradient");
  cuda::layernorm_backward_input(d_last.h(), nullptr, s.d_lnf.h(), last.h(), s.lnf_mean.f(), s.lnf_rstd.f(),
                                 ch.lnfw.value, BT, C, stream_);
  return d_last;
}

}  // namespace zbpp::cuda_backend
