// Runtime faults in-process (zbrun --local): a rank that hangs and a truncated message end the run
// within the timeout, every waiting rank naming the rank that stopped; and the words that name it.
// The same faults under mpirun are in mpi_test.sh.
#include <chrono>

#include <catch2/catch.hpp>

#include "core/schedule_json.h"
#include "runtime/backend/cpu/compute_cpu.h"
#include "runtime/transport.h"
#include "tests/runtime/cli_helpers.h"

using namespace zbpp;
using namespace zbpp::test;

namespace {

// The index of `rank`'s first op of type `type` in a schedule file.
int first_op(const std::string& path, int rank, OpType type) {
  std::vector<Diag> diags;
  auto file = load_schedule_file(path, &diags);
  REQUIRE(file);
  const auto& ops = file->schedule.stages[rank];
  for (int i = 0; i < static_cast<int>(ops.size()); ++i)
    if (ops[i].type == type) return i;
  FAIL("no such op");
  return -1;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("blame_text names the rank at the end of the chain of waits") {
  CHECK(blame_text({0}, WaitEnd::kNotWaiting) == "rank 0 waits for no message: rank 0 is stuck");
  CHECK(blame_text({2, 1, 0}, WaitEnd::kNotWaiting) ==
        "rank 2 waits on rank 1, rank 1 waits on rank 0, which waits for no message: rank 0 is stuck");
  CHECK(blame_text({1, 0}, WaitEnd::kNoAnswer) ==
        "rank 1 waits on rank 0, which does not answer: rank 0 is stuck or out of reach (hung, or its host or the "
        "link to it is down)");
  CHECK(blame_text({3, 1, 2, 1}, WaitEnd::kCycle) ==
        "rank 3 waits on rank 1, rank 1 waits on rank 2, rank 2 waits on rank 1: ranks 1, 2 wait on each other (deadlock)");
  // The asking rank closes the loop: everybody in the chain waits on the next.
  CHECK(blame_text({2, 0}, WaitEnd::kCycle) == "rank 2 waits on rank 0: ranks 0, 2 wait on each other (deadlock)");
  CHECK(blame_text({1}, WaitEnd::kAllReduce) == "rank 1 waits in the all-reduce");
}

TEST_CASE("zbrun: a rank that hangs stops the run within the timeout, and the waiting ranks name it") {
  std::string s = plan("hang", "zb-h1", 4, 8);
  for (const char* rank : {"0", "2"}) {
    auto start = std::chrono::steady_clock::now();
    Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "3", "--fail-at", std::string(rank) + ":6@1", "--fault",
                               "hang", "--timeout", "2"});
    double seconds = seconds_since(start);
    INFO(r.err);
    CHECK(r.code == 1);
    // The first rank to time out names the hung one, whichever neighbour it waited on.
    CHECK(r.err.find("nothing after 2 s; ") != std::string::npos);
    CHECK(r.err.find(std::string("rank ") + rank + " is stuck\n") != std::string::npos);
    // The others were stopped, not timed out: each relays the one finding, naming the rank that made it.
    CHECK(occurrences(r.err, "nothing after 2 s") == 1 + occurrences(r.err, "stopped: rank "));
    CHECK(occurrences(r.err, "stopped: rank ") == 2);
    CHECK(r.err.find(std::string("rank ") + rank + ", op 6 (") != std::string::npos);  // the hung rank ends too
    CHECK(seconds < 2 + 3);
  }
}

TEST_CASE("zbrun: a truncated message is refused by its receiver, naming both ranks") {
  std::string s = plan("trunc", "zb-h1", 4, 8);
  int send = first_op(s, 1, OpType::SEND_F);
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--steps", "2", "--fail-at", "1:" + std::to_string(send), "--fault",
                             "truncate", "--timeout", "10"});
  INFO(r.err);
  CHECK(r.code == 1);
  int recv = first_op(s, 2, OpType::RECV_F);
  CHECK(r.err.find("zbrun: step 0, rank 2, op " + std::to_string(recv) + " (RECV_F0 from rank 1): received ") !=
        std::string::npos);
  CHECK(r.err.find("(a truncated message)\n") != std::string::npos);

  // The optimizer state of post-validation travels the same way.
  std::string pv = plan("trunc_pv", "zb-h1", 3, 4, {"--optimizer", "post-validation"});
  send = first_op(pv, 0, OpType::SEND_STATE);
  r = call(zbrun_local, {"zbrun", pv, "--local", "--steps", "2", "--fail-at", "0:" + std::to_string(send), "--fault",
                         "truncate", "--timeout", "10"});
  INFO(r.err);
  CHECK(r.code == 1);
  CHECK(r.err.find("rank 1, op " + std::to_string(first_op(pv, 1, OpType::RECV_STATE)) +
                   " (RECV_STATE from rank 0): optimizer state of ") != std::string::npos);
  CHECK(r.err.find("(a truncated message)\n") != std::string::npos);
}

