// The runtime driver's launch modes (see trainer.h): each gives every rank it runs a backend and a
// transport, then runs it (rank_run.h).
#include "runtime/trainer.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime/backend/cpu/compute_cpu.h"
#include "runtime/rank_run.h"
#include "runtime/transport/local.h"
#ifdef ZBPP_HAVE_CUDA
#include "runtime/backend/cuda/compute_cuda.h"
#include "runtime/backend/cuda/green_context.h"
#include "runtime/transport/device.h"
#endif
#ifdef ZBPP_HAVE_NCCL
#include "runtime/transport/nccl.h"
#endif
#ifdef ZBPP_HAVE_MPI
#include <mpi.h>

#include "runtime/transport/mpi.h"
#endif

namespace zbpp {

namespace {

RankBackend cpu_backend(const RunOptions& o, const GptConfig& model, const Schedule& s) {
  RankBackend b;
  b.make_compute = [&o, &model, &s](const std::vector<int>& vss) {
    return make_cpu_compute(model, vss, s.p * s.chunks, s.m, o.seed, o.adamw);
  };
  b.payload = [&model] {
    return Payload::of_host(std::vector<float>(static_cast<size_t>(model.tokens()) * model.channels, 1.0f));
  };
  return b;
}

#ifdef ZBPP_HAVE_CUDA
RankBackend cuda_backend(const RunOptions& o, const GptConfig& model, const Schedule& s, const CudaStage& stage) {
  RankBackend b;
  // The rank's one stream: its green context's, or one made here (in the rank's thread, on its GPU),
  // shared by the backend and the T_comm payloads.
  std::shared_ptr<CUstream_st> owned;
  CudaStage mine = stage;
  if (!mine.stream) {
    cudaStream_t made = nullptr;
    cudaError_t rc = cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking);
    if (rc != cudaSuccess)
      throw std::runtime_error(std::string("creating the rank's stream: ") + cudaGetErrorString(rc));
    owned.reset(made, [](cudaStream_t st) { cudaStreamDestroy(st); });
    mine.stream = made;
  }
  b.make_compute = [&o, &model, &s, mine, owned](const std::vector<int>& vss) {
    return make_cuda_compute(model, vss, s.p * s.chunks, s.m, o.seed, o.adamw, mine);
  };
  b.payload = [&model, mine, owned] { return make_payload(cuda_activation_bytes(model), mine.stream); };
  b.release = [mine, owned](const Payload& payload) { release_payload(payload, mine.stream); };
  return b;
}
#endif

#ifdef ZBPP_HAVE_CUDA
// A failure met before the rank's run began (setting up its device or transport): "rank R: why".
RankResult failed_setup(int rank, const std::string& why, RunObserver& observer) {
  RankResult result;
  result.rank = rank;
  result.error = RunError{rank, -1, -1, "", why, "rank " + std::to_string(rank) + ": " + why};
  observer.failed(*result.error);
  return result;
}
#endif

}  // namespace

int exit_code(const std::vector<RankResult>& ranks) {
  for (const RankResult& r : ranks)
    if (r.error) return 1;
  return 0;
}

std::vector<RankResult> train_local_threads(const TrainInputs& in, const RunOptions& o, RunObserver& observer) {
  const Schedule& s = in.schedule;
  const RankBackend backend = cpu_backend(o, in.model, s);
  auto hub = make_local_hub(s.p);
  std::vector<RankResult> results(s.p);
  std::vector<std::thread> threads;
  for (int r = 0; r < s.p; ++r)
    threads.emplace_back([&, r] {
      auto transport = make_local_transport(hub, r);
      results[r] = run_rank(in, o, backend, transport.get(), observer);
    });
  for (auto& t : threads) t.join();
  return results;
}

#ifdef ZBPP_HAVE_MPI
RankResult train_mpi_rank(const TrainInputs& in, const RunOptions& o, RunObserver& observer) {
  auto transport = make_mpi_transport();
  const RankBackend backend = cpu_backend(o, in.model, in.schedule);
  return run_rank(in, o, backend, transport.get(), observer);
}
#endif

#ifdef ZBPP_HAVE_CUDA
// One thread per stage on GPU 0, each in its own green-context partition with `single_gpu` when
// the GPU has the SMs, else on its own stream; activations move by device-to-device copies.
std::vector<RankResult> train_cuda_threads(const TrainInputs& in, const RunOptions& o, bool single_gpu,
                                           RunObserver& observer) {
  const Schedule& s = in.schedule;
  std::unique_ptr<GreenPartitions> parts;
  if (single_gpu) {
    std::string why;
    parts = GreenPartitions::create(0, s.p, &why);
    observer.note("single GPU: " + (parts ? parts->describe() : "no SM partitions (" + why + "), one stream per stage"));
  }
  auto hub = make_local_hub(s.p);
  std::vector<RankResult> results(s.p);
  std::vector<std::thread> threads;
  for (int r = 0; r < s.p; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<Transport> transport;
      CudaStage stage;
      RankBackend backend;
      try {
        cudaError_t rc = cudaSetDevice(0);
        if (rc != cudaSuccess) throw std::runtime_error(std::string("cudaSetDevice (GPU 0): ") + cudaGetErrorString(rc));
        if (parts) {
          parts->enter(r);
          stage.stream = parts->stream(r);
          stage.sm_count = parts->sm_count(r);
        }
        transport = make_device_transport(hub, r);
        backend = cuda_backend(o, in.model, s, stage);
      } catch (const std::exception& e) {
        results[r] = failed_setup(r, e.what(), observer);
        make_local_transport(hub, r)->abort("rank " + std::to_string(r) + " failed");
        return;
      }
      results[r] = run_rank(in, o, backend, transport.get(), observer);
    });
  for (auto& t : threads) t.join();
  return results;
}
#endif

#if defined(ZBPP_HAVE_NCCL) && defined(ZBPP_HAVE_MPI)
RankResult train_nccl_rank(const TrainInputs& in, const RunOptions& o, RunObserver& observer) {
  const Schedule& s = in.schedule;
  std::vector<NcclChannel> channels;  // every rank derives the same list from the same schedule
  for (int r = 0; r < s.p; ++r) {
    for (const Op& op : s.stages[r]) {
      if (op.type == OpType::SEND_F) channels.push_back({r, op.peer, kActivation});
      if (op.type == OpType::SEND_B) channels.push_back({r, op.peer, kGradient});
    }
    if (r + 1 < s.p) {  // the T_comm ping-pong of --profile
      channels.push_back({r, r + 1, kActivation});
      channels.push_back({r + 1, r, kGradient});
    }
  }
  int device = 0;
  std::string why;
  auto transport = make_nccl_transport(channels, o.timeout_s, &device, &why);
  if (!transport) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    RankResult result;
    result.rank = rank;
    result.error = RunError{rank, -1, -1, "", why, "rank " + std::to_string(rank) + ", setting up NCCL: " + why};
    observer.failed(*result.error);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return result;
  }
  RankBackend backend;
  try {
    backend = cuda_backend(o, in.model, s, CudaStage{device, nullptr, 0});
  } catch (const std::exception& e) {
    RankResult result = failed_setup(transport->rank(), e.what(), observer);
    transport->abort("rank " + std::to_string(transport->rank()) + " failed");
    return result;
  }
  return run_rank(in, o, backend, transport.get(), observer);
}
#endif

}  // namespace zbpp
