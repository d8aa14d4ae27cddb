// Deterministic training data: byte-level tokens from a text file, or a synthetic stream for tests.
// Every rank computes the same batches from (step, microbatch) alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/model.h"

namespace zbpp {

class DataSource {
 public:
  /// "synthetic", or a path to a text file (at least seq + 2 bytes).
  static std::optional<DataSource> open(const std::string& spec, std::string* err);
  /// The m microbatches of step `step`: each batch * (seq + 1) tokens (inputs plus the next token).
  std::vector<std::vector<int>> step_batches(const GptConfig& config, int step, int microbatches) const;
  const std::string& name() const { return name_; }
  /// The file's bytes; empty for synthetic data.
  const std::vector<unsigned char>& bytes() const { return bytes_; }
  /// Empty when the data can feed `config` (a text file needs at least seq + 2 bytes), else why not.
  std::string check(const GptConfig& config) const;

 private:
  std::string name_;
  std::vector<unsigned char> bytes_;  // empty for synthetic
};

}  // namespace zbpp
