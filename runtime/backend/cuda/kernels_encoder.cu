// The embedding (cpu encoder_*): wte[token] + wpe[position], and its weight gradient summed per
// token in position order.
#include "runtime/backend/cuda/kernels.cuh"

#include "runtime/backend/cuda/kernels_common.cuh"
#include "runtime/backend/cuda/launch.cuh"

namespace zbpp::cuda {

namespace {

__global__ void encoder_forward_kernel(bf16* out, const int* tokens, const float* wte, const float* wpe, int T, int C,
                                       long n) {
  ZBPP_FOR_EACH(i, n) {
    long bt = i / C;
    int c = static_cast<int>(i % C), t = static_cast<int>(bt % T);
    out[i] = __float2bfloat16(wte[static_cast<long>(tokens[bt]) * C + c] + wpe[static_cast<long>(t) * C + c]);
  }
}

__global__ void encoder_dwpe_kernel(float* dwpe, const bf16* dout, int B, int T, int C) {
  ZBPP_FOR_EACH(i, static_cast<long>(T) * C) {
    float acc = 0;
    for (int b = 0; b < B; ++b) acc += f(dout[static_cast<long>(b) * T * C + i]);
    dwpe[i] += acc;
  }
}

// One block per distinct token, threads over channels, positions in ascending order.
__global__ void encoder_dwte_kernel(float* dwte, const bf16* dout, const int* uniq, const int* offsets,
                                    const int* positions, int C) {
  int u = blockIdx.x;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = 0;
    for (int k = offsets[u]; k < offsets[u + 1]; ++k) acc += f(dout[static_cast<long>(positions[k]) * C + c]);
    dwte[static_cast<long>(uniq[u]) * C + c] += acc;
  }
}

}  // namespace

void encoder_forward(bf16* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C, cudaStream_t s) {
  launch(encoder_forward_launch(1L * B * T, C), s, encoder_forward_kernel, out, tokens, wte, wpe, T, C, 1L * B * T * C);
}

void encoder_backward_weight(float* dwte, float* dwpe, const bf16* dout, const int* uniq, const int* offsets,
                             const int* positions, int n_uniq, int B, int T, int C, cudaStream_t s) {
  launch(encoder_dwpe_launch(T, C), s, encoder_dwpe_kernel, dwpe, dout, B, T, C);
  if (n_uniq == 0) return;
  launch(encoder_dwte_launch(n_uniq), s, encoder_dwte_kernel, dwte, dout, uniq, offsets, positions, C);
}

}  // namespace zbpp::cuda
