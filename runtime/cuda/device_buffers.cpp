// The device buffer registry (see device_buffers.h).
#include "runtime/cuda/device_buffers.h"

#include <stdexcept>
#include <string>

#include "runtime/cuda/check.h"

namespace zbpp::cuda {

std::uint32_t DeviceRegistry::put(DeviceTensor t) {
  std::lock_guard<std::mutex> lock(mu_);
  std::uint32_t id = next_++;
  held_[id] = t;
  return id;
}

DeviceTensor DeviceRegistry::take(std::uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(id);
  if (it == held_.end()) throw std::runtime_error("device buffer " + std::to_string(id) + " is unknown");
  DeviceTensor t = it->second;
  held_.erase(it);
  return t;
}

DeviceRegistry::~DeviceRegistry() {
  // At exit the CUDA runtime may already be gone; errors are ignored on purpose.
  for (auto& [id, t] : held_) {
    if (t.ready) cudaEventDestroy(t.ready);
    if (t.ptr) cudaFree(t.ptr);
  }
}

DeviceRegistry& registry() {
  static DeviceRegistry r;
  return r;
}

std::uint32_t device_id(const Payload* p, const std::string& what) {
  if (p == nullptr) throw std::runtime_error(what + ": expected a device buffer, got nothing");
  if (!p->on_device())
    throw std::runtime_error(what + ": expected a device buffer, got " + p->what() +
                             " (is a CPU backend's activation on a CUDA transport, or the reverse?)");
  return p->device;
}

void* device_alloc(size_t bytes, cudaStream_t s, const char* what) {
  void* p = nullptr;
  ZBPP_CK(cudaMallocAsync(&p, bytes, s), std::string(what) + ", " + std::to_string(bytes) + " bytes");
  return p;
}

void device_free(void* p, cudaStream_t s) {
  if (p) ZBPP_CK(cudaFreeAsync(p, s), "releasing a device buffer");
}

void configure_default_pool(int device) {
  cudaMemPool_t pool;
  const std::string what = "the memory pool of GPU " + std::to_string(device);
  ZBPP_CK(cudaDeviceGetDefaultMemPool(&pool, device), what);
  std::uint64_t keep = UINT64_MAX;
  ZBPP_CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), what);
  int off = 0;
  ZBPP_CK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &off), what);
}

cudaEvent_t make_event(const char* what) {
  cudaEvent_t e = nullptr;
  ZBPP_CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), what);
  return e;
}

}  // namespace zbpp::cuda
