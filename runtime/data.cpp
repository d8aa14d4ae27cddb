// Training data (see data.h).
#include "runtime/data.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/spelling.h"

namespace zbpp {

std::optional<DataSource> DataSource::open(const std::string& spec, std::string* err) {
  DataSource d;
  d.name_ = spec;
  if (spec == "synthetic") return d;
  std::error_code ec;
  if (std::filesystem::exists(spec, ec) && !std::filesystem::is_regular_file(spec, ec)) {
    *err = spec + ": not a regular file";
    return std::nullopt;
  }
  errno = 0;
  std::ifstream in(spec, std::ios::binary);
  if (!in) {
    const int why = errno;  // set by the open(2) under the stream
    *err = spec + ": cannot open data file" + (why ? std::string(": ") + std::strerror(why) : "") +
           (closest_name(spec, {"synthetic"}).empty() ? " (give a text file, or --data synthetic)"
                                                      : "; did you mean --data synthetic?");
    return std::nullopt;
  }
  d.bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (d.bytes_.size() < 64) {
    *err = spec + ": data file too short (" + std::to_string(d.bytes_.size()) + " bytes)";
    return std::nullopt;
  }
  return d;
}

std::string DataSource::check(const GptConfig& c) const {
  if (!bytes_.empty() && bytes_.size() < static_cast<size_t>(c.seq) + 2)
    return name_ + ": " + std::to_string(bytes_.size()) + " bytes, but a sequence of the model needs seq + 2 = " +
           std::to_string(c.seq + 2);
  // Each byte is a token: one the vocabulary lacks would be folded into another (step_batches'
  // modulo) and the model would train on other text than the file's.
  if (c.vocab >= 256) return "";
  size_t first = bytes_.size(), more = 0;
  for (size_t i = 0; i < bytes_.size(); ++i) {
    if (bytes_[i] < c.vocab) continue;
    if (first == bytes_.size())
      first = i;
    else
      ++more;
  }
  if (first == bytes_.size()) return "";
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02x", bytes_[first]);
  const std::string vocab = std::to_string(c.vocab);
  return name_ + ": byte " + byte + " at offset " + std::to_string(first) +
         (more ? " (and " + std::to_string(more) + " more byte" + (more == 1 ? "" : "s") + " of " + vocab + " or above)" : "") +
         " is no token of model " + c.name + " (vocab " + vocab + "): a text file's bytes are its tokens; give a model "
         "with vocab 256, or data whose bytes are all below " + vocab;
}

std::vector<std::vector<int>> DataSource::step_batches(const GptConfig& c, int step, int microbatches) const {
  std::vector<std::vector<int>> out(microbatches);
  const int row = c.seq + 1;
  for (int mb = 0; mb < microbatches; ++mb) {
    for (int b = 0; b < c.batch; ++b) {
      long index = (static_cast<long>(step) * microbatches + mb) * c.batch + b;
      for (int t = 0; t < row; ++t) {
        int token;
        if (bytes_.empty()) {
          // A learnable pattern: rows count through 16 letters with a row-specific start and stride,
          // so the loss falls quickly (first the alphabet, then the strides) from ln(vocab).
          token = static_cast<int>('a' + (index % 16 + t * (1 + index % 3)) % 16) % c.vocab;
        } else {
          size_t span = bytes_.size() - row;
          size_t start = static_cast<size_t>(index * c.seq) % span;
          token = bytes_[start + t] % c.vocab;
        }
        out[mb].push_back(token);
      }
    }
  }
  return out;
}

}  // namespace zbpp
