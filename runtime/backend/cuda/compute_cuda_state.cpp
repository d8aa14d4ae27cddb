// The CUDA backend's optimizer and state (compute_cuda_internal.h): losses, gradient norms, AdamW's
// step and rollback, the checkpoint bytes, the parameters read back.
#include "runtime/backend/cuda/compute_cuda_internal.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/state_format.h"

namespace zbpp::cuda_backend {

bool CudaCompute::loss(int mb, double* out) const {
  if (!has_loss_[mb]) return false;
  if (!losses_read_) {
    // Every microbatch's token losses at once, after the step's forwards: one wait, not one per F.
    const int BT = c_.tokens();
    std::vector<float> host(static_cast<size_t>(m_) * BT);
    ZBPP_CK(cudaMemcpyAsync(host.data(), token_losses_, host.size() * 4, cudaMemcpyDeviceToHost, stream_),
            "reading losses");
    sync("reading losses");
    for (int k = 0; k < m_; ++k) {
      double sum = 0;
      for (int t = 0; t < BT; ++t) sum += host[static_cast<size_t>(k) * BT + t];  // in token order, as the CPU backend does
      losses_[k] = sum / BT;
    }
    losses_read_ = true;
  }
  *out = losses_[mb];
  return true;
}

void CudaCompute::zero_grad() {
  for (auto& ch : chunks_)
    for (Param* p : ch->params) ZBPP_CK(cudaMemsetAsync(p->grad, 0, p->n * sizeof(float), stream_), "zeroing gradients");
  sync("zero_grad");
}

GradStats CudaCompute::grad_stats() const {
  GradStats g;
  g.squared_norms.assign(global_tensor_count(c_), 0.0);
  std::vector<const Param*> params;
  for (const auto& ch : chunks_)
    for (const Param* p : ch->params) params.push_back(p);
  double* sums = norm_scratch_ + cuda::kSumPartials;
  for (size_t i = 0; i < params.size(); ++i)
    cuda::sum_squares(sums + i, norm_scratch_, params[i]->grad, params[i]->n, stream_);
  std::vector<double> host(params.size());
  ZBPP_CK(cudaMemcpyAsync(host.data(), sums, host.size() * sizeof(double), cudaMemcpyDeviceToHost, stream_),
          "reading gradient norms");
  ZBPP_CK(cudaStreamSynchronize(stream_), "grad_stats");
  for (size_t i = 0; i < params.size(); ++i) {
    g.squared_norms[params[i]->id] = host[i];
    if (!std::isfinite(host[i])) g.nonfinite = true;
  }
  return g;
}

void CudaCompute::optimizer_step(double global_norm) {
  ++step_;
  adamw_all(global_norm, false);
}

void CudaCompute::optimizer_rollback(double global_norm) {
  adamw_all(global_norm, true);
  --step_;
}

bool CudaCompute::inject_device_fault() {
  cuda::device_fault(stream_);
  return true;
}

void CudaCompute::inject_nonfinite() {
  for (auto& ch : chunks_)
    if (!ch->params.empty()) {
      float nan = std::nanf("");
      ZBPP_CK(cudaMemcpyAsync(ch->params[0]->grad, &nan, sizeof nan, cudaMemcpyHostToDevice, stream_),
              "injecting a NaN gradient");
      sync("inject_nonfinite");
      return;
    }
}

// The CPU backend's layout (step count, tensor count, then per tensor id, size, value, m, v), so
// a checkpoint written on one backend loads on the other.
// Layout: state_format.h, the CPU backend's.
bool CudaCompute::save_state(std::string* bytes) const {
  std::int64_t tensors = 0;
  for (const auto& ch : chunks_) tensors += static_cast<std::int64_t>(ch->params.size());
  StateWriter out(bytes, step_, tensors);
  std::vector<float> host;
  for (const auto& ch : chunks_)
    for (const Param* p : ch->params) {
      out.tensor(p->id, p->n);
      host.resize(static_cast<size_t>(p->n));
      for (const float* d : {p->value, p->m, p->v}) {
        ZBPP_CK(cudaMemcpyAsync(host.data(), d, host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_),
                "reading the optimizer state for a checkpoint");
        ZBPP_CK(cudaStreamSynchronize(stream_), "reading the optimizer state for a checkpoint");
        out.floats(host.data(), p->n);
      }
    }
  return true;
}

bool CudaCompute::load_state(const std::string& bytes, std::string* err) {
  StateReader in(bytes);
  std::int64_t tensors = 0, step = 0, count = 0;
  for (const auto& ch : chunks_) tensors += static_cast<std::int64_t>(ch->params.size());
  if (!in.header(tensors, &step, &count, err)) return false;
  // Read through before copying any, so a bad state leaves the weights as they were.
  std::vector<const char*> data;
  for (auto& ch : chunks_)
    for (Param* p : ch->params) {
      std::int64_t id = p->id, n = p->n;
      if (!in.tensor(&id, &n, &data.emplace_back(), err)) return false;
    }
  if (!in.finish(err)) return false;
  size_t k = 0;
  for (auto& ch : chunks_)
    for (Param* p : ch->params) {
      const size_t floats = static_cast<size_t>(p->n) * sizeof(float);
      const char* at = data[k++];
      for (float* d : {p->value, p->m, p->v}) {
        ZBPP_CK(cudaMemcpyAsync(d, at, floats, cudaMemcpyHostToDevice, stream_), "loading a checkpoint");
        at += floats;
      }
      cuda::to_bf16(p->value16, p->value, p->n, stream_);
    }
  sync("loading a checkpoint");  // before `bytes` may go
  step_ = static_cast<int>(step);
  return true;
}

std::vector<std::pair<int, std::vector<float>>> CudaCompute::parameters() const {
  return all(&Param::value, "reading parameters");
}

std::vector<std::pair<int, std::vector<float>>> CudaCompute::gradients() const {
  return all(&Param::grad, "reading gradients");
}

// One fp32 field (master weights or gradients) of every parameter, copied to the host.
std::vector<std::pair<int, std::vector<float>>> CudaCompute::all(float* Param::*field, const char* what) const {
  std::vector<std::pair<int, std::vector<float>>> out;
  for (const auto& ch : chunks_)
    for (const Param* p : ch->params) {
      std::vector<float> v(static_cast<size_t>(p->n));
      ZBPP_CK(cudaMemcpyAsync(v.data(), p->*field, v.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_), what);
      ZBPP_CK(cudaStreamSynchronize(stream_), what);
      out.emplace_back(p->id, std::move(v));
    }
  return out;
}

void CudaCompute::adamw_all(double global_norm, bool rollback) {
  const cuda::AdamWArgs a = adamw_scalars(adamw_, clip_scale(global_norm, adamw_), step_);
  for (auto& ch : chunks_)
    for (Param* p : ch->params) {
      if (rollback) cuda::adamw_rollback(p->value, p->m, p->v, p->value16, p->grad, p->n, a, stream_);
      else cuda::adamw_step(p->value, p->m, p->v, p->value16, p->grad, p->n, a, stream_);
    }
  sync(rollback ? "optimizer_rollback" : "optimizer_step");
}

}  // namespace zbpp::cuda_backend
