// Which run a checkpoint directory belongs to (issue 34): DIR/run.json names the run whose
// checkpoints DIR holds (schedule, model, layer split, seed, data, optimizer), so a fresh run cannot
// overwrite another run's checkpoints and a --resume that changed any of them is refused, naming it.
// Also the clean-up of temporary files that interrupted checkpoint writes left behind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/data.h"
#include "runtime/model.h"
#include "runtime/optimizer.h"

namespace zbpp {

/// What makes two runs' checkpoints interchangeable: a resume must match every field.
struct CheckpointRun {
  std::uint64_t schedule_hash = 0;  ///< of the schedule file's text
  GptConfig model;                  ///< its name and dimensions (its split is `split`)
  std::vector<int> split;           ///< blocks per virtual stage, as the run uses them
  std::uint64_t seed = 0;
  std::string data;                 ///< "synthetic" or the data file's path as given
  std::uint64_t data_bytes = 0, data_hash = 0;  ///< the data file's size and FNV-1a (0 for synthetic)
  AdamWConfig adamw;
};
/// The identity of a run of `model` (with its split over `virtual_stages`) on `data`.
CheckpointRun checkpoint_run(std::uint64_t schedule_hash, const GptConfig& model, int virtual_stages,
                             std::uint64_t seed, const DataSource& data, const AdamWConfig& adamw);

/// The manifest's name in a checkpoint directory.
constexpr const char* kCheckpointManifest = "run.json";

/// Whether this run may use `dir` (rank 0, holding its lock, before anything is written): "" if so,
/// else why not and what to do. A fresh run may not overwrite checkpoints (its own run's or
/// another's, or ones with no manifest); a resume must match the manifest field by field.
std::string check_checkpoint_owner(const std::string& dir, const CheckpointRun& run, bool resume);

/// Writes DIR/run.json atomically; false with *err naming the file.
bool write_checkpoint_manifest(const std::string& dir, const CheckpointRun& run, std::string* err);

/// Removes what interrupted writes of rank `rank`'s checkpoints left in `dir` (the writer's hidden
/// temporary files; rank 0 also the manifest's). Only safe while holding the rank's lock. The count.
int remove_checkpoint_temporaries(const std::string& dir, int rank);

}  // namespace zbpp
