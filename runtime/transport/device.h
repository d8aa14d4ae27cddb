// Transport for --single-gpu: every rank is a thread of this process on the same GPU. Messages go
// through the in-process hub (transport/local.h) as device buffers (runtime/payload.h); the bytes
// are copied device to device on the sender's copy stream, so sender and receiver never share a
// buffer.
#pragma once

#include <memory>

#include "runtime/transport.h"
#include "runtime/transport/local.h"

namespace zbpp {

/// Make it in the rank's own thread, after the thread has selected its device or green context.
std::unique_ptr<Transport> make_device_transport(std::shared_ptr<LocalHub> hub, int rank);

}  // namespace zbpp
