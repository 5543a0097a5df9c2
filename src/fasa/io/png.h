// A minimal PNG writer: 8-bit RGB, no compression (the zlib stream is made of stored deflate
// blocks), so it needs no zlib. Good for small generated images such as heatmaps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fasa {

// The bytes of a PNG file holding `rgb` ([height, width, 3], row-major, 8 bits per channel).
// Throws fasa::Error when the sizes are not positive or `rgb` has the wrong length.
std::string encode_png_rgb(int width, int height, const std::vector<uint8_t>& rgb);

// CRC-32 (ISO 3309 / PNG, polynomial 0xEDB88320) of `n` bytes, continuing from `crc` (0 to start).
uint32_t png_crc32(const uint8_t* data, size_t n, uint32_t crc = 0);

// Adler-32 (the zlib checksum) of `n` bytes.
uint32_t png_adler32(const uint8_t* data, size_t n);

}  // namespace fasa
