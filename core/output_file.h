// Every file zbplan and zbrun write goes through here, so a failed write never loses data and never
// passes in silence (issue 19, classes 1 to 3).
//
// write_file_replacing: the whole text to a unique temporary file in the target's directory, every
// write, the fsync and the close checked, then renamed over the target (and the directory synced).
// A failure at any point removes the temporary file and leaves the old target as it was (so the
// directory must be writable, not only the file). A target that exists and is not a regular file
// (/dev/null, /dev/full, a FIFO) cannot be renamed over; it is written directly, every write checked.
//
// StreamFile: an output written piece by piece while a run goes on (zbrun --metrics), so it can be
// followed with tail -f; every write is checked, and close() syncs and checks too.
//
// Errors read "PATH: strerror", e.g. "/dev/full: No space left on device".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace zbpp {

/// Replaces `path` with `text` atomically (see above); false with *err on failure.
bool write_file_replacing(const std::string& path, const std::string& text, std::string* err);

/// write_file_replacing piece by piece, for a file too big to hold twice in memory (a schedule of
/// 100,000 ops): open() makes the temporary file, write() appends to it, commit() syncs it and
/// renames it over the target. Destroyed without a successful commit, it removes the temporary
/// file and the target stays as it was. Same errors as write_file_replacing.
class ReplacingFile {
 public:
  ReplacingFile() = default;
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;
  ~ReplacingFile();

  bool open(const std::string& path, std::string* err);
  bool write(std::string_view text, std::string* err);
  bool commit(std::string* err);

 private:
  bool fail(int error, std::string* err);  ///< removes the temporary file; *err = "PATH: strerror"
  int fd_ = -1;
  bool in_place_ = false;    ///< the target is not a regular file: written directly
  bool replaces_big_file_ = false;  ///< the target is a regular file of 1 MiB or more (commit())
  std::string given_;        ///< the path as given, for messages
  std::string target_, tmp_, dir_;
  size_t written_ = 0, flushed_ = 0;  ///< bytes written; bytes handed to the disk early (write())
};

/// Whether `path` could be written without writing it: an existing file must be writable and not a
/// directory; a new one needs a writable directory. "" if so, else why ("PATH: ..."). Creates nothing
/// (zbrun --check).
std::string check_writable_file(const std::string& path);
/// The same for a directory that files will be created in (it may not exist yet: then its nearest
/// existing ancestor must be a writable directory).
std::string check_writable_dir(const std::string& dir);

/// A file a program reads or writes, named as its command line names it ("-o", "the schedule").
struct NamedPath {
  std::string what;
  std::string path;
};
/// Whether an output is the same file as an input or as another output, so that writing it would
/// replace what the program reads, or what it writes elsewhere: the same device and inode where the
/// file exists (a symlink or a hard link to it included), else the same path once resolved (".." and
/// symlinked directories followed). Empty paths, inputs that do not exist (a preset's name) and
/// existing files that are not regular files (/dev/null) are left out. "" when none clash, else the first clash, e.g. "--trace s.json is the
/// same file as the schedule s.json: writing it would replace the schedule".
std::string output_clash(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

/// Whether `path` is the file this process's standard output writes to (/dev/stdout, or a name
/// of the same file): a program then writes its summary to standard error, so that standard
/// output holds the file alone.
bool is_standard_output(const std::string& path);

/// An output written as it goes: `append` keeps what the file holds (zbrun --resume).
class StreamFile {
 public:
  StreamFile() = default;
  StreamFile(const StreamFile&) = delete;
  StreamFile& operator=(const StreamFile&) = delete;
  ~StreamFile();

  bool open(const std::string& path, bool append, std::string* err);
  bool is_open() const { return fd_ >= 0; }
  /// All of `text`, or false with *err.
  bool write(const std::string& text, std::string* err);
  /// fsync (on a regular file) and close, both checked.
  bool close(std::string* err);

 private:
  int fd_ = -1;
  bool regular_ = false;
  std::string path_;
};

}  // namespace zbpp
