// The element-wise maps on bf16: GELU (cpu gelu_*) and the residual add, one kernel for both, the
// fp32 <-> bf16 copies, and the fault-injection kernel.
#include "runtime/backend/cuda/kernels.cuh"

#include "runtime/backend/cuda/kernels_common.cuh"
#include "runtime/backend/cuda/launch.cuh"

namespace zbpp::cuda {

namespace {

__device__ inline float gelu_s() { return 0.7978845608028654f; }  // sqrt(2/pi)

// The element-wise bf16 layers as ops on floats, run by map_kernel: one formula for the 8-wide and
// the scalar path, so both give the same bits.
struct GeluForward {
  static constexpr int kInputs = 1;
  __device__ float operator()(float x, float) const {
    return 0.5f * x * (1.0f + tanhf(gelu_s() * (x + 0.044715f * x * x * x)));
  }
};
struct GeluBackward {  // (inp, dout) -> dinp
  static constexpr int kInputs = 2;
  __device__ float operator()(float x, float dout) const {
    float th = tanhf(gelu_s() * (x + 0.044715f * x * x * x));
    float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * gelu_s() * (1.0f + 3.0f * 0.044715f * x * x);
    return grad * dout;
  }
};
struct Add {
  static constexpr int kInputs = 2;
  __device__ float operator()(float a, float b) const { return a + b; }
};

// out[i] = op(a[i], b[i]) over `packs` packs of W elements (b unread when the op takes one input).
template <int W, typename Op>
__global__ void map_kernel(bf16* out, const bf16* a, const bf16* b, long packs, Op op) {
  using P = Pack<W>;
  ZBPP_FOR_EACH(i, packs) {
    const P x = reinterpret_cast<const P*>(a)[i];
    P y{}, o;
    if constexpr (Op::kInputs == 2) y = reinterpret_cast<const P*>(b)[i];
#pragma unroll
    for (int k = 0; k < W; ++k) o.v[k] = __float2bfloat16(op(f(x.v[k]), Op::kInputs == 2 ? f(y.v[k]) : 0.0f));
    reinterpret_cast<P*>(out)[i] = o;
  }
}

// Fault injection (--fault device): stops the grid as a kernel bug would; the context's error is
// sticky, so every later call on the device fails.
__global__ void device_fault_kernel() { __trap(); }

__global__ void to_bf16_kernel(bf16* out, const float* in, long n) {
  ZBPP_FOR_EACH(i, n) out[i] = __float2bfloat16(in[i]);
}

__global__ void to_float_kernel(float* out, const bf16* in, long n) {
  ZBPP_FOR_EACH(i, n) out[i] = f(in[i]);
}

// 8 elements a thread where n and every pointer allow 16-byte accesses, else one.
template <typename Op>
void map(const char* kernel, bf16* out, const bf16* a, const bf16* b, long n, cudaStream_t s) {
  const bool vec = map_vectorised(n) && aligned16(out) && aligned16(a) && (Op::kInputs == 1 || aligned16(b));
  if (vec) launch(map_launch(kernel, n, true), s, map_kernel<8, Op>, out, a, b, n / 8, Op{});
  else launch(map_launch(kernel, n, false), s, map_kernel<1, Op>, out, a, b, n, Op{});
}
}  // namespace

void gelu_forward(bf16* out, const bf16* inp, long n, cudaStream_t s) {
  map<GeluForward>("gelu_forward_kernel", out, inp, nullptr, n, s);
}

void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, long n, cudaStream_t s) {
  map<GeluBackward>("gelu_backward_kernel", dinp, inp, dout, n, s);
}

void add(bf16* out, const bf16* a, const bf16* b, long n, cudaStream_t s) {
  map<Add>("add_kernel", out, a, b, n, s);
}

void device_fault(cudaStream_t s) { launch(device_fault_launch(), s, device_fault_kernel); }

void to_bf16(bf16* out, const float* in, long n, cudaStream_t s) {
  launch(elementwise_launch("to_bf16_kernel", n), s, to_bf16_kernel, out, in, n);
}

void to_float(float* out, const bf16* in, long n, cudaStream_t s) {
  launch(elementwise_launch("to_float_kernel", n), s, to_float_kernel, out, in, n);
}

}  // namespace zbpp::cuda
