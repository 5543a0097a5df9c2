// The dependency-free PNG writer: file layout, chunk CRCs, the zlib stream of stored deflate
// blocks and its Adler-32, all checked by independent code here, and the pixels read back.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/io/png.h"

namespace fasa {
namespace {

using Bytes = std::vector<uint8_t>;

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

// Bit-at-a-time CRC-32 (reflected, polynomial 0xEDB88320): no table, unlike the encoder.
uint32_t bitwise_crc32(const std::string& s, size_t at, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = at; i < at + n; ++i) {
    crc ^= uint8_t(s[i]);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Adler-32 the slow way: reduce after every byte.
uint32_t simple_adler32(const std::string& s) {
  uint32_t a = 1, b = 0;
  for (char ch : s) {
    a = (a + uint8_t(ch)) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

struct Chunk {
  std::string type;
  std::string data;
};

// Splits a PNG file into chunks, checking the signature and every CRC on the way.
std::vector<Chunk> parse_chunks(const std::string& png) {
  std::vector<Chunk> chunks;
  const std::string sig("\x89PNG\r\n\x1a\n", 8);
  EXPECT_EQ(png.substr(0, 8), sig);
  size_t at = 8;
  while (at < png.size()) {
    EXPECT_LE(at + 12, png.size()) << "truncated chunk header";
    if (at + 12 > png.size()) break;
    const uint32_t len = be32(png, at);
    EXPECT_LE(at + 12 + len, png.size()) << "chunk runs past the end";
    if (at + 12 + len > png.size()) break;
    Chunk c{png.substr(at + 4, 4), png.substr(at + 8, len)};
    EXPECT_EQ(be32(png, at + 8 + len), bitwise_crc32(png, at + 4, 4 + len))
        << "bad CRC in chunk " << c.type;
    chunks.push_back(std::move(c));
    at += 12 + len;
  }
  EXPECT_EQ(at, png.size());
  return chunks;
}

struct Inflated {
  std::string raw;
  int blocks = 0;
};

// Reads a zlib stream that must consist of stored (BTYPE 00) deflate blocks only.
Inflated inflate_stored(const std::string& z) {
  Inflated r;
  EXPECT_GE(z.size(), 2u + 5u + 4u);
  if (z.size() < 11) return r;
  const uint8_t cmf = uint8_t(z[0]), flg = uint8_t(z[1]);
  EXPECT_EQ(cmf, 0x78);  // deflate, 32K window
  EXPECT_EQ(flg, 0x01);
  EXPECT_EQ((cmf * 256 + flg) % 31, 0);  // the header check
  EXPECT_EQ(flg & 0x20, 0);              // no preset dictionary
  size_t at = 2;
  bool final_block = false;
  while (!final_block) {
    EXPECT_LE(at + 5, z.size()) << "stream ends inside a block header";
    if (at + 5 > z.size()) return r;
    const uint8_t hdr = uint8_t(z[at]);
    final_block = (hdr & 1) != 0;
    EXPECT_EQ((hdr >> 1) & 3, 0) << "block " << r.blocks << " is not stored";
    EXPECT_EQ(hdr >> 3, 0) << "stray bits before the byte-aligned LEN";
    const uint32_t len = uint8_t(z[at + 1]) | (uint32_t(uint8_t(z[at + 2])) << 8);
    const uint32_t nlen = uint8_t(z[at + 3]) | (uint32_t(uint8_t(z[at + 4])) << 8);
    EXPECT_EQ(len ^ 0xFFFFu, nlen) << "NLEN is not the complement of LEN";
    at += 5;
    EXPECT_LE(at + len, z.size()) << "stored block runs past the stream";
    if (at + len > z.size()) return r;
    r.raw.append(z, at, len);
    at += len;
    ++r.blocks;
  }
  EXPECT_EQ(at + 4, z.size()) << "expected exactly the Adler-32 after the final block";
  if (at + 4 == z.size()) {
    EXPECT_EQ(be32(z, at), simple_adler32(r.raw));
  }
  return r;
}

struct Decoded {
  uint32_t width = 0, height = 0;
  Bytes rgb;
  int blocks = 0;
};

// The whole reader: chunk layout IHDR, IDAT..., IEND; 8-bit RGB; filter 0 on every scanline.
Decoded decode(const std::string& png) {
  Decoded d;
  const auto chunks = parse_chunks(png);
  EXPECT_GE(chunks.size(), 3u);
  if (chunks.size() < 3) return d;
  EXPECT_EQ(chunks.front().type, "IHDR");
  EXPECT_EQ(chunks.back().type, "IEND");
  EXPECT_TRUE(chunks.back().data.empty());
  const std::string& ihdr = chunks.front().data;
  EXPECT_EQ(ihdr.size(), 13u);
  if (ihdr.size() != 13) return d;
  d.width = be32(ihdr, 0);
  d.height = be32(ihdr, 4);
  EXPECT_EQ(uint8_t(ihdr[8]), 8);   // bit depth
  EXPECT_EQ(uint8_t(ihdr[9]), 2);   // colour type RGB
  EXPECT_EQ(uint8_t(ihdr[10]), 0);  // compression
  EXPECT_EQ(uint8_t(ihdr[11]), 0);  // filter method
  EXPECT_EQ(uint8_t(ihdr[12]), 0);  // interlace
  std::string z;
  for (size_t i = 1; i + 1 < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].type, "IDAT");
    z += chunks[i].data;
  }
  const Inflated inf = inflate_stored(z);
  d.blocks = inf.blocks;
  const size_t stride = size_t(d.width) * 3 + 1;
  EXPECT_EQ(inf.raw.size(), stride * d.height);
  if (inf.raw.size() != stride * d.height) return d;
  for (uint32_t y = 0; y < d.height; ++y) {
    EXPECT_EQ(inf.raw[y * stride], '\0') << "scanline " << y << " is not filter type 0";
    d.rgb.insert(d.rgb.end(), inf.raw.begin() + long(y * stride + 1),
                 inf.raw.begin() + long((y + 1) * stride));
  }
  return d;
}

Bytes pattern(int w, int h) {
  Bytes rgb(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &rgb[(size_t(y) * w + x) * 3];
      p[0] = uint8_t(x * 7 + y);
      p[1] = uint8_t(y * 13 + 5);
      p[2] = uint8_t((x ^ y) * 3);
    }
  }
  return rgb;
}

TEST(Png, ChecksumsMatchKnownValues) {
  const std::string check = "123456789";
  const auto* p = reinterpret_cast<const uint8_t*>(check.data());
  EXPECT_EQ(png_crc32(p, check.size()), 0xCBF43926u);  // the standard CRC-32 check value
  EXPECT_EQ(bitwise_crc32(check, 0, check.size()), 0xCBF43926u);
  // Continuing a CRC over two pieces equals one pass.
  EXPECT_EQ(png_crc32(p + 4, 5, png_crc32(p, 4)), 0xCBF43926u);
  const std::string wiki = "Wikipedia";
  EXPECT_EQ(png_adler32(reinterpret_cast<const uint8_t*>(wiki.data()), wiki.size()), 0x11E60398u);
  EXPECT_EQ(png_adler32(nullptr, 0), 1u);
  // Long input, past the encoder's deferred-modulo run length.
  std::string big(100000, '\xFF');
  EXPECT_EQ(png_adler32(reinterpret_cast<const uint8_t*>(big.data()), big.size()),
            simple_adler32(big));
}

TEST(Png, TinyImageRoundTrips) {
  const Bytes rgb = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};  // 2 x 2
  const std::string png = encode_png_rgb(2, 2, rgb);
  // Signature + IHDR(25) + IDAT(12 + 2 + 5 + 2*7 + 4) + IEND(12).
  EXPECT_EQ(png.size(), 8u + 25u + 12u + 25u + 12u);
  EXPECT_EQ(png.substr(8, 8), std::string("\0\0\0\x0dIHDR", 8));
  const Decoded d = decode(png);
  EXPECT_EQ(d.width, 2u);
  EXPECT_EQ(d.height, 2u);
  EXPECT_EQ(d.blocks, 1);
  EXPECT_EQ(d.rgb, rgb);
}

TEST(Png, LargeImageUsesSeveralStoredBlocks) {
  const int w = 300, h = 200;  // 200 scanlines of 901 bytes = 180200 bytes: three blocks
  const Bytes rgb = pattern(w, h);
  const Decoded d = decode(encode_png_rgb(w, h, rgb));
  EXPECT_EQ(d.width, uint32_t(w));
  EXPECT_EQ(d.height, uint32_t(h));
  EXPECT_EQ(d.blocks, 3);
  EXPECT_EQ(d.rgb, rgb);
}

TEST(Png, BlockBoundaries) {
  // 28 x 771: (28*3 + 1) * 771 = 65535 bytes, exactly one full stored block.
  Bytes rgb = pattern(28, 771);
  Decoded d = decode(encode_png_rgb(28, 771, rgb));
  EXPECT_EQ(d.blocks, 1);
  EXPECT_EQ(d.rgb, rgb);
  // One more scanline: 65620 bytes, a full block and an 85-byte one.
  rgb = pattern(28, 772);
  d = decode(encode_png_rgb(28, 772, rgb));
  EXPECT_EQ(d.blocks, 2);
  EXPECT_EQ(d.rgb, rgb);
}

TEST(Png, RejectsBadSizes) {
  EXPECT_THROW(encode_png_rgb(0, 1, {}), Error);
  EXPECT_THROW(encode_png_rgb(1, -1, {}), Error);
  EXPECT_THROW(encode_png_rgb(2, 2, Bytes(11)), Error);
  EXPECT_THROW(encode_png_rgb(2, 2, Bytes(13)), Error);
}

}  // namespace
}  // namespace fasa
