// Checkpoint files: one per rank and step, DIR/step<N>.rank<R>.ckpt, holding the backend's state
// after N steps. Written atomically (write_file_replacing: a temporary file, fsync, rename, fsync
// of the directory), so a crash leaves either the old checkpoint or the new one, never half of
// one; the last two of each rank are kept, so every rank still has the step the slowest one reached.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace zbpp {

/// FNV-1a of a text (the schedule file: ranks check they replay the same one; the data file).
std::uint64_t text_hash(std::string_view text);

/// Writes rank `rank`'s state after `step` steps; false with *err (naming the file) on failure.
bool write_checkpoint(const std::string& dir, int rank, int step, std::uint64_t schedule_hash, const std::string& state,
                      std::string* err);
/// Whether `name` (a file name, no directory) is a checkpoint's, step<N>.rank<R>.ckpt: then its step and rank.
bool parse_checkpoint_name(const std::string& name, int* step, int* rank);
/// Steps this rank has checkpoints of, ascending.
std::vector<int> checkpoint_steps(const std::string& dir, int rank);
/// Reads one back, checking its header, its schedule hash and its checksum; false with *err.
bool read_checkpoint(const std::string& dir, int rank, int step, std::uint64_t schedule_hash, std::string* state,
                     std::string* err);

/// This rank's exclusive hold on a checkpoint directory for a whole run (flock on DIR/.rank<R>.lock,
/// which records "pid P on host H"), so two runs given one directory cannot mix their files.
class CheckpointLock {
 public:
  explicit CheckpointLock(int fd) : fd_(fd) {}
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;
  ~CheckpointLock();

 private:
  int fd_;
};
/// Takes it; nullptr with *err naming the holder when another run has it.
std::unique_ptr<CheckpointLock> lock_checkpoints(const std::string& dir, int rank, std::string* err);

}  // namespace zbpp
