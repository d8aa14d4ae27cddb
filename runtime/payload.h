// What moves between virtual stages and between ranks: an activation, an input gradient, or (as
// host floats) the optimizer's state. The compute backends and the transports both take it, and
// neither needs the other to know what it holds:
//  - host floats: the CPU backend's activations; the in-process and MPI transports carry them;
//  - a device buffer, named by its id in this process's registry (runtime/cuda/device_buffers.h):
//    the CUDA backend's activations, which the CUDA transports move on the GPU and never copy to
//    the host.
// A side given the kind it cannot use says so (Compute::refuses, the MPI transport's send).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zbpp {

struct Payload {
  std::vector<float> host;   ///< the floats, when the payload is on the host
  std::uint32_t device = 0;  ///< a device buffer's registry id; 0: none (the payload is `host`)

  static Payload of_host(std::vector<float> floats) {
    Payload p;
    p.host = std::move(floats);
    return p;
  }
  static Payload of_device(std::uint32_t id) {
    Payload p;
    p.device = id;
    return p;
  }
  bool on_device() const { return device != 0; }
  bool empty() const { return device == 0 && host.empty(); }
  /// "a device buffer" or "12 floats", for the messages that say what arrived.
  std::string what() const { return on_device() ? "a device buffer" : std::to_string(host.size()) + " floats"; }
};

}  // namespace zbpp
