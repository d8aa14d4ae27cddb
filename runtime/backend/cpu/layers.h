// CPU reference kernels for the GPT layers, in fp32: GEMMs through CBLAS (OpenBLAS), the rest in loops.
// Every layer with weights has three pieces: _forward, _backward_input (gradient w.r.t. its
// input: the B op) and _backward_weight (gradient w.r.t. its weights: the W op).
// Contract: outputs of _forward are overwritten (=); every gradient output accumulates (+=), so
// callers zero gradients once and W's accumulate over microbatches in microbatch order.
// Shapes: B sequences of T tokens (BT = B * T), C channels, OC output channels, NH heads, V vocabulary.
#pragma once

#include <string>

namespace zbpp::cpu {

/// OpenBLAS's name for the kernels it chose for this CPU (e.g. "SkylakeX", "Haswell").
std::string blas_core();

/// How a gradient output is written: added to (the contract above), or set, for a fresh buffer that
/// then needs no zeroing first (the same bits as adding to zeros).
enum class Out { kAdd, kSet };

/// out (BT,C) = wte[token] + wpe[position]
void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C);
/// dwte (V,C) +=, dwpe (T,C) += from dout (BT,C). The encoder has no input gradient.
void encoder_backward_weight(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C);

/// out (BT,C) = normalise(inp) * weight + bias; mean, rstd (BT) kept for the backward pieces.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int BT, int C);
/// dinp (BT,C) += gradient through the normalisation.
void layernorm_backward_input(float* dinp, const float* dout, const float* inp, const float* mean, const float* rstd,
                              const float* weight, int BT, int C);
/// dweight, dbias (C) += from dout (BT,C).
void layernorm_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, const float* mean,
                               const float* rstd, int BT, int C);

/// out (BT,OC) = inp (BT,C) @ weight (OC,C)^T + bias (OC); bias may be null.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int BT, int C, int OC);
/// dinp (BT,C) += dout (BT,OC) @ weight (OC,C).
void matmul_backward_input(float* dinp, const float* dout, const float* weight, int BT, int C, int OC,
                           Out out = Out::kAdd);
/// dweight (OC,C) += dout^T @ inp; dbias (OC) += column sums of dout (dbias may be null).
void matmul_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, int BT, int C, int OC);

/// Causal multi-head attention: qkv (BT,3C) -> out (BT,C); att (B,NH,T,T) keeps the probabilities.
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
/// dqkv (BT,3C) += from dout (BT,C). No weights: all of it is the B op.
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C,
                        int NH, Out out = Out::kAdd);

/// GELU (tanh approximation), elementwise over n values.
void gelu_forward(float* out, const float* inp, int n);
/// dinp += dout * gelu'(inp).
void gelu_backward(float* dinp, const float* inp, const float* dout, int n, Out out = Out::kAdd);

/// probs (BT,V) = softmax(logits); losses (BT) = -log probs[target].
void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int BT, int V);
/// dlogits (BT,V) += scale * (probs - onehot(target)).
void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float scale, int BT, int V);

}  // namespace zbpp::cpu
