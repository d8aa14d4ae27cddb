// How activations stay on the GPU. Shared by the CUDA backend and the CUDA transports
// (runtime/cuda/: neither includes the other).
//
// The interpreter passes each activation as a Payload (runtime/payload.h). The CUDA backend's is
// a device buffer: the id of a buffer held in this process's registry, with an event that marks
// when its contents are ready. The CUDA transports (transport/device.h, transport/nccl.h) take the
// buffer out of the registry by its id, move the bytes on the GPU, and hand the receiver a new
// id. No activation crosses to the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/ir.h"  // MessageKind
#include "runtime/payload.h"

namespace zbpp::cuda {

/// Whether messages of `kind` carry device buffers: activations and input gradients do; the
/// optimizer's state (post-validation) is host doubles and travels as it is.
inline bool carries_device_buffer(MessageKind kind) { return kind == kActivation || kind == kGradient; }

/// Device memory from the stream-ordered allocator, freed on the stream that owns it last.
struct DeviceTensor {
  void* ptr = nullptr;
  size_t bytes = 0;
  cudaEvent_t ready = nullptr;  ///< recorded after the producer's last write; null: ready now
};

class DeviceRegistry {
 public:
  /// Holds `t` and returns its id.
  std::uint32_t put(DeviceTensor t);
  /// Gives the tensor back and forgets it; throws if the id is unknown (used twice, or never made).
  DeviceTensor take(std::uint32_t id);
  /// Tensors still held (leaked by a failed run); freed at exit.
  ~DeviceRegistry();

 private:
  std::mutex mu_;
  std::uint32_t next_ = 1;
  std::unordered_map<std::uint32_t, DeviceTensor> held_;
};

/// The one registry of this process (the CUDA backends and transports of every rank thread).
DeviceRegistry& registry();

/// The registry id `p` names; throws, saying `what` it was, where `p` is missing or host floats.
std::uint32_t device_id(const Payload* p, const std::string& what);

/// Stream-ordered allocation and release (cudaMallocAsync / cudaFreeAsync); `what` names the use.
void* device_alloc(size_t bytes, cudaStream_t s, const char* what);
void device_free(void* p, cudaStream_t s);
/// Sets up the device's default memory pool, which every stream of this process allocates from:
/// freed blocks stay in the pool (slots are freed and re-made every step), and a block freed on one
/// stream is never handed to another with a hidden wait on the freeing stream (internal
/// dependencies off): a buffer freed behind an NCCL send would otherwise make a compute-stream
/// allocation wait for that send, and so for the peer. Idempotent; call before the first allocation.
void configure_default_pool(int device);
/// An event without timing, for ordering only.
cudaEvent_t make_event(const char* what);

}  // namespace zbpp::cuda
