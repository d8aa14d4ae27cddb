// Which run a checkpoint directory belongs to (issue 34): DIR/run.json names the run whose
// checkpoints DIR holds (schedule, model, layer split, seed, data, optimizer), so a fresh run cannot
// overwrite another run's checkpoints and a --resume that changed any of them is refused, naming it.
// Also the clean-up of temporary files that interrupted checkpoint writes left behind.
#pragma once

#include <string>
#include <vector>

#include "runtime/run_identity.h"

namespace zbpp {

/// The manifest's name in a checkpoint directory.
constexpr const char* kCheckpointManifest = "run.json";

/// Whether this run may use `dir` (rank 0, holding its lock, before anything is written): "" if so,
/// else why not and what to do. A fresh run may not overwrite checkpoints (its own run's or
/// another's, or ones with no manifest); a resume must match the manifest field by field.
std::string check_checkpoint_owner(const std::string& dir, const RunIdentity& run, bool resume);

/// Writes DIR/run.json atomically; false with *err naming the file.
bool write_checkpoint_manifest(const std::string& dir, const RunIdentity& run, std::string* err);

/// Removes what interrupted writes of rank `rank`'s checkpoints left in `dir` (the writer's hidden
/// temporary files; rank 0 also the manifest's). Only safe while holding the rank's lock. The count.
int remove_checkpoint_temporaries(const std::string& dir, int rank);

}  // namespace zbpp
