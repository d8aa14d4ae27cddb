// Device-to-device transport (see transport/device.h). send: the copy waits for the producer's
// event on this rank's copy stream, the source is freed behind it, and the hub carries the new
// buffer's id. recv: the hub's deadline, then the copy's event polled against the same deadline, so a
// receive returns only once the bytes are on this side and never waits past its timeout.
#include "runtime/transport/device.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "runtime/cuda/check.h"
#include "runtime/cuda/device_buffers.h"

namespace zbpp {

namespace {

using Clock = std::chrono::steady_clock;

class DeviceTransport final : public Transport {
 public:
  DeviceTransport(std::shared_ptr<LocalHub> hub, int rank) : local_(make_local_transport(std::move(hub), rank)) {
    int device = 0;
    ZBPP_CK(cudaGetDevice(&device), "rank " + std::to_string(rank) + " reading its GPU");
    cuda::configure_default_pool(device);
    ZBPP_CK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "creating the copy stream of rank " + std::to_string(rank));
  }
  ~DeviceTransport() override {
    cudaStreamSynchronize(copy_);
    cudaStreamDestroy(copy_);
  }

  int rank() const override { return local_->rank(); }
  int size() const override { return local_->size(); }

  bool send(int peer, MessageKind kind, Message msg, std::string* err) override {
    if (!cuda::carries_device_buffer(kind)) return local_->send(peer, kind, std::move(msg), err);
    try {
      const std::string what = "copying to rank " + std::to_string(peer);
      cuda::DeviceTensor src = cuda::registry().take(cuda::device_id(&msg.data, what));
      if (src.ready) {
        ZBPP_CK(cudaStreamWaitEvent(copy_, src.ready, 0), what);
        ZBPP_CK(cudaEventDestroy(src.ready), what);
      }
      cuda::DeviceTensor dst{cuda::device_alloc(src.bytes, copy_, "transfer buffer"), src.bytes,
                             cuda::make_event(what.c_str())};
      ZBPP_CK(cudaMemcpyAsync(dst.ptr, src.ptr, src.bytes, cudaMemcpyDeviceToDevice, copy_), what);
      cuda::device_free(src.ptr, copy_);
      ZBPP_CK(cudaEventRecord(dst.ready, copy_), what);
      msg.data = Payload::of_device(cuda::registry().put(dst));
    } catch (const std::exception& e) {
      *err = e.what();
      return false;
    }
    return local_->send(peer, kind, std::move(msg), err);
  }

  bool recv(int peer, MessageKind kind, Message* msg, double timeout_s, std::string* err) override {
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    if (!local_->recv(peer, kind, msg, timeout_s, err)) return false;
    if (!cuda::carries_device_buffer(kind)) return true;
    try {
      // Wait for the copy's event, then put the buffer back under a new id: the backend adopts it.
      cuda::DeviceTensor t = cuda::registry().take(cuda::device_id(&msg->data, "the copy from rank " + std::to_string(peer)));
      cudaError_t rc = cudaSuccess;
      while (t.ready && (rc = cudaEventQuery(t.ready)) == cudaErrorNotReady) {
        if (Clock::now() > deadline) {
          cuda::registry().put(t);  // leaked on purpose: the run is failing
          *err = "the copy from rank " + std::to_string(peer) + " did not finish within the timeout";
          return false;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(10));
      }
      ZBPP_CK(rc, "copy from rank " + std::to_string(peer));
      msg->data = Payload::of_device(cuda::registry().put(t));
    } catch (const std::exception& e) {
      *err = e.what();
      return false;
    }
    return true;
  }

  bool allreduce_sum(std::vector<double>* values, double timeout_s, std::string* err) override {
    return local_->allreduce_sum(values, timeout_s, err);
  }
  void abort(const std::string& why) override { local_->abort(why); }
  // A rank stuck in an op (e.g. --fault hang) polls this to stop when another rank failed.
  bool aborted() const override { return local_->aborted(); }

 private:
  std::unique_ptr<Transport> local_;
  cudaStream_t copy_ = nullptr;
};

}  // namespace

std::unique_ptr<Transport> make_device_transport(std::shared_ptr<LocalHub> hub, int rank) {
  return std::make_unique<DeviceTransport>(std::move(hub), rank);
}

}  // namespace zbpp
