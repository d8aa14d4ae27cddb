// The bytes of one rank's training state, written once for every backend's save_state and read
// once for its load_state and for tools/step_dump (checkpoint.h wraps them in a file): int64 step
// count, int64 tensor count, then per tensor int64 id, int64 size n, and n floats each of its
// values, AdamW m and AdamW v, all in host byte order.
#pragma once

#include <cstdint>
#include <string>

namespace zbpp {

class StateWriter {
 public:
  StateWriter(std::string* bytes, std::int64_t step, std::int64_t tensors);
  /// Starts tensor `id` of `n` floats: then floats() three times, its values, m and v.
  void tensor(std::int64_t id, std::int64_t n);
  void floats(const float* data, std::int64_t n);

 private:
  void put(const void* data, size_t n) { bytes_->append(static_cast<const char*>(data), n); }
  std::string* bytes_;
};

/// Reads what StateWriter wrote; each false comes with *err saying what is wrong with the bytes.
class StateReader {
 public:
  explicit StateReader(const std::string& bytes) : bytes_(bytes) {}
  /// The header; `tensors` >= 0: the count the reader expects.
  bool header(std::int64_t tensors, std::int64_t* step, std::int64_t* count, std::string* err);
  /// The next tensor. With *id, *n >= 0 on entry, it must be that tensor of that size. *data: its
  /// values, m and v, n floats each, as unaligned bytes inside the state (copy them out).
  bool tensor(std::int64_t* id, std::int64_t* n, const char** data, std::string* err);
  /// After the last tensor: false when bytes are left over.
  bool finish(std::string* err) const;

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace zbpp
