// Error checks for CUDA, cuBLASLt and NCCL calls. A failed call throws std::runtime_error naming
// the call and what it was for; the interpreter adds the rank and op, so nothing here aborts.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace zbpp::cuda {

// "cudaMemcpyAsync(dst, src, n, kind, stream)" -> "cudaMemcpyAsync": the name says enough.
inline std::string call_name(const char* call) {
  std::string s(call);
  return s.substr(0, s.find('('));
}

inline void check(cudaError_t rc, const char* call, const std::string& what) {
  if (rc != cudaSuccess) throw std::runtime_error(call_name(call) + " (" + what + "): " + cudaGetErrorString(rc));
}

inline void check(cublasStatus_t rc, const char* call, const std::string& what) {
  if (rc != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(call_name(call) + " (" + what + "): " + cublasLtGetStatusString(rc));
}

}  // namespace zbpp::cuda

// CK(call, what): the call's own text goes into the message.
#define ZBPP_CK(call, what) ::zbpp::cuda::check((call), #call, (what))
