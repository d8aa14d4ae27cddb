// CUDA kernels for the GPT layers that are not matrix multiplies (those go through cuBLASLt,
// gemm_lt.h). Host launchers: each enqueues on `s` and throws naming the kernel if the launch fails.
// Activations are bf16, statistics and gradients of parameters fp32. Same contract as the CPU
// reference (cpu/layers.h) except where noted: activation gradients are written (=), parameter
// gradients accumulate (+=). Every reduction has a fixed order (no float atomics), so a kernel
// gives the same bits on every run: that is what keeps losses equal across schedules.
// Defined in kernels_<family>.cu, a file per layer family (its kernels, then their launchers).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "runtime/adamw_element.h"
#include "runtime/backend/cuda/launch_config.h"  // AttentionVariant, kColumnSplits, kSumPartials, column_scratch_floats

namespace zbpp::cuda {

using bf16 = __nv_bfloat16;

/// out (BT,C) = wte[token] + wpe[position] (fp32 tables, bf16 out).
void encoder_forward(bf16* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C, cudaStream_t s);
/// dwpe (T,C) += sum over the batch; dwte rows += the gradients of the positions holding that
/// token. The positions come grouped by token on the host (uniq[u] at positions[offsets[u]..offsets[u+1]),
/// ascending), so each row is summed in position order without atomics.
void encoder_backward_weight(float* dwte, float* dwpe, const bf16* dout, const int* uniq, const int* offsets,
                             const int* positions, int n_uniq, int B, int T, int C, cudaStream_t s);

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const float* w, const float* b, int BT,
                       int C, cudaStream_t s);
/// sum = a + b (bf16, the residual the block keeps), then layernorm_forward of sum, in one pass:
/// the bits of add then layernorm_forward.
void add_layernorm_forward(bf16* sum, bf16* out, float* mean, float* rstd, const bf16* a, const bf16* b,
                           const float* w, const float* bias, int BT, int C, cudaStream_t s);
/// dinp = dresidual (may be null) + the gradient through the normalisation (the B half).
void layernorm_backward_input(bf16* dinp, const bf16* dresidual, const bf16* dout, const bf16* inp, const float* mean,
                              const float* rstd, const float* w, int BT, int C, cudaStream_t s);
/// dw, db (C) += (the W half); scratch holds column_scratch_floats(C).
void layernorm_backward_weight(float* dw, float* db, float* scratch, const bf16* dout, const bf16* inp,
                               const float* mean, const float* rstd, int BT, int C, cudaStream_t s);
/// db (OC) += column sums of dout (BT,OC); scratch holds column_scratch_floats(OC).
void bias_backward(float* db, float* scratch, const bf16* dout, int BT, int OC, cudaStream_t s);

void gelu_forward(bf16* out, const bf16* inp, long n, cudaStream_t s);
/// dinp = dout * gelu'(inp).
void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, long n, cudaStream_t s);
/// out = a + b (the residual additions).
void add(bf16* out, const bf16* a, const bf16* b, long n, cudaStream_t s);

/// attention_variant_from (launch_config.h) of the environment's ZBPP_CUDA_ATTENTION.
AttentionVariant attention_variant_from_env(int head_size);

/// Causal attention over qkv (BT,3C) -> out (BT,C). Keeps only the log-sum-exp of each score row
/// (lse, B*NH*T), not the probabilities: the backward recomputes them.
void attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH, cudaStream_t s,
                       AttentionVariant variant);
/// dqkv (BT,3C) = gradient of the attention; scratch holds attention_backward_scratch_floats(...,
/// variant) floats (launch_config.h), 32-byte aligned.
void attention_backward(bf16* dqkv, float* scratch, const bf16* dout, const bf16* out, const bf16* qkv,
                        const float* lse, int B, int T, int C, int NH, cudaStream_t s, AttentionVariant variant);

/// The LM head's loss and its gradient in one kernel: losses (BT) = logsumexp(row) - logits[target],
/// and the logits (BT,V) are overwritten in place by scale * (softmax - onehot(target)).
void crossentropy(float* losses, bf16* logits, const int* targets, float scale, int BT, int V, cudaStream_t s);

/// AdamW's scalars (runtime/adamw_element.h: the one formula both backends run).
using AdamWArgs = AdamWScalars;
/// In place on the fp32 master p and the moments; p16 receives the bf16 copy the GEMMs read.
void adamw_step(float* p, float* m, float* v, bf16* p16, const float* g, long n, const AdamWArgs& a, cudaStream_t s);
/// The in-place inverse of adamw_step given the same gradients and arguments.
void adamw_rollback(float* p, float* m, float* v, bf16* p16, const float* g, long n, const AdamWArgs& a,
                    cudaStream_t s);

/// *out (device) = sum of g[i]^2 in double, in a fixed order; scratch holds kSumPartials doubles.
void sum_squares(double* out, double* scratch, const float* g, long n, cudaStream_t s);
void to_bf16(bf16* out, const float* in, long n, cudaStream_t s);
/// A kernel that traps (--fault device): every later call on the device fails.
void device_fault(cudaStream_t s);
void to_float(float* out, const bf16* in, long n, cudaStream_t s);

}  // namespace zbpp::cuda
