// Pre-tokenizers. Every pre-type is a list of stages; each stage re-splits the pieces the
// previous one produced (a piece boundary is never crossed later), as llama.cpp applies its
// regex list. A regex stage yields both its matches and the text between them as pieces.
//
// Character classes follow llama.cpp: \p{X} is the code point's general-category group (our
// Unicode 15.1 table) and \s is White_Space. Where llama.cpp runs std::regex rather than
// hand-written code, it first maps each non-ASCII code point to one stand-in byte per class
// (non-ASCII whitespace to \v); the stages below reproduce the matches that gives.
#include "fasa/tokenizer/pretokenize.h"

#include <cstdint>

#include "fasa/core/error.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa {

namespace {

using namespace unicode;

constexpr uint32_t kNoCp = 0xFFFFFFFF;  // "past the end of the piece"

struct Range {
  uint32_t begin, end;  // code point indices
};

struct Text {
  std::vector<uint32_t> cps;
  std::vector<uint16_t> flags;
  std::vector<uint32_t> offs;  // byte offset of each code point, plus the end

  explicit Text(std::string_view s) {
    cps.reserve(s.size());
    offs.reserve(s.size() + 1);
    size_t i = 0;
    while (i < s.size()) {
      offs.push_back(static_cast<uint32_t>(i));
      cps.push_back(next_cp(s, i));
    }
    offs.push_back(static_cast<uint32_t>(s.size()));
    flags.resize(cps.size());
    for (size_t k = 0; k < cps.size(); ++k) flags[k] = unicode::flags(cps[k]);
  }
};

// Looks at one piece [begin, end) and cuts it into consecutive words.
class Cutter {
 public:
  Cutter(const Text& t, Range r, std::vector<Range>& out)
      : t_(t), begin_(r.begin), end_(r.end), prev_(r.begin), out_(out) {}
  uint32_t cp(uint32_t pos) const { return pos >= begin_ && pos < end_ ? t_.cps[pos] : kNoCp; }
  uint16_t fl(uint32_t pos) const { return pos >= begin_ && pos < end_ ? t_.flags[pos] : 0; }
  uint32_t begin() const { return begin_; }
  uint32_t end() const { return end_; }
  // Ends the current word at `end`; returns its length (0 emits nothing).
  uint32_t cut(uint32_t end) {
    const uint32_t len = end - prev_;
    if (len > 0) out_.push_back({prev_, end});
    prev_ = end;
    return len;
  }

