// SHA-256 through OpenSSL's EVP digest API (libcrypto, OpenSSL 3): the library's tested
// assembly (the CPU's SHA extensions where it has them) instead of a hand-written compression
// function, and the implementation the rest of the system already trusts.
#include "fasa/core/sha256.h"

#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/core/input_file.h"

namespace fasa {
namespace {

// Fails with what was being done and libcrypto's own reason (its oldest queued error), and
// clears libcrypto's thread-local error queue so the next call starts clean.
[[noreturn]] void fail_crypto(const char* what) {
  const unsigned long code = ERR_get_error();
  char reason[256] = "no reason given";
  if (code != 0) ERR_error_string_n(code, reason, sizeof(reason));
  ERR_clear_error();
  fail("sha256: libcrypto {} failed: {}", what, reason);
}

}  // namespace

void Sha256::FreeCtx::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) fail_crypto("EVP_MD_CTX_new");
  reset();
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::reset() {
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) fail_crypto("EVP_DigestInit_ex");
}

void Sha256::update(const void* data, size_t n_bytes) {
  if (n_bytes == 0) return;
  if (EVP_DigestUpdate(ctx_.get(), data, n_bytes) != 1) fail_crypto("EVP_DigestUpdate");
}

Sha256::Digest Sha256::finish() {
  Digest out;
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), out.data(), &n) != 1) fail_crypto("EVP_DigestFinal_ex");
  if (n != kDigestBytes)
    fail("sha256: libcrypto returned a {}-byte digest, expected {}", n, kDigestBytes);
  reset();
  return out;
}

std::string Sha256::to_hex(const Digest& d) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * d.size(), '0');
  for (size_t i = 0; i < d.size(); ++i) {
    s[2 * i] = kDigits[d[i] >> 4];
    s[2 * i + 1] = kDigits[d[i] & 15];
  }
  return s;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

std::string sha256_file_hex(const std::filesystem::path& path) {
  const int fd = open_input_file(path.string(), "file to hash");
  std::unique_ptr<FILE, int (*)(FILE*)> f(::fdopen(fd, "rb"), &std::fclose);
  if (!f) {
    ::close(fd);
    fail("cannot open '{}' for hashing: {}", path.string(), std::strerror(errno));
  }
  std::vector<uint8_t> buf(size_t(1) << 20);
  Sha256 h;
  for (;;) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n > 0) h.update(buf.data(), n);
    if (n < buf.size()) {
      if (std::ferror(f.get()))
        fail("read error while hashing '{}': {}", path.string(), std::strerror(errno));
      break;
    }
  }
  return h.hex_digest();
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 2 * Sha256::kDigestBytes) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace fasa
