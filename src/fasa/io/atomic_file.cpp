#include "fasa/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "fasa/core/error.h"

namespace fs = std::filesystem;

namespace fasa {

namespace {

constexpr std::string_view kTempTag = ".fasa-tmp-";

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // durability of the rename only; the rename itself already happened
  ::fsync(fd);
  ::close(fd);
}

// Removes ".NAME.fasa-tmp-PID-N" files of `dir` whose process no longer runs.
void remove_stale_temps(const fs::path& dir, const std::string& name) {
  const std::string prefix = "." + name + std::string(kTempTag);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string f = entry.path().filename().string();
    if (f.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(f.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || end == nullptr || *end != '-') continue;
    // kill(pid, 0) fails with ESRCH only when no such process exists.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm_ec;
    fs::remove(entry.path(), rm_ec);
  }
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(path), target_(path) {
  if (path.empty()) fail("no output file name given");
  std::error_code ec;
  if (fs::is_symlink(path, ec)) {
    const fs::path resolved = fs::weakly_canonical(path, ec);
    if (!ec) target_ = resolved.string();
  }
  struct stat st {};
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail("cannot write '{}': it is a directory", path_);
  if (exists && !S_ISREG(st.st_mode)) fail("cannot write '{}': not a regular file", path_);
  const fs::path target(target_);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    fail("cannot write '{}': directory '{}' does not exist", path_, dir.string());
  }
  const std::string name = target.filename().string();
  remove_stale_temps(dir, name);
  static std::atomic<unsigned> counter{0};
  tmp_ = (dir / ("." + name + std::string(kTempTag) + std::to_string(::getpid()) + "-" +
                 std::to_string(counter++)))
             .string();
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    tmp_.clear();
    fail("cannot write '{}': {}", path_, std::strerror(err));
  }
  if (exists) ::fchmod(fd_, st.st_mode & 07777);  // a replaced file keeps its permissions
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

void AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) fail("cannot write '{}': the file is already closed", path_);
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      discard();
      fail("cannot write '{}': {}", path_, std::strerror(err));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) fail("cannot write '{}': the file is already closed", path_);
  int err = ::fsync(fd_) == 0 ? 0 : errno;
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err == 0 && ::rename(tmp_.c_str(), target_.c_str()) != 0) err = errno;
  if (err != 0) {
    discard();
    fail("cannot write '{}': {}", path_, std::strerror(err));
  }
  tmp_.clear();
  const fs::path target(target_);
  fsync_dir(target.has_parent_path() ? target.parent_path() : fs::path("."));
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

void append_durable(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write '{}': {}", path, std::strerror(n < 0 ? errno : EIO));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  if (::fsync(fd) != 0) fail("cannot write '{}': {}", path, std::strerror(errno));
}

}  // namespace fasa