 private:
  const Text& t_;
  uint32_t begin_, end_, prev_;
  std::vector<Range>& out_;
};

bool is_ascii_digit(uint32_t cp) { return cp >= '0' && cp <= '9'; }

// \p{N} as llama.cpp's class mapping sees it: an ASCII digit, or a non-ASCII number that is
// not whitespace.
bool is_number_cls(const Text& t, uint32_t pos) {
  const uint32_t cp = t.cps[pos];
  if (cp < 0x80) return is_ascii_digit(cp);
  return (t.flags[pos] & kWhitespace) == 0 && (t.flags[pos] & kClassMask) == kNumber;
}

// [\p{P}\$\+<=>\^~\|] under the same mapping (note: no backquote).
bool is_default_punct(const Text& t, uint32_t pos) {
  const uint32_t cp = t.cps[pos];
  if (cp < 0x80) {
    switch (cp) {
      case '$':
      case '+':
      case '<':
      case '=':
      case '>':
      case '^':
      case '~':
      case '|': return true;
      default: return (t.flags[pos] & kClassMask) == kPunctuation;
    }
  }
  return (t.flags[pos] & kWhitespace) == 0 && (t.flags[pos] & kClassMask) == kPunctuation;
}

// A regex matching one code point or a maximal run of code points of a class.
template <typename Pred>
void split_class(const Text& t, const std::vector<Range>& in, std::vector<Range>& out, bool runs,
                 Pred pred) {
  for (const Range& r : in) {
    Cutter c(t, r, out);
    uint32_t pos = r.begin;
    while (pos < r.end) {
      if (!pred(t, pos)) {
        ++pos;
        continue;
      }
      c.cut(pos);
      ++pos;
      while (runs && pos < r.end && pred(t, pos)) ++pos;
      c.cut(pos);
    }
    c.cut(r.end);
  }
}

// [0-9][0-9][0-9], leftmost non-overlapping.
void split_ascii_digit_triples(const Text& t, const std::vector<Range>& in,
                               std::vector<Range>& out) {
  for (const Range& r : in) {
    Cutter c(t, r, out);
    uint32_t pos = r.begin;
    while (pos < r.end) {
      if (pos + 3 <= r.end && is_ascii_digit(t.cps[pos]) && is_ascii_digit(t.cps[pos + 1]) &&
          is_ascii_digit(t.cps[pos + 2])) {
        c.cut(pos);
        pos += 3;
        c.cut(pos);
      } else {
        ++pos;
      }
    }
    c.cut(r.end);
  }
}

constexpr uint16_t kWordish = kWhitespace | kLetter | kNumber;

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void split_gpt2(const Text& t, const std::vector<Range>& in, std::vector<Range>& out) {
  for (const Range& r : in) {
    Cutter c(t, r, out);
    uint32_t pos = r.begin;
    while (pos < r.end) {
      const uint32_t cp = c.cp(pos);
      if (cp == '\'' && pos + 1 < r.end) {
        const uint32_t n1 = c.cp(pos + 1);
        if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
          pos += c.cut(pos + 2);
          continue;
        }
        if (pos + 2 < r.end) {
          const uint32_t n2 = c.cp(pos + 2);
          if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
            pos += c.cut(pos + 3);
            continue;
          }
        }
      }
      // An optional leading ' ' joins a following letter, number or punctuation run.
      const uint16_t f = cp == ' ' ? c.fl(pos + 1) : c.fl(pos);
      const uint32_t skip = cp == ' ' ? 1 : 0;
      if (f & kLetter) {
        pos += skip;
        while (c.fl(pos) & kLetter) ++pos;
        c.cut(pos);
        continue;
      }
      if (f & kNumber) {
        pos += skip;
        while (c.fl(pos) & kNumber) ++pos;
        c.cut(pos);
        continue;
      }
      if (!(f & kWordish) && f != 0) {
        pos += skip;
        while (!(c.fl(pos) & kWordish) && c.fl(pos) != 0) ++pos;
        c.cut(pos);
        continue;
      }
      uint32_t n_ws = 0;
      while (c.fl(pos + n_ws) & kWhitespace) ++n_ws;
      if (n_ws > 1 && c.cp(pos + n_ws) != kNoCp) {  // \s+(?!\S): leave one for the next word
        pos += n_ws - 1;
        c.cut(pos);
        continue;
      }
      if (n_ws > 0) {
        pos += n_ws;
        c.cut(pos);
        continue;
      }
      c.cut(++pos);  // nothing matched: one code point alone
    }
    c.cut(r.end);
  }
}

uint32_t ascii_lower(uint32_t cp) { return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp; }

// Llama 3's alternatives, each tried at `pos`: on a match it cuts the word, moves pos past it
// and returns true.

// (?i:'s|'t|'re|'ve|'m|'ll|'d)
bool llama3_contraction(Cutter& c, uint32_t& pos) {
  if (c.cp(pos) != '\'' || pos + 1 >= c.end()) return false;
  const uint32_t n1 = ascii_lower(c.cp(pos + 1));
  if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
    pos += c.cut(pos + 2);
    return true;
  }
  if (pos + 2 < c.end()) {
    const uint32_t n2 = ascii_lower(c.cp(pos + 2));
    if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
      pos += c.cut(pos + 3);
      return true;
    }
  }
  return false;
}

// [^\r\n\p{L}\p{N}]?\p{L}+ then \p{N}{1,max_digits} (a longer number is cut in groups)
bool llama3_letters_or_digits(Cutter& c, uint32_t& pos, uint32_t max_digits) {
  const uint32_t cp = c.cp(pos);
  const uint16_t f = c.fl(pos);
  if (!(cp == '\r' || cp == '\n' || (f & kNumber))) {
    if ((f & kLetter) || (c.fl(pos + 1) & kLetter)) {  // one optional non-letter prefix
      ++pos;
      while (c.fl(pos) & kLetter) ++pos;
      c.cut(pos);
      return true;
    }
  }
  if (f & kNumber) {
    uint32_t group_start = pos;
    while (c.fl(pos) & kNumber) {
      if (++pos - group_start >= max_digits) {
        c.cut(pos);
        group_start = pos;
      }
    }
    c.cut(pos);
    return true;
  }
  return false;
}

