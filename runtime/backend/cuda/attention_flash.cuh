// The tensor-core attention kernels (attention_flash.cu), called by kernels_attention.cu's attention_forward
// and attention_backward when the variant is AttentionVariant::kFlash. Head sizes: flash_supports.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "runtime/backend/cuda/launch_config.h"

namespace zbpp::cuda {

using bf16 = __nv_bfloat16;

/// out (BT,C) and lse (B*NH*T) from qkv (BT,3C); scores are scaled by `scale`.
void flash_attention_forward(bf16* out, float* lse, const bf16* qkv, int B, int T, int C, int NH, float scale,
                             cudaStream_t s);
/// dqkv (BT,3C) from dout (BT,C), the forward's qkv and lse, and delta (B*NH*T, dout . out per
/// row). dq_acc: B*NH x flash_padded_rows(T) x flash_head_pad(C/NH) floats of scratch, 32-byte aligned.
void flash_attention_backward(bf16* dqkv, float* dq_acc, const float* delta, const bf16* dout, const bf16* qkv,
                              const float* lse, int B, int T, int C, int NH, float scale, cudaStream_t s);

}  // namespace zbpp::cuda
