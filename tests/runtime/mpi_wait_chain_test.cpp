// Under mpirun -n 3: a rank that waits outside recv (as the NCCL transport waits for a transfer
// whose header has arrived) must still answer who-waits-on-whom queries through
// Transport::answer_queries, or the rank that times out blames it instead of the one really stuck.
// Rank 2 stops (it never enters the transport); rank 1 waits on rank 2 outside recv; rank 0's recv
// from rank 1 times out and names the stuck rank. Mode "answers": rank 1 calls answer_queries(2)
// while it waits, so rank 2 is blamed. Mode "silent": it does not, so rank 1 is (the control:
// the check above can tell the two apart). Exit 0 when rank 0's message is the expected one. First,
// rank 0 checks that the MPI transport refuses a device buffer.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "runtime/transport/mpi.h"

using namespace zbpp;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 3 || (mode != "answers" && mode != "silent")) {
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -n 3 mpi_wait_chain_test answers|silent\n");
    MPI_Finalize();
    return 2;
  }
  int failed = 0;
  {
    auto t = make_mpi_transport();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    if (rank == 0) {
      // A device buffer is refused before anything goes on the wire (it moves over NCCL).
      std::string err;
      const bool sent = t->send(1, kActivation, Message{0, 1, Payload::of_device(7)}, &err);
      const std::string refused = "the MPI transport carries host floats, not a device buffer";
      if (sent || err.find(refused) == std::string::npos) {
        std::printf("FAILED: a device buffer sent over MPI: %s\n", sent ? "sent" : err.c_str());
        failed = 1;
      }
      Message msg;
      err.clear();
      const bool got = t->recv(1, kActivation, &msg, 1.0, &err);
      const std::string out_of_reach = " is stuck or out of reach (hung, or its host or the link to it is down)";
      const std::string expected = mode == "answers" ? "rank 1 waits on rank 2, which does not answer: rank 2" + out_of_reach
                                                     : "rank 1 does not answer: rank 1" + out_of_reach;
      failed = failed || got || err.find(expected) == std::string::npos;
      std::printf("%s: rank 0: %s\n%s\n", mode.c_str(), err.c_str(),
                  failed ? ("FAILED: expected \"" + expected + "\"").c_str() : "ok");
    } else {
      // Rank 1 waits on rank 2 outside recv; rank 2 is stuck. Neither sends anything.
      while (std::chrono::steady_clock::now() < until) {
        if (rank == 1 && mode == "answers") t->answer_queries(2);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return failed;
}
