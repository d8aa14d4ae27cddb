// Checked, atomic output (see output_file.h).
#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <system_error>
#include <filesystem>
#include <thread>

namespace zbpp {

namespace {

std::string why(const std::string& path, int error) { return path + ": " + std::generic_category().message(error); }

// All of [data, data + n) to fd; a write that makes no progress counts as a full device.
bool write_all(int fd, const char* data, size_t n, int* error) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *error = w < 0 ? errno : ENOSPC;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::string parent_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The mode a new file gets from open(2) with 0666: read once, since umask() can only be read by
// setting it and threads (zbrun --local ranks) write files at the same time.
mode_t new_file_mode() {
  static const mode_t mode = [] {
    mode_t mask = ::umask(022);
    ::umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

// A thread that drops the page cache of the file at `path` (empty when none can be started: then
// whoever frees the file drops them).
std::thread drop_cached_pages_beside(const std::string& path) {
  try {
    return std::thread([path] {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return;
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    });
  } catch (const std::system_error&) {
    return std::thread();
  }
}

}  // namespace

ReplacingFile::~ReplacingFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

bool ReplacingFile::fail(int error, std::string* err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
  *err = why(given_, error);
  return false;
}

bool ReplacingFile::open(const std::string& path_given, std::string* err) {
  given_ = path_given;
  target_ = path_given;
  struct stat st;
  if (::lstat(target_.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Replace the file the link points to, not the link.
    char resolved[PATH_MAX];
    if (::realpath(target_.c_str(), resolved) != nullptr) target_ = resolved;
  }
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return fail(EISDIR, err);
  replaces_big_file_ = exists && S_ISREG(st.st_mode) && st.st_size >= (1 << 20);
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a FIFO is written in place: nothing to rename over.
    in_place_ = true;
    fd_ = ::open(given_.c_str(), O_WRONLY | O_CLOEXEC);
    return fd_ >= 0 || fail(errno, err);
  }
  dir_ = parent_of(target_);
  size_t slash = target_.find_last_of('/');
  // ".NAME.tmp-XXXXXX" adds 12 bytes: a legal name of 244 or more would not fit a file name's 255
  // (NAME_MAX), so its start stands for it (the temporary's name only has to be unique and near).
  const std::string name = (slash == std::string::npos ? target_ : target_.substr(slash + 1)).substr(0, 255 - 12);
  std::string tmp = dir_ + "/." + name + ".tmp-XXXXXX";
  fd_ = ::mkstemp(tmp.data());
  if (fd_ < 0) {
    *err = why(given_, errno) + " (creating a temporary file in " + dir_ + ")";
    return false;
  }
  tmp_ = tmp;
  if (::fchmod(fd_, exists ? (st.st_mode & 07777) : new_file_mode()) != 0) return fail(errno, err);
  return true;
}

bool ReplacingFile::write(std::string_view text, std::string* err) {
  int error = 0;
  if (!write_all(fd_, text.data(), text.size(), &error)) return fail(error, err);
  written_ += text.size();
#ifdef SYNC_FILE_RANGE_WRITE
  // A big file written piece by piece: start writing each 256 KB to the disk now, while the rest is
  // made, so commit()'s fsync waits for little more than the last piece. Advisory: fsync checks.
  if (!in_place_ && written_ - flushed_ >= (1u << 18)) {
    ::sync_file_range(fd_, static_cast<off_t>(flushed_), static_cast<off_t>(written_ - flushed_), SYNC_FILE_RANGE_WRITE);
    flushed_ = written_;
  }
#endif
  return true;
}

bool ReplacingFile::commit(std::string* err) {
  // The rename frees the file it replaces, whose cached pages it would drop on this thread after
  // the wait for the disk; a big one's are dropped during that wait instead (they are clean, so
  // nothing is written; a file that is not is only scheduled for writing).
  std::thread drop_old_pages = replaces_big_file_ ? drop_cached_pages_beside(target_) : std::thread();
  const int synced = in_place_ ? 0 : ::fsync(fd_);
  const int sync_error = errno;
  if (drop_old_pages.joinable()) drop_old_pages.join();
  if (synced != 0) return fail(sync_error, err);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return fail(errno, err);
  if (in_place_) return true;
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) return fail(errno, err);
  tmp_.clear();
  // The rename is durable once the directory is; some file systems cannot sync a directory (EINVAL).
  int error = 0;
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    if (::fsync(dfd) != 0 && errno != EINVAL) error = errno;
    ::close(dfd);
  }
  if (error != 0) {
    *err = why(given_, error) + " (syncing the directory " + dir_ + ")";
    return false;
  }
  return true;
}

bool write_file_replacing(const std::string& path, const std::string& text, std::string* err) {
  ReplacingFile file;
  return file.open(path, err) && file.write(text, err) && file.commit(err);
}

std::string check_writable_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return why(path, EISDIR);
    if (::access(path.c_str(), W_OK) != 0) return why(path, errno);
    if (!S_ISREG(st.st_mode)) return "";  // written in place
    // A regular file is replaced by a rename: its directory must take the temporary file.
    const std::string dir = parent_of(path);
    return ::access(dir.c_str(), W_OK | X_OK) == 0 ? "" : why(path, errno) + " (the directory " + dir + ")";
  }
  if (errno != ENOENT) return why(path, errno);
  const std::string dir = parent_of(path);
  if (::stat(dir.c_str(), &st) != 0) return why(path, errno) + " (the directory " + dir + ")";
  if (!S_ISDIR(st.st_mode)) return why(path, ENOTDIR);
  return ::access(dir.c_str(), W_OK | X_OK) == 0 ? "" : why(path, errno) + " (the directory " + dir + ")";
}

