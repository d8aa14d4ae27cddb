// Raw cuBLASLt throughput of the linear layers' three calls (forward, B = dX, W = dW += ...) for a
// model, on the whole GPU or inside one green-context partition of it (what one pipeline stage
// gets with zbrun --single-gpu). Prints a Markdown table: TFLOP/s and the share of the GPU's peak.
// Usage: zbpp_gpu_gemm_bench [--model tiny|file.json] [--parts P] [--iters N] [--peak TFLOPS]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/backend/cuda/gemm_lt.h"
#include "runtime/backend/cuda/green_context.h"
#include "runtime/model.h"

namespace {

void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "zbpp_gpu_gemm_bench: %s: %s\n", what, cudaGetErrorString(rc));
    std::exit(1);
  }
}

// n bf16 values uniform in [-1, 1), made on the host from `seed` and copied over.
void fill_random(__nv_bfloat16* device, size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<__nv_bfloat16> host(n);
  for (auto& v : host) v = __float2bfloat16(uniform(rng));
  check(cudaMemcpy(device, host.data(), n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice),
        "uploading random operands");
}

// Dense bf16 peaks from the datasheets (SXM parts); --peak overrides.
double datasheet_peak(const std::string& name) {
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos) return 989.4;
  if (name.find("A100") != std::string::npos) return 312.0;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "tiny";
  int parts = 1, iters = 20;
  double peak = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--model") model_name = argv[i + 1];
    else if (a == "--parts") parts = std::atoi(argv[i + 1]);
    else if (a == "--iters") iters = std::atoi(argv[i + 1]);
    else if (a == "--peak") peak = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: zbpp_gpu_gemm_bench [--model tiny|file.json] [--parts P] [--iters N] [--peak TFLOPS]\n");
      return 2;
    }
  }
  std::string why;
  auto model = zbpp::load_gpt_config(model_name, &why);
  if (!model) {
    std::fprintf(stderr, "zbpp_gpu_gemm_bench: %s\n", why.c_str());
    return 1;
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::fprintf(stderr, "zbpp_gpu_gemm_bench: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  if (peak < 0) peak = datasheet_peak(prop.name);
  std::unique_ptr<zbpp::GreenPartitions> green;
  cudaStream_t stream = nullptr;
  int sms = prop.multiProcessorCount;
  if (parts > 1) {
    green = zbpp::GreenPartitions::create(0, parts, &why);
    if (!green) {
      std::fprintf(stderr, "zbpp_gpu_gemm_bench: no green contexts (%s)\n", why.c_str());
      return 1;
    }
    green->enter(0);
    stream = green->stream(0);
    sms = green->sm_count(0);
  } else {
    check(cudaStreamCreate(&stream), "cudaStreamCreate");
  }
  const int T = model->tokens(), C = model->channels, V = model->vocab;
  struct Layer {
    const char* name;
    int K, N;
  };
  const Layer layers[] = {{"qkv", C, 3 * C}, {"attproj", C, C}, {"fc", C, 4 * C}, {"fcproj", 4 * C, C}, {"lm head", C, V}};
  size_t max_kn = 0;
  for (const Layer& l : layers) max_kn = std::max(max_kn, static_cast<size_t>(l.K) * l.N);
  size_t max_t = static_cast<size_t>(T) * std::max(4 * C, V);
  __nv_bfloat16 *x, *w, *y, *dy, *dx;
  float* dw;
  check(cudaMalloc(&x, max_t * 2), "cudaMalloc");
  check(cudaMalloc(&dx, max_t * 2), "cudaMalloc");
  check(cudaMalloc(&y, max_t * 2), "cudaMalloc");
  check(cudaMalloc(&dy, max_t * 2), "cudaMalloc");
  check(cudaMalloc(&w, max_kn * 2), "cudaMalloc");
  check(cudaMalloc(&dw, max_kn * 4), "cudaMalloc");
  // Random operands: zeros let tensor cores toggle fewer bits and flatter the throughput.
  fill_random(x, max_t, 1);
  fill_random(dy, max_t, 2);
  fill_random(w, max_kn, 3);
  check(cudaMemset(dw, 0, max_kn * 4), "cudaMemset");  // the accumulator W adds into
  zbpp::cuda::GemmLt gemm(parts > 1 ? sms : 0);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");

  std::printf("GPU: %s, %d of %d SMs (%s), tokens %d, channels %d, vocab %d; peak %.1f TFLOP/s dense bf16 for the whole GPU%s\n\n",
              prop.name, sms, prop.multiProcessorCount, parts > 1 ? green->describe().c_str() : "whole GPU", T, C, V, peak,
              peak > 0 ? " (datasheet)" : " (unknown: pass --peak)");
  std::printf("| layer | call | T x K x N | ms | TFLOP/s | %% of peak | %% of the partition's share |\n|---|---|---|---:|---:|---:|---:|\n");
  for (const Layer& l : layers) {
    for (int call = 0; call < 3; ++call) {
      auto run = [&] {
        try {
          if (call == 0) gemm.forward(y, x, w, nullptr, T, l.K, l.N, stream, l.name);
          if (call == 1) gemm.backward_input(dx, dy, w, T, l.K, l.N, stream, l.name);
          if (call == 2) gemm.backward_weight(dw, dy, x, T, l.K, l.N, stream, l.name);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "zbpp_gpu_gemm_bench: %s\n", e.what());
          std::exit(1);
        }
      };
      for (int i = 0; i < 3; ++i) run();  // warm-up, algorithm choice
      check(cudaEventRecord(start, stream), "cudaEventRecord");
      for (int i = 0; i < iters; ++i) run();
      check(cudaEventRecord(stop, stream), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      ms /= iters;
      double tflops = 2.0 * T * l.K * l.N / (ms * 1e-3) / 1e12;
      double share = peak * sms / prop.multiProcessorCount;
      const char* names[] = {"F (Y = X W^T)", "B (dX = dY W)", "W (dW += dY^T X)"};
      std::printf("| %s | %s | %d x %d x %d | %.3f | %.1f | %.1f | %.1f |\n", l.name, names[call], T, l.K, l.N, ms, tflops,
                  peak > 0 ? 100 * tflops / peak : 0.0, peak > 0 ? 100 * tflops / share : 0.0);
    }
  }
  return 0;
}
