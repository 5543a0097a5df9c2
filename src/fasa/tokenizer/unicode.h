// Unicode helpers for the tokenizers: UTF-8 decoding and checking, the code point classes the
// pre-tokenizer regexes use (\p{L}, \p{N}, \s, ...), and GPT-2's byte <-> printable-char map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fasa::unicode {

// Class flags of a code point: exactly one general-category group, plus kWhitespace for the
// White_Space code points. 0 means "no code point" (past the end of a span).
enum : uint16_t {
  kUndefined = 0x01,    // Cn
  kNumber = 0x02,       // \p{N}
  kLetter = 0x04,       // \p{L}
  kSeparator = 0x08,    // \p{Z}
  kMark = 0x10,         // \p{M}
  kPunctuation = 0x20,  // \p{P}
  kSymbol = 0x40,       // \p{S}
  kOther = 0x80,        // Cc, Cf, Co, Cs
  kClassMask = 0xFF,
  kWhitespace = 0x100,  // \s
};

// Generated table (unicode_data.cpp): entries (first << 8) | class, sorted by first.
extern const uint32_t kClassRanges[];
extern const size_t kNumClassRanges;

bool is_whitespace(uint32_t cp);
uint16_t flags(uint32_t cp);  // class | kWhitespace; kUndefined past U+10FFFF

constexpr uint32_t kReplacementChar = 0xFFFD;

// Result of looking at the UTF-8 sequence that starts at s[i].
enum class Utf8Status { Valid, Truncated, Invalid };
struct Utf8Seq {
  Utf8Status status;
  // Valid: bytes in the sequence; Truncated: bytes present; Invalid: bytes of the longest
  // well-formed start (at least 1), which decoders replace by one U+FFFD.
  uint32_t len;
  uint32_t cp;  // Valid only
};
// Well-formedness per Unicode Table 3-7: no overlongs, no surrogates, nothing past U+10FFFF.
// Truncated means s ends inside an otherwise well-formed sequence.
Utf8Seq utf8_at(std::string_view s, size_t i);

// Decodes the code point at s[i] and advances i; an ill-formed byte decodes as U+FFFD (1 byte).
uint32_t next_cp(std::string_view s, size_t& i);

void append_utf8(std::string& out, uint32_t cp);

// GPT-2's byte-level alphabet: every byte stands for a printable code point (U+0021..U+0143).
uint32_t byte_to_cp(uint8_t b);
int cp_to_byte(uint32_t cp);                 // -1 when cp stands for no byte
const std::string& byte_to_utf8(uint8_t b);  // UTF-8 of byte_to_cp(b)

}  // namespace fasa::unicode