TEST_CASE("zbrun: --fault is checked before anything runs") {
  std::string s = plan("faultargs", "zb-h1", 2, 4);
  Run r = call(zbrun_local, {"zbrun", s, "--local", "--fault", "hang"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbrun: --fault hang needs --fail-at RANK:OP\nrun 'zbrun --help' for usage\n");
  r = call(zbrun_local, {"zbrun", s, "--local", "--fail-at", "0:1", "--fault", "truncate", "--backend", "cuda"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbrun: --fault truncate: only with --backend cpu (CUDA messages are device buffers)\n"
                 "run 'zbrun --help' for usage\n");
  r = call(zbrun_local, {"zbrun", s, "--local", "--fail-at", "0:0", "--fault", "truncate"});
  CHECK(r.code == 1);
  CHECK(r.err == "zbrun: --fault truncate: op 0 of rank 0 is F0, not a send\n");
  r = call(zbrun_local, {"zbrun", s, "--local", "--fail-at", "0:0", "--fault", "explode"});
  CHECK(r.code == 2);
  CHECK(r.err == "zbrun: --fault: unknown fault 'explode' (known: error, hang, truncate, device)\nrun 'zbrun --help' for usage\n");
  r = call(zbrun_local, {"zbrun", s, "--local", "--pace", "-1"});
  CHECK(r.code == 2);
  // Paced, a receive may wait a whole paced iteration: a --timeout below it would blame a healthy rank.
  r = call(zbrun_local, {"zbrun", s, "--local", "--pace", "100", "--timeout", "5"});
  CHECK(r.code == 1);
  CHECK(r.err.find("zbrun: --pace 100 makes one iteration's compute last ") == 0);
  CHECK(r.err.find("give --timeout above it (e.g. --timeout ") != std::string::npos);
  r = call(zbrun_local, {"zbrun", s, "--local", "--check", "--pace", "0.001", "--timeout", "5"});
  CHECK(r.code == 0);
}

TEST_CASE("cpu backend: an op without an activation slot, or reading a slot another microbatch holds, is refused") {
  GptConfig tiny;
  auto compute = make_cpu_compute(tiny, {0}, 2, 2, 1, AdamWConfig{});
  const size_t n = static_cast<size_t>(tiny.tokens()) * tiny.channels;
  Payload out, din, grad = Payload::of_host(std::vector<float>(n));
  std::vector<std::vector<int>> data(2, std::vector<int>(static_cast<size_t>(tiny.tokens() + tiny.batch), 1));
  compute->set_step_data(&data);
  CHECK_THROWS_WITH(compute->forward(0, 0, -1, nullptr, &out), "op has no activation slot (is the schedule lowered?)");
  compute->forward(0, 0, 0, nullptr, &out);
  CHECK(out.host.size() == n);
  CHECK(compute->refuses(out).empty());
  CHECK_THROWS_WITH(compute->backward_input(0, 1, 0, &grad, &din),
                    "slot 0 holds microbatch 0, not 1 (slots reused before W?)");
}

TEST_CASE("cpu backend: a device buffer or a short activation is refused, naming what arrived") {
  GptConfig tiny;
  auto second = make_cpu_compute(tiny, {1}, 2, 2, 1, AdamWConfig{});
  const size_t n = static_cast<size_t>(tiny.tokens()) * tiny.channels;
  std::vector<std::vector<int>> data(2, std::vector<int>(static_cast<size_t>(tiny.tokens() + tiny.batch), 1));
  second->set_step_data(&data);
  const Payload device = Payload::of_device(7), short_one = Payload::of_host(std::vector<float>(n / 2));
  CHECK(second->refuses(device) == "a device buffer, where the CPU backend takes host floats");
  CHECK(second->refuses(short_one) ==
        std::to_string(n / 2) + " values, expected " + std::to_string(n) + " (a truncated message)");
  CHECK_THROWS_WITH(second->forward(0, 0, 0, &device, nullptr),
                    "input activation: a device buffer, where the CPU backend takes host floats");
  CHECK_THROWS_WITH(second->forward(0, 0, 0, nullptr, nullptr), "input activation: none given");
}
