// The NCCL transport's parts that need no GPU (runtime/transport/nccl_wire.h), in every build: the
// transfer header's byte count (64 bits: a payload of 4 GiB or more once lost its high bits on the
// wire, and the receiver then took fewer bytes than the sender sent) and the maxCTAs all ranks agree on.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/transport/nccl_wire.h"

using namespace zbpp;

TEST_CASE("nccl wire: a header keeps every byte count up to 64 bits, 4 GiB and above included") {
  const std::uint64_t gib = std::uint64_t{1} << 30;
  const std::vector<std::uint64_t> sizes = {0, 1, 0xffffffffu, 4 * gib, 4 * gib + 5, 6 * gib + 3, (gib << 10) + 12345,
                                            ~std::uint64_t{0}};
  for (std::uint64_t bytes : sizes) {
    std::vector<float> header = nccl_wire::encode_header(bytes);
    REQUIRE(header.size() == static_cast<size_t>(nccl_wire::kHeaderFloats));
    // The MPI transport moves a message's floats as bytes, and the interpreter copies vectors.
    std::vector<char> wire(header.size() * sizeof(float));
    std::memcpy(wire.data(), header.data(), wire.size());
    std::vector<float> received(header.size());
    std::memcpy(received.data(), wire.data(), wire.size());
    CHECK(nccl_wire::decode_header(received, "activations rank 0 -> 1") == bytes);
  }
}

TEST_CASE("nccl wire: what is not a header is refused, naming the channel") {
  std::vector<float> old_format(1);  // the former header: one float holding 32 bits of size
  std::uint32_t size = 1024;
  std::memcpy(old_format.data(), &size, sizeof size);
  CHECK_THROWS_WITH(nccl_wire::decode_header(old_format, "gradients rank 1 -> 0"),
                    "malformed NCCL transfer header for gradients rank 1 -> 0 "
                    "(1 floats; expected 3 with the header's tag)");
  std::vector<float> activations(3, 0.25f);  // host floats where a header should be
  CHECK_THROWS_WITH(nccl_wire::decode_header(activations, "activations rank 2 -> 3"),
                    "malformed NCCL transfer header for activations rank 2 -> 3 "
                    "(3 floats; expected 3 with the header's tag)");
}

TEST_CASE("nccl wire: every rank configures the same maxCTAs, within each rank's half of its SMs") {
  struct Case {
    std::vector<int> sms, channels, proposals;
    int agreed;
  };
  const std::vector<Case> cases = {
      // A 4-stage pipeline on four A100s (108 SMs): an end rank has 2 channels (activations and
      // gradients with its one neighbour), a middle one 4, so their own bounds differ.
      {{108, 108, 108, 108}, {2, 4, 4, 2}, {16, 13, 13, 16}, 13},
      // Rank 2 on a 66-SM partition, under a V schedule (every rank talks to both neighbours).
      {{132, 132, 66, 132}, {4, 8, 8, 4}, {16, 8, 4, 16}, 4},
  };
  for (const Case& c : cases) {
    std::vector<int> proposals;
    for (size_t r = 0; r < c.sms.size(); ++r) proposals.push_back(nccl_wire::propose_max_ctas(c.sms[r], c.channels[r]));
    CHECK(proposals == c.proposals);
    // Every rank gathers the same proposals and computes the same value from them.
    const int agreed = nccl_wire::agree_max_ctas(proposals);
    CHECK(agreed == c.agreed);
    CHECK(nccl_wire::agree_max_ctas(std::vector<int>(proposals.rbegin(), proposals.rend())) == agreed);
    for (size_t r = 0; r < c.sms.size(); ++r) {
      CAPTURE(r);
      CHECK(agreed * c.channels[r] <= c.sms[r] / 2);  // every rank's channels still fit in half its SMs
    }
  }
  // The bound's ends: at least one CTA, at most 16, whatever the counts.
  CHECK(nccl_wire::propose_max_ctas(8, 100) == 1);
  CHECK(nccl_wire::propose_max_ctas(0, 0) == 1);
  CHECK(nccl_wire::propose_max_ctas(1000, 1) == 16);
  CHECK_THROWS(nccl_wire::agree_max_ctas({}));
}
