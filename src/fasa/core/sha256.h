// SHA-256 (FIPS 180-4), streaming, computed by OpenSSL's libcrypto (EVP). Used to verify
// downloads and to name the exact model, calibration and task files in results.
//
//   Sha256 h;  h.update(data, n);  ...  std::string hex = h.hex_digest();
//   sha256_file_hex(path)   — hash a whole file (1 MiB reads), lowercase hex.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX (openssl/types.h), kept out of this header

namespace fasa {

// Move-only: owns one libcrypto digest context (a moved-from object may only be assigned to or
// destroyed). Every libcrypto failure throws fasa::Error.
class Sha256 {
 public:
  static constexpr size_t kDigestBytes = 32;
  static constexpr size_t kBlockBytes = 64;
  using Digest = std::array<uint8_t, kDigestBytes>;

  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void reset();
  void update(const void* data, size_t n_bytes);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Pads, returns the digest and resets the state (the object can be reused).
  Digest finish();
  std::string hex_digest() { return to_hex(finish()); }

  static std::string to_hex(const Digest& d);

 private:
  struct FreeCtx {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, FreeCtx> ctx_;
};

// One-shot helpers; lowercase hex.
std::string sha256_hex(std::string_view data);
// Throws fasa::Error if the file cannot be opened or read.
std::string sha256_file_hex(const std::filesystem::path& path);

// True when s is 64 lowercase hex digits.
bool is_sha256_hex(std::string_view s);

}  // namespace fasa
