// UTF-8 validation of prompts and the streaming detokenizer.
#include <cstring>

#include "fasa/tokenizer/tokenizer.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa {

using unicode::Utf8Status;

int64_t find_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII fast path: 8 bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t word;
      std::memcpy(&word, s.data() + i, sizeof(word));
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    const unicode::Utf8Seq seq = unicode::utf8_at(s, i);
    if (seq.status != Utf8Status::Valid) return static_cast<int64_t>(i);
    i += seq.len;
  }
  return -1;
}

namespace {

// Moves the complete characters at the front of `pending` to `out`. Ill-formed bytes become
// U+FFFD. A well-formed but unfinished sequence at the end stays in `pending` unless `final`.
void drain_utf8(std::string& pending, std::string& out, bool final) {
  size_t i = 0;
  while (i < pending.size()) {
    const unicode::Utf8Seq seq = unicode::utf8_at(pending, i);
    if (seq.status == Utf8Status::Valid) {
      out.append(pending, i, seq.len);
      i += seq.len;
    } else if (seq.status == Utf8Status::Truncated && !final) {
      break;
    } else {
      unicode::append_utf8(out, unicode::kReplacementChar);
      i += seq.len;
    }
  }
  pending.erase(0, i);
}

}  // namespace

std::string StreamDecoder::push(int32_t id) {
  pending_ += tok_.token_to_bytes(id, show_special_);
  std::string out;
  drain_utf8(pending_, out, /*final=*/false);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  drain_utf8(pending_, out, /*final=*/true);
  return out;
}

}  // namespace fasa
