// One rank's run of the Trainer (rank_run.cpp), given its backend and transport by a launch mode
// (trainer.cpp): the runtime's internal interface between the two.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "runtime/compute.h"
#include "runtime/trainer.h"
#include "runtime/transport.h"

namespace zbpp {

// What one rank runs on: its compute backend, and how an activation-sized payload for the T_comm
// ping-pong is made and, once it has come back, released (device memory on the GPU backend).
struct RankBackend {
  std::function<std::unique_ptr<Compute>(const std::vector<int>& virtual_stages)> make_compute;
  std::function<Payload()> payload;
  std::function<void(const Payload&)> release = [](const Payload&) {};
};

// One rank's whole run (RankRun): a failure is the result's error, and the other ranks are told.
RankResult run_rank(const TrainInputs& in, const RunOptions& o, const RankBackend& backend, Transport* transport,
                    RunObserver& observer);

}  // namespace zbpp
