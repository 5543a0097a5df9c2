#include "fasa/io/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "fasa/core/error.h"

namespace fasa {

namespace {

// Closes the descriptor on every path out of the constructor.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MmapFile::MmapFile(const std::string& path) {
  // O_NONBLOCK: a FIFO is refused below instead of waiting for a writer (no effect on files).
  FdGuard guard{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (guard.fd < 0) fail("cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(guard.fd, &st) != 0) fail("cannot stat '{}': {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("cannot open '{}': is a directory, not a file", path);
  if (!S_ISREG(st.st_mode)) {
    fail("cannot open '{}': {}, not a regular file", path,
         S_ISFIFO(st.st_mode)   ? "a FIFO"
         : S_ISSOCK(st.st_mode) ? "a socket"
                                : "a device");
  }
  if (st.st_size <= 0) return;  // mmap of length 0 is invalid; leave empty
  if (static_cast<uint64_t>(st.st_size) > std::numeric_limits<size_t>::max()) {
    fail("cannot map '{}': file of {} bytes is too large for this address space", path,
         static_cast<uint64_t>(st.st_size));
  }
  const size_t len = static_cast<size_t>(st.st_size);
  void* addr = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, guard.fd, 0);
  if (addr == MAP_FAILED) fail("cannot map '{}': {}", path, std::strerror(errno));
  data_ = static_cast<const uint8_t*>(addr);
  size_bytes_ = static_cast<uint64_t>(len);
}

MmapFile::~MmapFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_bytes_));
}

}  // namespace fasa
