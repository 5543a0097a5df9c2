// Memory straight from the OS, page-aligned, whose pages can be handed back while the buffer
// lives: the KV cache's rows (attention/kv_layer_store.h), where an eviction policy's freed rows
// must really leave the process. Pages are committed when first written (anonymous mmap), and
// release() returns the whole pages inside a byte range (MADV_DONTNEED): they read as zeros
// afterwards and are committed again when written.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fasa {

class PageBuffer {
 public:
  PageBuffer() = default;
  // `bytes` of zeroed memory; throws fasa::Error when the OS refuses.
  explicit PageBuffer(size_t bytes);
  ~PageBuffer();
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  PageBuffer(PageBuffer&& o) noexcept;
  PageBuffer& operator=(PageBuffer&& o) noexcept;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }
  // Gives back the pages wholly inside [offset, offset + len); the bytes of partial pages at
  // either end stay. Returns the bytes given back (a multiple of page_size()).
  size_t release(size_t offset, size_t len);
  // How many of the pages overlapping [offset, offset + len) are resident in RAM now (mincore):
  // for tests and diagnostics.
  size_t resident_pages(size_t offset, size_t len) const;
  static size_t page_size();

 private:
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace fasa
