// Green-context partitions (see green_context.h).
#include "runtime/backend/cuda/green_context.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <stdexcept>

namespace zbpp {

#if ZBPP_HAVE_GREEN_CONTEXTS
namespace {

// The driver entry points this file uses, loaded once.
struct Driver {
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetDevResource_v12040 get_resource = nullptr;
  PFN_cuDevSmResourceSplitByCount_v12040 split = nullptr;
  PFN_cuDevResourceGenerateDesc_v12040 generate_desc = nullptr;
  PFN_cuGreenCtxCreate_v12040 create = nullptr;
  PFN_cuGreenCtxDestroy_v12040 destroy = nullptr;
  PFN_cuCtxFromGreenCtx_v12040 to_context = nullptr;
  PFN_cuGreenCtxStreamCreate_v12050 stream_create = nullptr;
  PFN_cuStreamDestroy_v4000 stream_destroy = nullptr;
  PFN_cuCtxSetCurrent_v4000 set_current = nullptr;
  std::string missing;  // the first entry point the driver lacks
};

template <typename Fn>
void load(Driver* d, Fn* fn, const char* name, unsigned version) {
  cudaDriverEntryPointQueryResult status;
  void* p = nullptr;
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess || p == nullptr) {
    if (d->missing.empty()) d->missing = name;
    return;
  }
  *fn = reinterpret_cast<Fn>(p);
}

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    load(&d, &d.device_get, "cuDeviceGet", 2000);
    load(&d, &d.get_resource, "cuDeviceGetDevResource", 12040);
    load(&d, &d.split, "cuDevSmResourceSplitByCount", 12040);
    load(&d, &d.generate_desc, "cuDevResourceGenerateDesc", 12040);
    load(&d, &d.create, "cuGreenCtxCreate", 12040);
    load(&d, &d.destroy, "cuGreenCtxDestroy", 12040);
    load(&d, &d.to_context, "cuCtxFromGreenCtx", 12040);
    load(&d, &d.stream_create, "cuGreenCtxStreamCreate", 12050);
    load(&d, &d.stream_destroy, "cuStreamDestroy", 4000);
    load(&d, &d.set_current, "cuCtxSetCurrent", 4000);
    return d;
  }();
  return d;
}

std::string cu_error(const char* call, CUresult rc) { return std::string(call) + " failed with CUresult " + std::to_string(rc); }

}  // namespace

std::unique_ptr<GreenPartitions> GreenPartitions::create(int device, int parts, std::string* why) {
  const Driver& d = driver();
  if (!d.missing.empty()) {
    *why = "the driver has no " + d.missing;
    return nullptr;
  }
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {  // the primary context first
    *why = "cannot initialise GPU " + std::to_string(device);
    return nullptr;
  }
  CUdevice dev;
  CUdevResource all;
  CUresult rc;
  if ((rc = d.device_get(&dev, device)) != CUDA_SUCCESS) return *why = cu_error("cuDeviceGet", rc), nullptr;
  if ((rc = d.get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM)) != CUDA_SUCCESS)
    return *why = cu_error("cuDeviceGetDevResource", rc), nullptr;
  // Equal partitions in multiples of 8 SMs (Hopper's granularity; Ampere's is smaller).
  int per = static_cast<int>(all.sm.smCount) / parts / 8 * 8;
  if (per < 8) {
    *why = std::to_string(all.sm.smCount) + " SMs cannot make " + std::to_string(parts) + " partitions of 8 or more";
    return nullptr;
  }
  std::vector<CUdevResource> split(parts);
  unsigned groups = static_cast<unsigned>(parts);
  CUdevResource rest;
  if ((rc = d.split(split.data(), &groups, &all, &rest, 0, static_cast<unsigned>(per))) != CUDA_SUCCESS)
    return *why = cu_error("cuDevSmResourceSplitByCount", rc), nullptr;
  if (static_cast<int>(groups) < parts) {
    *why = "cuDevSmResourceSplitByCount made " + std::to_string(groups) + " partitions of " + std::to_string(per) +
           " SMs, not " + std::to_string(parts);
    return nullptr;
  }
  auto out = std::unique_ptr<GreenPartitions>(new GreenPartitions());
  out->total_sms_ = static_cast<int>(all.sm.smCount);
  for (int i = 0; i < parts; ++i) {
    CUdevResourceDesc desc;
    CUgreenCtx green;
    CUcontext context;
    CUstream stream;
    if ((rc = d.generate_desc(&desc, &split[i], 1)) != CUDA_SUCCESS)
      return *why = cu_error("cuDevResourceGenerateDesc", rc), nullptr;
    if ((rc = d.create(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM)) != CUDA_SUCCESS)
      return *why = cu_error("cuGreenCtxCreate", rc), nullptr;
    out->parts_.push_back({green, nullptr, nullptr, static_cast<int>(split[i].sm.smCount)});
    if ((rc = d.to_context(&context, green)) != CUDA_SUCCESS) return *why = cu_error("cuCtxFromGreenCtx", rc), nullptr;
    out->parts_.back().context = context;
    if ((rc = d.stream_create(&stream, green, CU_STREAM_NON_BLOCKING, 0)) != CUDA_SUCCESS)
      return *why = cu_error("cuGreenCtxStreamCreate", rc), nullptr;
    out->parts_.back().stream = reinterpret_cast<cudaStream_t>(stream);
  }
  return out;
}

GreenPartitions::~GreenPartitions() {
  const Driver& d = driver();
  for (Part& p : parts_) {
    if (p.stream) d.stream_destroy(reinterpret_cast<CUstream>(p.stream));
    if (p.green) d.destroy(static_cast<CUgreenCtx>(p.green));
  }
}

void GreenPartitions::enter(int part) const {
  CUresult rc = driver().set_current(static_cast<CUcontext>(parts_.at(part).context));
  if (rc != CUDA_SUCCESS) throw std::runtime_error(cu_error("cuCtxSetCurrent (entering a green context)", rc));
}

#else
// Built with CUDA headers older than 12.5 (CMake said so): no green contexts, a stream per stage.
std::unique_ptr<GreenPartitions> GreenPartitions::create(int, int, std::string* why) {
  *why = "this zbrun was built with CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
         std::to_string(CUDART_VERSION % 1000 / 10) + " headers; green contexts need CUDA 12.5 or newer";
  return nullptr;
}
GreenPartitions::~GreenPartitions() = default;
void GreenPartitions::enter(int) const {
  throw std::logic_error("GreenPartitions::enter: built without green contexts");
}
#endif

std::string GreenPartitions::describe() const {
  std::string s = std::to_string(parts_.size()) + " green-context partitions of";
  for (size_t i = 0; i < parts_.size(); ++i) s += (i ? ", " : " ") + std::to_string(parts_[i].sm_count);
  return s + " SMs (" + std::to_string(total_sms_) + " on the GPU)";
}

}  // namespace zbpp
