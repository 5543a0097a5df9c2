// Crash-safe output files. An AtomicFile writes to a temporary file next to the target
// (".NAME.fasa-tmp-PID-N" in the same directory), and commit() fsyncs it, renames it over the
// target and fsyncs the directory: a reader, or whatever is left after a crash or a kill, sees
// the old file or the new one, never a mix or a truncated file. Without commit() (an error, an
// exception) the destructor removes the temporary file and the target is untouched.
//
// Opening creates the temporary file at once, so a missing or read-only directory, or a target
// that is a directory, is an error before any work is done: commands open their outputs before
// they compute. A temporary file left by a killed process (its PID no longer runs) is removed
// the next time the same target is opened.
#pragma once

#include <string>
#include <string_view>

namespace fasa {

class AtomicFile {
 public:
  // Throws fasa::Error naming `path` when it cannot be written. A symlink is followed: the file
  // it points at is replaced.
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);  // appends to the temporary file; throws fasa::Error
  void commit();                       // fsync, rename over the target, fsync the directory
  void discard();                      // removes the temporary file (the target stays as it was)

  const std::string& path() const { return path_; }      // the target, as given
  const std::string& temp_path() const { return tmp_; }  // the temporary file

 private:
  std::string path_;    // as given (messages)
  std::string target_;  // symlinks resolved
  std::string tmp_;
  int fd_ = -1;
};

// The whole file in one go: AtomicFile(path), write(bytes), commit().
void write_file_atomic(const std::string& path, std::string_view bytes);

// Appends `bytes` to the open file `fd` (O_APPEND) with one write() call (more only after a
// short write) and fsyncs it: a record either is in the file whole, or, when the process dies
// during the call, ends the file cut short. `path` names the file in errors.
void append_durable(int fd, std::string_view bytes, const std::string& path);

}  // namespace fasa
