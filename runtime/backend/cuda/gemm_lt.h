// cuBLASLt for the linear layers, one function per call the split backward makes. Row-major
// shapes: X (T,K) tokens x inputs, W (N,K), Y (T,N). bf16 operands, fp32 accumulation.
//   forward:          Y  = X W^T + bias             (bf16 out)
//   backward_input:   dX = dY W                     (bf16 out: the B op)
//   backward_weight:  dW += dY^T X                  (fp32 out, beta = 1: the W op accumulates
//                                                    over microbatches in the order it is called)
//   forward_gelu:     P = X W^T + bias, Y = GELU(P)  (cuBLASLt's GELU_AUX_BIAS epilogue: P is the aux)
//   backward_input_dgelu: dX = (dY W) * GELU'(P)     (the DGELU epilogue, P the forward's aux)
// The two GELU calls return false, doing nothing, where cuBLASLt has no kernel for the epilogue
// on that shape (decided once per shape) or a pointer is not 256-byte aligned (never, for
// cudaMalloc's and the memory pool's); the caller then runs the GEMM and its own GELU kernel.
// Per shape, the descriptors, layouts and algorithm are made once and cached (only the bias and aux
// pointers are set per call), so a shape always runs the same kernel and gives the same bits, and a GEMM
// costs no descriptor creation.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <array>
#include <map>
#include <memory>
#include <string>

namespace zbpp::cuda {

class GemmLt {
 public:
  /// `sm_count`: SMs the stage owns (0: the whole GPU); cuBLASLt sizes its kernels to it.
  explicit GemmLt(int sm_count = 0);
  ~GemmLt();
  GemmLt(const GemmLt&) = delete;
  GemmLt& operator=(const GemmLt&) = delete;

  /// `what` names the layer in error messages.
  void forward(__nv_bfloat16* y, const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias, int T,
               int K, int N, cudaStream_t s, const std::string& what);
  void backward_input(__nv_bfloat16* dx, const __nv_bfloat16* dy, const __nv_bfloat16* w, int T, int K, int N,
                      cudaStream_t s, const std::string& what);
  void backward_weight(float* dw, const __nv_bfloat16* dy, const __nv_bfloat16* x, int T, int K, int N, cudaStream_t s,
                       const std::string& what);
  bool forward_gelu(__nv_bfloat16* y, __nv_bfloat16* pre, const __nv_bfloat16* x, const __nv_bfloat16* w,
                    const __nv_bfloat16* bias, int T, int K, int N, cudaStream_t s, const std::string& what);
  bool backward_input_dgelu(__nv_bfloat16* dx, const __nv_bfloat16* dy, const __nv_bfloat16* w,
                            const __nv_bfloat16* pre, int T, int K, int N, cudaStream_t s, const std::string& what);

 private:
  // What follows the product: nothing, the bias, bias then GELU (keeping GELU's input in the aux
  // matrix), or GELU's derivative at the aux matrix times the product.
  enum class Epilogue { kNone, kBias, kGeluAuxBias, kDGelu };
  // One column-major call D (m,n) = alpha op(A) op(B) + beta C, C = D.
  struct Call {
    bool trans_a, trans_b;
    int m, n, k, lda, ldb, ldc;
    cudaDataType_t out_type;
    Epilogue epilogue;
    // The GELU epilogues are optional: where they cannot run, the caller's kernels do.
    bool gelu() const { return epilogue == Epilogue::kGeluAuxBias || epilogue == Epilogue::kDGelu; }
    std::array<int, 10> key() const {
      return {trans_a, trans_b, m, n, k, lda, ldb, ldc, static_cast<int>(out_type), static_cast<int>(epilogue)};
    }
  };
  // What one shape needs for cublasLtMatmul, owned here and destroyed with the GemmLt.
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    Plan() = default;
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan();
  };
  // False where the call has an optional epilogue (the GELU ones) and no kernel runs it.
  bool run(const Call& c, const void* a, const void* b, void* d, const void* bias, const void* aux, float beta,
           cudaStream_t s, const std::string& what);
  // Null for an optional epilogue cuBLASLt has no kernel for; throws for any other failure.
  std::unique_ptr<Plan> make_plan(const Call& c, const void* bias, const void* aux, const std::string& what) const;

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 32u << 20;
  int sm_count_ = 0;
  std::map<std::array<int, 10>, std::unique_ptr<Plan>> plans_;  // a null plan: the epilogue is not available
};

}  // namespace zbpp::cuda
