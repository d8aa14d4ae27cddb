// zbrun --dump-weights DIR: every rank writes its tensors as DIR/tensor<id>.f32 (raw little-endian
// floats, ids as model.h's global_tensor_id_*), rank 0 the manifest DIR/weights.json naming each id,
// its tensor and shape. A directory is a dump's own: empty, new, or holding only an earlier dump's
// files, which rank 0 removes before the run so no stale tensor stays beside the new ones.
#pragma once

#include <string>

#include "runtime/compute.h"
#include "runtime/model.h"

namespace zbpp {

/// The manifest's name in a dump directory.
inline constexpr const char* kWeightsManifest = "weights.json";

/// Whether `dir` may receive a dump (touches nothing): "" when it is new, empty or an earlier
/// dump's, else why not, naming a file that is not a dump's.
std::string check_weights_dir(const std::string& dir);
/// Removes an earlier dump's files from `dir` (its tensors and manifest); false with *why.
bool clear_weights_dir(const std::string& dir, std::string* why);
/// Writes this rank's tensors into `dir` (created when missing); false with *why.
bool write_weights(const std::string& dir, const Compute& compute, std::string* why);
/// Writes the manifest of a dump of `model` after `steps` steps; false with *why.
bool write_weights_manifest(const std::string& dir, const GptConfig& model, int steps, std::string* why);

}  // namespace zbpp