//  ?[^\s\p{L}\p{N}]+[\r\n]*
bool llama3_punctuation(Cutter& c, uint32_t& pos) {
  const uint32_t cp = c.cp(pos);
  const uint16_t f = c.fl(pos);
  uint16_t f2 = cp == ' ' ? c.fl(pos + 1) : f;
  if ((f2 & kWordish) || f == 0) return false;
  pos += cp == ' ' ? 1 : 0;
  while (!(f2 & kWordish) && f2 != 0) f2 = c.fl(++pos);
  while (c.cp(pos) == '\r' || c.cp(pos) == '\n') ++pos;
  c.cut(pos);
  return true;
}

// \s*[\r\n]+|\s+(?!\S)|\s+
bool llama3_whitespace(Cutter& c, uint32_t& pos) {
  uint32_t n_ws = 0;
  uint32_t after_last_newline = 0;  // 0: none in the run
  while (c.fl(pos + n_ws) & kWhitespace) {
    const uint32_t w = c.cp(pos + n_ws);
    if (w == '\r' || w == '\n') after_last_newline = pos + n_ws + 1;
    ++n_ws;
  }
  if (after_last_newline > 0) {  // \s*[\r\n]+
    pos = after_last_newline;
  } else if (n_ws > 1 && c.cp(pos + n_ws) != kNoCp) {  // \s+(?!\S)
    pos += n_ws - 1;
  } else if (n_ws > 0) {
    pos += n_ws;
  } else {
    return false;
  }
  c.cut(pos);
  return true;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
void split_llama3(const Text& t, const std::vector<Range>& in, std::vector<Range>& out,
                  uint32_t max_digits) {
  for (const Range& r : in) {
    Cutter c(t, r, out);
    uint32_t pos = r.begin;
    while (pos < r.end) {
      if (llama3_contraction(c, pos) || llama3_letters_or_digits(c, pos, max_digits) ||
          llama3_punctuation(c, pos) || llama3_whitespace(c, pos)) {
        continue;
      }
      c.cut(++pos);  // nothing matched: one code point alone
    }
    c.cut(r.end);
  }
}

}  // namespace

PreTokenizerInfo pre_tokenizer_for(const std::string& name) {
  using K = PreTokenizerKind;
  if (name.empty() || name == "default") return {K::Default, false, false};
  for (const char* n : {"gpt2", "gpt-2", "phi-2", "mpt", "olmo", "jais"}) {
    if (name == n) return {K::Gpt2, false, false};
  }
  for (const char* n : {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone"}) {
    if (name == n) return {K::Starcoder, false, false};
  }
  for (const char* n : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral"}) {
    if (name == n) return {K::Llama3, true, true};
  }
  for (const char* n : {"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez"}) {
    if (name == n) return {K::Qwen2, false, false};
  }
  fail(
      "unsupported pre-tokenizer tokenizer.ggml.pre = '{}' (supported: default, gpt2, "
      "smollm/starcoder, llama-bpe/llama3, qwen2)",
      name);
}

std::vector<std::string_view> pre_tokenize(PreTokenizerKind kind, std::string_view text) {
  std::vector<std::string_view> words;
  if (text.empty()) return words;
  const Text t(text);
  std::vector<Range> a{{0, static_cast<uint32_t>(t.cps.size())}};
  std::vector<Range> b;
  auto stage = [&](auto&& fn) {
    b.clear();
    fn(a, b);
    a.swap(b);
  };
  switch (kind) {
    case PreTokenizerKind::Default:
      stage([&](auto& in, auto& out) { split_class(t, in, out, true, is_default_punct); });
      stage([&](auto& in, auto& out) { split_gpt2(t, in, out); });
      stage([&](auto& in, auto& out) { split_class(t, in, out, true, is_number_cls); });
      stage([&](auto& in, auto& out) { split_ascii_digit_triples(t, in, out); });
      break;
    case PreTokenizerKind::Gpt2: stage([&](auto& in, auto& out) { split_gpt2(t, in, out); }); break;
    case PreTokenizerKind::Starcoder:
      stage([&](auto& in, auto& out) { split_class(t, in, out, false, is_number_cls); });
      stage([&](auto& in, auto& out) { split_gpt2(t, in, out); });
      break;
    case PreTokenizerKind::Llama3:
      stage([&](auto& in, auto& out) { split_llama3(t, in, out, 3); });
      break;
    case PreTokenizerKind::Qwen2:
      stage([&](auto& in, auto& out) { split_llama3(t, in, out, 1); });
      break;
  }
  words.reserve(a.size());
  for (const Range& r : a) {
    words.push_back(text.substr(t.offs[r.begin], t.offs[r.end] - t.offs[r.begin]));
  }
  return words;
}

}  // namespace fasa
