// The model cache on disk.
//
//   <home>/models/<name>/<file>          the verified GGUF (only ever placed there by rename)
//   <home>/models/<name>/<file>.sha256   marker: the verified hash plus the file's size and mtime
//   <home>/models/<name>/.<...>.fasa-tmp-<pid>-<n>   downloads in progress (temp files, dirs)
//
// The marker lets a later pull trust the file without hashing it again; when the size or mtime
// no longer match, the file is hashed again.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace fasa::hub {

// $FASA_HOME, else ~/.cache/fasa; always absolute.
std::filesystem::path default_home();

std::filesystem::path marker_path(const std::filesystem::path& file);

// True when the marker of `file` records `sha256` and the file's current size and mtime.
bool marker_matches(const std::filesystem::path& file, std::string_view sha256);
// The sha256 the marker of `file` records ("" when it has no readable marker).
std::string marker_sha256(const std::filesystem::path& file);
// Checks a model file before it is loaded. `expected`: the sha256 it must have ("": the one its
// marker records; without a marker nothing is checked, and `full` is an error). Cheap when the
// marker records `expected` with the file's current size and mtime, unless `full`: otherwise the
// file is hashed again (a line on stderr says so); a match refreshes the marker, a mismatch throws
// fasa::Error naming the file, both hashes and `fix`. Returns whether it checked anything.
bool verify_model_file(const std::filesystem::path& file, std::string expected, bool full,
                       std::string_view fix);
// Records that `file` (as it is now) has `sha256`. Written atomically.
void write_marker(const std::filesystem::path& file, std::string_view sha256);
// Removes the file and its marker (missing ones are fine).
void remove_cached(const std::filesystem::path& file);

// fsync the file, rename it over `dest` (atomic on one file system), fsync the directory.
void commit_file(const std::filesystem::path& tmp, const std::filesystem::path& dest);

// Removes temp files and directories in `dir` left behind by processes that no longer run.
void remove_stale_temps(const std::filesystem::path& dir);

// A unique path "<dir>/.<stem>.fasa-tmp-<pid>-<n>", removed (recursively) on destruction
// unless release()d. Nothing is created.
class TempPath {
 public:
  TempPath(const std::filesystem::path& dir, std::string_view stem);
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;

  const std::filesystem::path& path() const { return path_; }
  void release() { released_ = true; }

 private:
  std::filesystem::path path_;
  bool released_ = false;
};

}  // namespace fasa::hub
