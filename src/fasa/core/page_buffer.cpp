#include "fasa/core/page_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "fasa/core/error.h"

namespace fasa {

size_t PageBuffer::page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

PageBuffer::PageBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    fail("cannot reserve {} bytes of memory for the KV cache: {}", bytes, std::strerror(errno));
  }
  data_ = static_cast<uint8_t*>(p);
}

PageBuffer::~PageBuffer() {
  if (data_) munmap(data_, bytes_);
}

PageBuffer::PageBuffer(PageBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

PageBuffer& PageBuffer::operator=(PageBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(data_, bytes_);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

size_t PageBuffer::release(size_t offset, size_t len) {
  FASA_CHECK(offset + len <= bytes_);
  const size_t page = page_size();
  const size_t lo = (offset + page - 1) / page * page;  // data_ is page-aligned
  const size_t hi = (offset + len) / page * page;
  if (hi <= lo) return 0;
  // Anonymous private memory: MADV_DONTNEED drops the pages at once (they read as zeros later).
  FASA_CHECK(madvise(data_ + lo, hi - lo, MADV_DONTNEED) == 0);
  return hi - lo;
}

size_t PageBuffer::resident_pages(size_t offset, size_t len) const {
  if (len == 0) return 0;
  FASA_CHECK(offset + len <= bytes_);
  const size_t page = page_size();
  const size_t lo = offset / page * page, hi = (offset + len + page - 1) / page * page;
  std::vector<unsigned char> in((hi - lo) / page);
  FASA_CHECK(mincore(data_ + lo, hi - lo, in.data()) == 0);
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

}  // namespace fasa
