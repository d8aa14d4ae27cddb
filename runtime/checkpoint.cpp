// Checkpoint files (see checkpoint.h). Layout: "ZBPPCKPT2\n", then as int64: step, schedule hash,
// rank, state size; the state; its FNV-1a as a trailing int64. (Format 1 had no rank: a file
// copied to another rank's name was only caught, vaguely, by the backend's tensor count.)
#include "runtime/checkpoint.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/output_file.h"

namespace zbpp {

namespace {
constexpr char kMagic[] = "ZBPPCKPT2\n";
constexpr size_t kMagicSize = sizeof kMagic - 1;

std::string path_of(const std::string& dir, int rank, int step) {
  return dir + "/step" + std::to_string(step) + ".rank" + std::to_string(rank) + ".ckpt";
}
}  // namespace

std::uint64_t text_hash(std::string_view text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

bool write_checkpoint(const std::string& dir, int rank, int step, std::uint64_t schedule_hash, const std::string& state,
                      std::string* err) {
  const std::string path = path_of(dir, rank, step);
  std::int64_t header[4] = {step, static_cast<std::int64_t>(schedule_hash), rank,
                            static_cast<std::int64_t>(state.size())};
  std::uint64_t sum = text_hash(state);
  std::string bytes(kMagic, kMagicSize);
  bytes.append(reinterpret_cast<const char*>(header), sizeof header);
  bytes += state;
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  std::string why;
  if (!write_file_replacing(path, bytes, &why)) {
    *err = "--checkpoint: cannot write " + why;
    return false;
  }
  // Keep this one and the one before.
  std::vector<int> steps = checkpoint_steps(dir, rank);
  for (size_t i = 0; i + 2 < steps.size(); ++i) std::remove(path_of(dir, rank, steps[i]).c_str());
  return true;
}

bool parse_checkpoint_name(const std::string& name, int* step, int* rank) {
  int s = -1, r = -1, end = 0;
  if (std::sscanf(name.c_str(), "step%d.rank%d.ckpt%n", &s, &r, &end) != 2 || end != static_cast<int>(name.size()) ||
      s < 0 || r < 0 || path_of("", r, s) != "/" + name)  // the canonical spelling only ("step+2", "step02": no)
    return false;
  *step = s;
  *rank = r;
  return true;
}

std::vector<int> checkpoint_steps(const std::string& dir, int rank) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    int step = -1, r = -1;
    if (parse_checkpoint_name(entry.path().filename().string(), &step, &r) && r == rank) out.push_back(step);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool read_checkpoint(const std::string& dir, int rank, int step, std::uint64_t schedule_hash, std::string* state,
                     std::string* err) {
  const std::string path = path_of(dir, rank, step);
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    *err = path + ": not a regular file (a directory?), where rank " + std::to_string(rank) + "'s checkpoint of step " +
           std::to_string(step) + " should be";
    return false;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *err = path + ": no checkpoint of step " + std::to_string(step) + " for rank " + std::to_string(rank);
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::int64_t header[4];
  std::uint64_t sum;
  if (bytes.compare(0, kMagicSize, "ZBPPCKPT1\n") == 0) {
    *err = path + ": written by an older zbrun (checkpoint format 1); start this run without --resume";
    return false;
  }
  if (bytes.size() < kMagicSize + sizeof header + sizeof sum || bytes.compare(0, kMagicSize, kMagic) != 0) {
    *err = path + ": not a zbrun checkpoint (bad header or truncated)";
    return false;
  }
  std::memcpy(header, bytes.data() + kMagicSize, sizeof header);
  size_t body = kMagicSize + sizeof header;
  const std::int64_t size = header[3];
  if (size < 0 || bytes.size() != body + static_cast<size_t>(size) + sizeof sum) {
    *err = path + ": truncated (" + std::to_string(bytes.size()) + " bytes, the header promises " +
           std::to_string(body + static_cast<size_t>(std::max<std::int64_t>(size, 0)) + sizeof sum) + ")";
    return false;
  }
  if (header[2] != rank) {
    *err = path + ": holds rank " + std::to_string(header[2]) + "'s state, but rank " + std::to_string(rank) +
           " reads it (a checkpoint file renamed or copied to another rank's name?)";
    return false;
  }
  if (header[0] != step || static_cast<std::uint64_t>(header[1]) != schedule_hash) {
    *err = path + ": written for " + (header[0] != step ? "another step" : "another schedule file");
    return false;
  }
  *state = bytes.substr(body, static_cast<size_t>(size));
  std::memcpy(&sum, bytes.data() + body + size, sizeof sum);
  if (sum != text_hash(*state)) {
    *err = path + ": checksum mismatch (the file is corrupt)";
    return false;
  }
  return true;
}

CheckpointLock::~CheckpointLock() { ::close(fd_); }  // closing releases the flock

std::unique_ptr<CheckpointLock> lock_checkpoints(const std::string& dir, int rank, std::string* err) {
  const std::string path = dir + "/.rank" + std::to_string(rank) + ".lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    *err = "--checkpoint: cannot lock " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char holder[256] = {0};
    ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    std::string who(holder, n > 0 ? static_cast<size_t>(n) : 0);
    while (!who.empty() && who.back() == '\n') who.pop_back();
    ::close(fd);
    *err = error == EWOULDBLOCK ? "--checkpoint: " + dir + " is in use by another zbrun run (" +
                                      (who.empty() ? "holder unknown" : who) + " holds " + path +
                                      "); wait for it to end, or give each run its own directory"
                                : "--checkpoint: cannot lock " + path + ": " + std::strerror(error);
    return nullptr;
  }
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::string me = "pid " + std::to_string(::getpid()) + " on host " + host + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    const int error = errno;
    ::close(fd);
    *err = "--checkpoint: cannot write " + path + ": " + std::strerror(error);
    return nullptr;
  }
  return std::make_unique<CheckpointLock>(fd);
}

}  // namespace zbpp
