// The parts of the NCCL transport (transport/nccl.h) that need neither a GPU nor NCCL, so that
// every build tests them (tests/runtime/nccl_wire_test.cpp): the header that announces a transfer,
// and the one maxCTAs every rank's communicators are configured with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zbpp::nccl_wire {

/// Floats of a transfer header (sent over MPI before the payload goes by NCCL): a tag, then the
/// payload's byte count as two 32-bit halves, so a payload of 4 GiB or more keeps its size.
constexpr int kHeaderFloats = 3;

/// The header announcing a payload of `bytes`.
std::vector<float> encode_header(std::uint64_t bytes);
/// The byte count `header` announces; throws, naming `what` (e.g. "activations rank 0 -> 1"), if
/// the floats are not a header.
std::uint64_t decode_header(const std::vector<float>& header, const std::string& what);

/// The maxCTAs one rank proposes: its `channels` communicators' kernels may all spin at once, so
/// together they take at most half of its `sms` SMs (1 to 16 each).
int propose_max_ctas(int sms, int channels);
/// The maxCTAs every rank configures: the least of all ranks' proposals (index = rank), which
/// keeps each rank within its own bound. Every rank computes it from the same gathered list.
int agree_max_ctas(const std::vector<int>& proposals);

}  // namespace zbpp::nccl_wire
