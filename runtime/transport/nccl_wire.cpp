// The NCCL transport's header and maxCTAs agreement (see transport/nccl_wire.h).
#include "runtime/transport/nccl_wire.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace zbpp::nccl_wire {

namespace {
// A NaN bit pattern no activation or gradient is likely to start with, so a wrong message (a CPU
// rank's activation, say) is refused, not misread.
constexpr std::uint32_t kTag = 0x7fc0b17eu;

std::uint32_t word(const float* f) {
  std::uint32_t w;
  std::memcpy(&w, f, sizeof w);
  return w;
}
}  // namespace

std::vector<float> encode_header(std::uint64_t bytes) {
  const std::uint32_t words[kHeaderFloats] = {kTag, static_cast<std::uint32_t>(bytes & 0xffffffffu),
                                              static_cast<std::uint32_t>(bytes >> 32)};
  std::vector<float> out(kHeaderFloats);
  std::memcpy(out.data(), words, sizeof words);
  return out;
}

std::uint64_t decode_header(const std::vector<float>& header, const std::string& what) {
  if (header.size() != static_cast<size_t>(kHeaderFloats) || word(&header[0]) != kTag)
    throw std::runtime_error("malformed NCCL transfer header for " + what + " (" + std::to_string(header.size()) +
                             " floats; expected " + std::to_string(kHeaderFloats) + " with the header's tag)");
  return static_cast<std::uint64_t>(word(&header[1])) | static_cast<std::uint64_t>(word(&header[2])) << 32;
}

int propose_max_ctas(int sms, int channels) { return std::max(1, std::min(16, sms / 2 / std::max(1, channels))); }

int agree_max_ctas(const std::vector<int>& proposals) {
  if (proposals.empty()) throw std::invalid_argument("agree_max_ctas: no proposals");
  return *std::min_element(proposals.begin(), proposals.end());
}

}  // namespace zbpp::nccl_wire
