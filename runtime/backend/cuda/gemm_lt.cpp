// cuBLASLt wrapper (see gemm_lt.h). Row-major X (T,K) is column-major X^T (K,T) with ld K, so:
//   Y^T (N,T)  = W (N,K; stored as col-major K x N, transposed) . X^T    -> m=N, n=T, k=K, A^T
//   dX^T (K,T) = W^T (col-major K x N as stored) . dY^T (N,T)           -> m=K, n=T, k=N
//   dW^T (K,N) = X^T (K,T) . dY (T,N; stored as col-major N x T, transposed) -> m=K, n=N, k=T, B^T
#include "runtime/backend/cuda/gemm_lt.h"

#include <cstdint>
#include <memory>
#include <stdexcept>

#include "runtime/cuda/check.h"

namespace zbpp::cuda {

GemmLt::Plan::~Plan() {
  if (c) cublasLtMatrixLayoutDestroy(c);
  if (b) cublasLtMatrixLayoutDestroy(b);
  if (a) cublasLtMatrixLayoutDestroy(a);
  if (op) cublasLtMatmulDescDestroy(op);
}

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
  run({true, false, N, T, K, K, K, N, CUDA_R_16BF, bias ? Epilogue::kBias : Epilogue::kNone}, w, x, y, bias, nullptr,
      0.0f, s, what + " forward");
}

void GemmLt::backward_input(__nv_bfloat16* dx, const __nv_bfloat16* dy, const __nv_bfloat16* w, int T, int K, int N,
                            cudaStream_t s, const std::string& what) {
  run({false, false, K, T, N, K, N, K, CUDA_R_16BF, Epilogue::kNone}, w, dy, dx, nullptr, nullptr, 0.0f, s,
      what + " backward_input");
}

void GemmLt::backward_weight(float* dw, const __nv_bfloat16* dy, const __nv_bfloat16* x, int T, int K, int N,
                             cudaStream_t s, const std::string& what) {
  run({false, true, K, N, T, K, N, K, CUDA_R_32F, Epilogue::kNone}, x, dy, dw, nullptr, nullptr, 1.0f, s,
      what + " backward_weight");
}

// The aux matrix has D's shape and leading dimension (N for the forward's Y^T, K for dX^T).
bool GemmLt::forward_gelu(__nv_bfloat16* y, __nv_bfloat16* pre, const __nv_bfloat16* x, const __nv_bfloat16* w,
                          const __nv_bfloat16* bias, int T, int K, int N, cudaStream_t s, const std::string& what) {
  return run({true, false, N, T, K, K, K, N, CUDA_R_16BF, Epilogue::kGeluAuxBias}, w, x, y, bias, pre, 0.0f, s,
             what + " forward with GELU");
}

bool GemmLt::backward_input_dgelu(__nv_bfloat16* dx, const __nv_bfloat16* dy, const __nv_bfloat16* w,
                                  const __nv_bfloat16* pre, int T, int K, int N, cudaStream_t s,
                                  const std::string& what) {
  return run({false, false, K, T, N, K, N, K, CUDA_R_16BF, Epilogue::kDGelu}, w, dy, dx, nullptr, pre, 0.0f, s,
             what + " backward_input with GELU's derivative");
}

std::unique_ptr<GemmLt::Plan> GemmLt::make_plan(const Call& c, const void* bias, const void* aux,
                                                const std::string& what) const {
  auto plan = std::make_unique<Plan>();
  ZBPP_CK(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), what);
  cublasOperation_t ta = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZBPP_CK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), what);
  ZBPP_CK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), what);
  if (sm_count_ > 0)
    ZBPP_CK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_count_,
                                           sizeof sm_count_),
            what);
  if (c.epilogue != Epilogue::kNone) {
    const cublasLtEpilogue_t epi = c.epilogue == Epilogue::kBias         ? CUBLASLT_EPILOGUE_BIAS
                                   : c.epilogue == Epilogue::kGeluAuxBias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                                                                          : CUBLASLT_EPILOGUE_DGELU;
    ZBPP_CK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), what);
  }
  if (c.gelu()) {
    // The aux leading dimension must be a multiple of 8 elements.
    if (c.ldc % 8 != 0) return nullptr;
    const std::int64_t ld = c.ldc;
    ZBPP_CK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld), what);
    // The heuristic reads the bias and aux pointers' alignment (not their contents): the first
    // call's stand for every call's (run() lets only 256-byte aligned ones through).
    ZBPP_CK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux), what);
    if (bias)
      ZBPP_CK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), what);
  }
  // Stored shapes (column-major, before op): A is (lda, cols), B likewise.
  int a_rows = c.trans_a ? c.k : c.m, a_cols = c.trans_a ? c.m : c.k;
  int b_rows = c.trans_b ? c.n : c.k, b_cols = c.trans_b ? c.k : c.n;
  ZBPP_CK(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, a_rows, a_cols, c.lda), what);
  ZBPP_CK(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, b_rows, b_cols, c.ldb), what);
  ZBPP_CK(cublasLtMatrixLayoutCreate(&plan->c, c.out_type, c.m, c.n, c.ldc), what);

  cublasLtMatmulPreference_t pref = nullptr;
  ZBPP_CK(cublasLtMatmulPreferenceCreate(&pref), what);
  // The preference is only needed for the search: released on every path.
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&cublasLtMatmulPreferenceDestroy)> owned(
      pref, cublasLtMatmulPreferenceDestroy);
  ZBPP_CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                               sizeof workspace_bytes_),
          what);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t rc = cublasLtMatmulAlgoGetHeuristic(handle_, plan->op, plan->a, plan->b, plan->c, plan->c, pref,
                                                           1, &result, &found);
  if (c.gelu() && (rc == CUBLAS_STATUS_NOT_SUPPORTED || (rc == CUBLAS_STATUS_SUCCESS && found == 0))) return nullptr;
  ZBPP_CK(rc, what);
  if (found == 0)
    throw std::runtime_error("cublasLtMatmulAlgoGetHeuristic (" + what + "): no algorithm for m=" +
                             std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k));
  plan->algo = result.algo;
  return plan;
}

bool GemmLt::run(const Call& c, const void* a, const void* b, void* d, const void* bias, const void* aux, float beta,
                 cudaStream_t s, const std::string& what) {
  // The heuristic assumes 256-byte aligned matrices (cudaMalloc's and the pool's always are): an
  // optional epilogue is left to the caller's kernels for any other pointer, not failed.
  auto aligned = [](const void* p) { return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 256 == 0; };
  if (c.gelu() && !(aligned(a) && aligned(b) && aligned(d) && aligned(bias) && aligned(aux))) return false;
  auto it = plans_.find(c.key());
  if (it == plans_.end()) it = plans_.emplace(c.key(), make_plan(c, bias, aux, what)).first;
  if (!it->second) return false;
  const Plan& plan = *it->second;
  // The attributes that change between calls of a shape: the bias and aux pointers.
  if (c.epilogue == Epilogue::kBias || c.epilogue == Epilogue::kGeluAuxBias)
    ZBPP_CK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), what);
  if (aux)
    ZBPP_CK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux), what);
  const float alpha = 1.0f;
  ZBPP_CK(cublasLtMatmul(handle_, plan.op, &alpha, a, plan.a, b, plan.b, &beta, d, plan.c, d, plan.c, &plan.algo,
                         workspace_, workspace_bytes_, s),
          what);
  return true;
}

}  // namespace zbpp::cuda
