#include "fasa/io/png.h"

#include <algorithm>
#include <array>

#include "fasa/core/error.h"

namespace fasa {

namespace {

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[n] = c;
  }
  return t;
}

void put_u32be(std::string& s, uint32_t v) {
  s.push_back(static_cast<char>((v >> 24) & 0xFF));
  s.push_back(static_cast<char>((v >> 16) & 0xFF));
  s.push_back(static_cast<char>((v >> 8) & 0xFF));
  s.push_back(static_cast<char>(v & 0xFF));
}

// Appends one chunk: length, type, data, CRC-32 over type and data.
void put_chunk(std::string& out, const char type[4], const std::string& data) {
  put_u32be(out, static_cast<uint32_t>(data.size()));
  const size_t type_at = out.size();
  out.append(type, 4);
  out += data;
  const auto* p = reinterpret_cast<const uint8_t*>(out.data()) + type_at;
  put_u32be(out, png_crc32(p, 4 + data.size()));
}

}  // namespace

uint32_t png_crc32(const uint8_t* data, size_t n, uint32_t crc) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t png_adler32(const uint8_t* data, size_t n) {
  constexpr uint32_t kMod = 65521;
  uint32_t a = 1, b = 0;
  size_t i = 0;
  while (i < n) {
    // 5552 bytes is the longest run for which b cannot overflow 32 bits before the reduction.
    const size_t end = std::min(n, i + 5552);
    for (; i < end; ++i) {
      a += data[i];
      b += a;
    }
    a %= kMod;
    b %= kMod;
  }
  return (b << 16) | a;
}

std::string encode_png_rgb(int width, int height, const std::vector<uint8_t>& rgb) {
  if (width <= 0 || height <= 0) {
    fail("PNG: image size must be positive (got {}x{})", width, height);
  }
  const size_t row = static_cast<size_t>(width) * 3;
  const size_t expected = row * static_cast<size_t>(height);
  if (rgb.size() != expected) {
    fail("PNG: expected {} bytes of RGB for {}x{}, got {}", expected, width, height, rgb.size());
  }
  // The raw (filtered) image data: each scanline prefixed by filter type 0 (None).
  std::string raw;
  raw.reserve((row + 1) * height);
  for (int y = 0; y < height; ++y) {
    raw.push_back('\0');
    raw.append(reinterpret_cast<const char*>(rgb.data()) + static_cast<size_t>(y) * row, row);
  }
  // zlib: CMF 0x78 (deflate, 32K window), FLG 0x01 (no dictionary, fastest; 0x7801 % 31 == 0).
  std::string z;
  constexpr size_t kMaxStored = 65535;
  z.reserve(2 + raw.size() + (raw.size() / kMaxStored + 1) * 5 + 4);
  z.push_back(static_cast<char>(0x78));
  z.push_back(static_cast<char>(0x01));
  size_t at = 0;
  do {
    const size_t len = std::min(kMaxStored, raw.size() - at);
    const bool last = at + len == raw.size();
    z.push_back(static_cast<char>(last ? 1 : 0));  // BFINAL, BTYPE = 00 (stored)
    z.push_back(static_cast<char>(len & 0xFF));    // LEN, little-endian
    z.push_back(static_cast<char>((len >> 8) & 0xFF));
    z.push_back(static_cast<char>(~len & 0xFF));  // NLEN = one's complement of LEN
    z.push_back(static_cast<char>((~len >> 8) & 0xFF));
    z.append(raw, at, len);
    at += len;
  } while (at < raw.size());
  put_u32be(z, png_adler32(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()));
  if (z.size() > 0x7FFFFFFFu) {
    fail("PNG: image {}x{} is too large for one IDAT chunk", width, height);
  }

  std::string ihdr;
  put_u32be(ihdr, static_cast<uint32_t>(width));
  put_u32be(ihdr, static_cast<uint32_t>(height));
  ihdr.push_back(8);  // bit depth
  ihdr.push_back(2);  // colour type: truecolour (RGB)
  ihdr.push_back(0);  // compression: deflate
  ihdr.push_back(0);  // filter method 0
  ihdr.push_back(0);  // no interlace

  std::string out("\x89PNG\r\n\x1a\n", 8);
  put_chunk(out, "IHDR", ihdr);
  put_chunk(out, "IDAT", z);
  put_chunk(out, "IEND", std::string());
  return out;
}

}  // namespace fasa
