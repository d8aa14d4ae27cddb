// The parts of the CUDA backend that run without a GPU (built whenever CUDA compiles, so CI runs
// them): device buffers in payloads, and zbrun's --backend cuda refusing cleanly when no GPU is visible.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <vector>

#include "cli/zbplan_cli.h"
#include "cli/zbrun_cli.h"
#include "runtime/backend/cuda/compute_cuda.h"
#include "runtime/cuda/device_buffers.h"
#include "runtime/transport.h"

using namespace zbpp;

TEST_CASE("cuda: a device buffer's id survives the payloads and messages that carry it, and host floats are refused") {
  for (std::uint32_t id : {1u, 2u, 0x7fffffffu, 0xffffffffu}) {
    Message msg{3, 1, Payload::of_device(id)};
    Message copy = msg;  // what the interpreter's boxes and the local hub do
    CHECK(copy.data.on_device());
    CHECK(cuda::device_id(&copy.data, "an activation") == id);
  }
  const Payload activations = Payload::of_host(std::vector<float>(8, 0.5f));
  CHECK_THROWS_WITH(cuda::device_id(&activations, "input activation"),
                    "input activation: expected a device buffer, got 8 floats (is a CPU backend's activation on a "
                    "CUDA transport, or the reverse?)");
  CHECK_THROWS_WITH(cuda::device_id(nullptr, "output gradient"), "output gradient: expected a device buffer, got nothing");
  CHECK_THROWS_WITH(cuda::registry().take(123456789u), "device buffer 123456789 is unknown");
}

TEST_CASE("cuda: zbrun --backend cuda and --single-gpu refuse to start without a GPU") {
  std::string why;
  if (cuda_device_count(&why) > 0 || !why.empty()) return;  // tools/gpu_checks.sh covers the GPU side
  std::string sched = std::string(ZBPP_TEST_TMP) + "/cuda_host.json";
  std::vector<std::string> plan = {"zbplan", "plan", "--method", "zb-h1", "-p", "2", "-m", "2", "--tf", "1", "--tb", "1", "--tw", "1", "-o", sched};
  std::vector<const char*> pargv;
  for (auto& a : plan) pargv.push_back(a.c_str());
  std::ostringstream pout, perr;
  REQUIRE(run_zbplan(static_cast<int>(pargv.size()), pargv.data(), pout, perr) == 0);
  for (const char* mode : {"--single-gpu", "--backend=cuda"}) {
    std::vector<const char*> argv = {"zbrun", sched.c_str(), mode, "--local", "--steps", "1"};
    std::ostringstream out, err;
    CHECK(run_zbrun(static_cast<int>(argv.size()), argv.data(), out, err, false) == 1);
    CHECK(err.str() == "zbrun: --backend cuda: no GPU is visible to this process\n");
  }
}