std::string check_writable_dir(const std::string& dir) {
  std::string at = dir;
  struct stat st;
  // The nearest existing ancestor decides: that is where the first directory would be created.
  while (::stat(at.c_str(), &st) != 0) {
    if (errno != ENOENT) return why(dir, errno);
    std::string up = parent_of(at);
    if (up == at) return why(dir, ENOENT);
    at = up;
  }
  if (!S_ISDIR(st.st_mode)) return why(dir, ENOTDIR);
  if (::access(at.c_str(), W_OK | X_OK) != 0) return why(dir, errno) + (at == dir ? "" : " (the directory " + at + ")");
  return "";
}

StreamFile::~StreamFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool StreamFile::open(const std::string& path, bool append, std::string* err) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0666);
  if (fd_ < 0) {
    *err = why(path, errno);
    return false;
  }
  struct stat st;
  regular_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  return true;
}

bool StreamFile::write(const std::string& text, std::string* err) {
  int error = 0;
  if (write_all(fd_, text.data(), text.size(), &error)) return true;
  *err = why(path_, error);
  return false;
}

bool StreamFile::close(std::string* err) {
  int error = 0;
  if (regular_ && ::fsync(fd_) != 0) error = errno;
  if (::close(fd_) != 0 && error == 0) error = errno;
  fd_ = -1;
  if (error == 0) return true;
  *err = why(path_, error);
  return false;
}

namespace {

// What makes two names the same file: "device:inode" for a file that exists, else its resolved
// path; "" for a name to leave out (none given, or not a regular file).
std::string file_identity(const std::string& path) {
  if (path.empty()) return "";
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return "";
    return "inode:" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  std::error_code ec;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return "path:" + (ec ? path : resolved.string());
}

}  // namespace

bool is_standard_output(const std::string& path) {
  if (path.empty()) return false;
  struct stat target {}, out {};
  if (::stat(path.c_str(), &target) != 0 || ::fstat(STDOUT_FILENO, &out) != 0) return false;
  return target.st_dev == out.st_dev && target.st_ino == out.st_ino;
}

std::string output_clash(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  std::vector<std::pair<std::string, const NamedPath*>> seen;  // identity, whose
  // An input that does not exist cannot be replaced (a preset's name, "synthetic"): left out.
  for (const NamedPath& in : inputs)
    if (std::string id = file_identity(in.path); id.rfind("inode:", 0) == 0) seen.push_back({id, &in});
  for (const NamedPath& out : outputs) {
    const std::string id = file_identity(out.path);
    if (id.empty()) continue;
    for (const auto& [other_id, other] : seen)
      if (other_id == id) {
        const bool input = other >= inputs.data() && other < inputs.data() + inputs.size();
        return out.what + " " + out.path + " is the same file as " + other->what + " " + other->path +
               (input ? ": writing it would replace what is read; write it elsewhere"
                      : ": one would replace the other; give each output its own name");
      }
    seen.push_back({id, &out});
  }
  return "";
}

}  // namespace zbpp
