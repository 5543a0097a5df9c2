// SHA-256 (FIPS 180-4), streaming. Used to verify downloads and to name
// the exact model, calibration and task files in results.
//
//   Sha256 h;  h.update(data, n);  ...  std::string hex = h.hex_digest();
//   sha256_file_hex(path)   — hash a whole file (1 MiB reads), lowercase hex.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace fasa {

class Sha256 {
 public:
  static constexpr size_t kDigestBytes = 32;
  static constexpr size_t kBlockBytes = 64;
  using Digest = std::array<uint8_t, kDigestBytes>;

  Sha256() { reset(); }

  void reset();
  void update(const void* data, size_t n_bytes);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Pads, returns the digest and resets the state (the object can be reused).
  Digest finish();
  std::string hex_digest() { return to_hex(finish()); }

  static std::string to_hex(const Digest& d);

 private:
  void compress(const uint8_t* block);  // one 64-byte block

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, kBlockBytes> buf_;  // pending partial block
  size_t buf_len_ = 0;
  uint64_t total_bytes_ = 0;
};

// One-shot helpers; lowercase hex.
std::string sha256_hex(std::string_view data);
// Throws fasa::Error if the file cannot be opened or read.
std::string sha256_file_hex(const std::filesystem::path& path);

// True when s is 64 lowercase hex digits.
bool is_sha256_hex(std::string_view s);

}  // namespace fasa
