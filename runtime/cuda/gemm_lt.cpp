// cuBLASLt wrapper (see gemm_lt.h). Row-major X (T,K) is column-major X^T (K,T) with ld K, so:
//   Y^T (N,T)  = W (N,K; stored as col-major K x N, transposed) . X^T    -> m=N, n=T, k=K, A^T
//   dX^T (K,T) = W^T (col-major K x N as stored) . dY^T (N,T)           -> m=K, n=T, k=N
//   dW^T (K,N) = X^T (K,T) . dY (T,N; stored as col-major N x T, transposed) -> m=K, n=N, k=T, B^T
#include "runtime/cuda/gemm_lt.h"

#include <memory>
#include <stdexcept>

#include "runtime/cuda/check.h"

namespace zbpp::cuda {

namespace {

// Owners of the descriptors one call builds, destroyed on every path.
struct Desc {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Desc() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

}  // namespace

GemmLt::GemmLt(int sm_count) : sm_count_(sm_count) {
  ZBPP_CK(cublasLtCreate(&handle_), "creating the cuBLASLt handle");
  ZBPP_CK(cudaMalloc(&workspace_, workspace_bytes_), "cuBLASLt workspace");
}

GemmLt::~GemmLt() {
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

void GemmLt::forward(__nv_bfloat16* y, const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias, int T,
                     int K, int N, cudaStream_t s, const std::string& what) {
  run({true, false, N, T, K, K, K, N, CUDA_R_16BF, bias != nullptr}, w, x, y, bias, 0.0f, s, what + " forward");
}

void GemmLt::backward_input(__nv_bfloat16* dx, const __nv_bfloat16* dy, const __nv_bfloat16* w, int T, int K, int N,
                            cudaStream_t s, const std::string& what) {
  run({false, false, K, T, N, K, N, K, CUDA_R_16BF, false}, w, dy, dx, nullptr, 0.0f, s, what + " backward_input");
}

void GemmLt::backward_weight(float* dw, const __nv_bfloat16* dy, const __nv_bfloat16* x, int T, int K, int N,
                             cudaStream_t s, const std::string& what) {
  run({false, true, K, N, T, K, N, K, CUDA_R_32F, false}, x, dy, dw, nullptr, 1.0f, s, what + " backward_weight");
}

void GemmLt::run(const Call& c, const void* a, const void* b, void* d, const void* bias, float beta, cudaStream_t s,
                 const std::string& what) {
  Desc desc;
  ZBPP_CK(cublasLtMatmulDescCreate(&desc.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), what);
  cublasOperation_t ta = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZBPP_CK(cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), what);
  ZBPP_CK(cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), what);
  if (sm_count_ > 0)
    ZBPP_CK(cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_count_, sizeof sm_count_),
            what);
  if (c.bias) {
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    ZBPP_CK(cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), what);
    ZBPP_CK(cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), what);
  }
  // Stored shapes (column-major, before op): A is (lda, cols), B likewise.
  int a_rows = c.trans_a ? c.k : c.m, a_cols = c.trans_a ? c.m : c.k;
  int b_rows = c.trans_b ? c.n : c.k, b_cols = c.trans_b ? c.k : c.n;
  ZBPP_CK(cublasLtMatrixLayoutCreate(&desc.a, CUDA_R_16BF, a_rows, a_cols, c.lda), what);
  ZBPP_CK(cublasLtMatrixLayoutCreate(&desc.b, CUDA_R_16BF, b_rows, b_cols, c.ldb), what);
  ZBPP_CK(cublasLtMatrixLayoutCreate(&desc.c, c.out_type, c.m, c.n, c.ldc), what);

  auto key = c.key();
  auto it = algos_.find(key);
  if (it == algos_.end()) {
    ZBPP_CK(cublasLtMatmulPreferenceCreate(&desc.pref), what);
    ZBPP_CK(cublasLtMatmulPreferenceSetAttribute(desc.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                                 sizeof workspace_bytes_),
            what);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    ZBPP_CK(cublasLtMatmulAlgoGetHeuristic(handle_, desc.op, desc.a, desc.b, desc.c, desc.c, desc.pref, 1, &result, &found),
            what);
    if (found == 0)
      throw std::runtime_error("cublasLtMatmulAlgoGetHeuristic (" + what + "): no algorithm for m=" +
                               std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k));
    it = algos_.emplace(key, result.algo).first;
  }
  const float alpha = 1.0f;
  ZBPP_CK(cublasLtMatmul(handle_, desc.op, &alpha, a, desc.a, b, desc.b, &beta, d, desc.c, d, desc.c, &it->second,
                         workspace_, workspace_bytes_, s),
          what);
}

}  // namespace zbpp::cuda
