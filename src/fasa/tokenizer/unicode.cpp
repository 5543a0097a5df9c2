// Code point classes and the GPT-2 byte alphabet.
#include "fasa/tokenizer/unicode.h"

#include <array>
#include <vector>

namespace fasa::unicode {

namespace {

constexpr uint32_t kNumCodePoints = 0x110000;

// One class byte per code point, expanded once from the range table (1.1 MB).
const std::vector<uint8_t>& class_table() {
  static const std::vector<uint8_t> table = [] {
    std::vector<uint8_t> t(kNumCodePoints, kUndefined);
    for (size_t i = 0; i < kNumClassRanges; ++i) {
      const uint32_t first = kClassRanges[i] >> 8;
      const uint32_t last = i + 1 < kNumClassRanges ? kClassRanges[i + 1] >> 8 : kNumCodePoints;
      const auto cls = static_cast<uint8_t>(kClassRanges[i] & 0xFF);
      for (uint32_t cp = first; cp < last && cp < kNumCodePoints; ++cp) t[cp] = cls;
    }
    return t;
  }();
  return table;
}

struct ByteAlphabet {
  std::array<uint32_t, 256> cp_of_byte{};
  std::array<int16_t, 0x144> byte_of_cp{};  // every cp it uses is below U+0144
  std::array<std::string, 256> utf8_of_byte;
};

const ByteAlphabet& byte_alphabet() {
  static const ByteAlphabet alphabet = [] {
    ByteAlphabet a;
    a.byte_of_cp.fill(-1);
    // Printable Latin-1 bytes stand for themselves; the others (controls, space, DEL, NBSP,
    // soft hyphen) are moved, in byte order, to U+0100 and up.
    uint32_t next_moved = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next_moved++;
      a.cp_of_byte[b] = cp;
      a.byte_of_cp[cp] = static_cast<int16_t>(b);
      append_utf8(a.utf8_of_byte[b], cp);
    }
    return a;
  }();
  return alphabet;
}

}  // namespace

bool is_whitespace(uint32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

uint16_t flags(uint32_t cp) {
  if (cp >= kNumCodePoints) return kUndefined;
  uint16_t f = class_table()[cp];
  if (is_whitespace(cp)) f |= kWhitespace;
  return f;
}

Utf8Seq utf8_at(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return {Utf8Status::Valid, 1, b0};
  uint32_t len = 0;
  uint32_t cp = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return {Utf8Status::Invalid, 1, 0};
  }
  for (uint32_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return {Utf8Status::Truncated, k, 0};
    const uint8_t b = byte(i + k);
    const uint8_t min = k == 1 ? lo : 0x80;
    const uint8_t max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) return {Utf8Status::Invalid, k, 0};  // k: the maximal subpart
    cp = (cp << 6) | (b & 0x3F);
  }
  return {Utf8Status::Valid, len, cp};
}

uint32_t next_cp(std::string_view s, size_t& i) {
  const Utf8Seq seq = utf8_at(s, i);
  if (seq.status == Utf8Status::Valid) {
    i += seq.len;
    return seq.cp;
  }
  i += 1;
  return kReplacementChar;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t byte_to_cp(uint8_t b) { return byte_alphabet().cp_of_byte[b]; }

int cp_to_byte(uint32_t cp) { return cp < 0x144 ? byte_alphabet().byte_of_cp[cp] : -1; }

const std::string& byte_to_utf8(uint8_t b) { return byte_alphabet().utf8_of_byte[b]; }

}  // namespace fasa::unicode
