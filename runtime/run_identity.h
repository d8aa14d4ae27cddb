// What makes two runs the same training run (issue 34): the schedule, the model, its layer split,
// the seed, the data and the optimizer settings. The checkpoint manifest (checkpoint_owner.h)
// records it so a resume must match it; the ranks of one job compare theirs at start-up
// (rank_run.cpp), so ranks started with different flags under an MPMD mpirun refuse to train.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/data.h"
#include "runtime/model.h"
#include "runtime/optimizer.h"

namespace zbpp {

/// A run's identity: two runs whose identities match train the same weights.
struct RunIdentity {
  std::uint64_t schedule_hash = 0;  ///< of the schedule file's text
  GptConfig model;                  ///< its name and dimensions (its split is `split`)
  std::vector<int> split;           ///< blocks per virtual stage, as the run uses them
  std::uint64_t seed = 0;
  std::string data;                 ///< "synthetic" or the data file's path as given
  std::uint64_t data_bytes = 0, data_hash = 0;  ///< the data file's size and FNV-1a (0 for synthetic)
  AdamWConfig adamw;
};
/// The identity of a run of `model` (with its split over `virtual_stages`) on `data`.
RunIdentity run_identity(std::uint64_t schedule_hash, const GptConfig& model, int virtual_stages, std::uint64_t seed,
                         const DataSource& data, const AdamWConfig& adamw);

/// The identity as JSON, one key per field of identity_fields() (the manifest's body).
nlohmann::json identity_json(const RunIdentity& run);

/// One field of the identity: how two runs' values compare, how one reads in a message (beside
/// the other's, so a message can show only what differs), and what to keep to make them agree.
struct IdentityField {
  const char* key;
  std::function<bool(const nlohmann::json&, const nlohmann::json&)> same;
  std::function<std::string(const nlohmann::json& value, const nlohmann::json& other)> text;
  const char* fix;
};
/// Every field, in the order messages name them.
const std::vector<IdentityField>& identity_fields();

/// Where the ranks' identities (identity_json(...).dump() of rank 0, 1, ...) differ from rank
/// 0's: "" when they agree, else for each field that differs the first rank that differs and both
/// values, and that every rank must run the same. Throws json exceptions for a malformed text.
std::string ranks_disagree(const std::vector<std::string>& identities);

}  // namespace zbpp
