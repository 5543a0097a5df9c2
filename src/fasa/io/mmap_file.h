// A read-only memory mapping of a whole regular file (open + fstat + mmap, MAP_PRIVATE).
#pragma once

#include <cstdint>
#include <string>

namespace fasa {

class MmapFile {
 public:
  // Maps `path` read-only. Throws fasa::Error ("cannot open 'x': <reason>") for a missing or
  // unreadable file, a directory or anything that is not a regular file. An empty file maps to
  // data() == nullptr, size() == 0.
  explicit MmapFile(const std::string& path);
  ~MmapFile();
  MmapFile(const MmapFile&) = delete;
  MmapFile& operator=(const MmapFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_bytes_; }

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_bytes_ = 0;
};

}  // namespace fasa
