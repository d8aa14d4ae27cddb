// In-process transport: p ranks as p threads sharing one hub of message queues. For tests and for
// running a schedule without mpirun (zbrun --local).
#pragma once

#include <memory>

#include "runtime/transport.h"

namespace zbpp {

class LocalHub;

/// One hub per run; transports for ranks 0..p-1 share it.
std::shared_ptr<LocalHub> make_local_hub(int ranks);
std::unique_ptr<Transport> make_local_transport(std::shared_ptr<LocalHub> hub, int rank);

}  // namespace zbpp
