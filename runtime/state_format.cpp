#include "runtime/state_format.h"

#include <cstring>

namespace zbpp {

StateWriter::StateWriter(std::string* bytes, std::int64_t step, std::int64_t tensors) : bytes_(bytes) {
  const std::int64_t header[2] = {step, tensors};
  put(header, sizeof header);
}

void StateWriter::tensor(std::int64_t id, std::int64_t n) {
  const std::int64_t shape[2] = {id, n};
  put(shape, sizeof shape);
}

void StateWriter::floats(const float* data, std::int64_t n) { put(data, static_cast<size_t>(n) * sizeof(float)); }

bool StateReader::header(std::int64_t tensors, std::int64_t* step, std::int64_t* count, std::string* err) {
  std::int64_t header[2];
  if (bytes_.size() < sizeof header) {
    *err = "too short for a checkpoint";
    return false;
  }
  std::memcpy(header, bytes_.data(), sizeof header);
  at_ = sizeof header;
  if (tensors >= 0 && header[1] != tensors) {
    *err = "holds " + std::to_string(header[1]) + " tensors, this rank has " + std::to_string(tensors);
    return false;
  }
  *step = header[0];
  *count = header[1];
  return true;
}

bool StateReader::tensor(std::int64_t* id, std::int64_t* n, const char** data, std::string* err) {
  std::int64_t shape[2];
  const bool expected = *id >= 0 && *n >= 0;
  if (bytes_.size() - at_ < sizeof shape || (expected && (std::memcpy(shape, bytes_.data() + at_, sizeof shape),
                                                          shape[0] != *id || shape[1] != *n))) {
    *err = expected ? "tensor " + std::to_string(*id) + " is missing or has another size (another model or split?)"
                    : "ends inside a tensor's header";
    return false;
  }
  std::memcpy(shape, bytes_.data() + at_, sizeof shape);
  at_ += sizeof shape;
  const size_t floats = 3 * static_cast<size_t>(shape[1]) * sizeof(float);
  if (shape[1] < 0 || bytes_.size() - at_ < floats) {
    *err = "ends inside tensor " + std::to_string(shape[0]);
    return false;
  }
  *id = shape[0];
  *n = shape[1];
  *data = bytes_.data() + at_;
  at_ += floats;
  return true;
}

bool StateReader::finish(std::string* err) const {
  if (at_ == bytes_.size()) return true;
  *err = std::to_string(bytes_.size() - at_) + " bytes left over";
  return false;
}

}  // namespace zbpp
