// SentencePiece-style tokenizer, matching llama.cpp's for "llama"-type vocabularies:
//   1. special tokens are cut out of the text (special_tokens.h);
//   2. each remaining text fragment gets a leading space when add_space_prefix is set and the
//      fragment starts the text or follows a special token, and every space becomes U+2581 "▁";
//   3. the fragment starts as one symbol per UTF-8 character; the adjacent pair whose
//      concatenation is a vocabulary token with the highest score (leftmost on ties) merges until
//      no pair is a token;
//   4. a symbol that is not a token (a character missing from the vocabulary) becomes one byte
//      token <0xXX> per UTF-8 byte (else a one-byte token, else the unknown token).
// Decoding turns "▁" back into spaces and byte tokens into raw bytes.
#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>

#include "fasa/core/error.h"
#include "fasa/tokenizer/special_tokens.h"
#include "fasa/tokenizer/spm.h"
#include "fasa/tokenizer/token_index.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa {

namespace {

constexpr std::string_view kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's space

// "<0xXX>" (two hex digits, either case) -> the byte; -1 otherwise.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (const char c : text.substr(3, 2)) {
    value *= 16;
    if (c >= '0' && c <= '9') {
      value += c - '0';
    } else if (c >= 'A' && c <= 'F') {
      value += c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      value += c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return value;
}

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i, kSpace.size()) == kSpace) {
      out += ' ';
      i += kSpace.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

// A symbol of one fragment being merged.
struct SpmSymbol {
  uint32_t begin, len;  // bytes of the fragment; len 0: merged into its left neighbour
  int32_t prev, next;
  int32_t id;  // the token after a merge; -2: a single character, not looked up yet
};

// A queued merge of two adjacent symbols.
struct SpmBigram {
  float score;
  int32_t left, right;
  uint32_t len;  // bytes of the merged pair when it was queued
  int32_t id;    // the merged token
};

// One symbol per UTF-8 character of `text` (valid UTF-8), linked left to right.
std::vector<SpmSymbol> spm_characters(std::string_view text) {
  std::vector<SpmSymbol> sym;
  sym.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unicode::Utf8Seq seq = unicode::utf8_at(text, i);  // the text is valid UTF-8
    const auto len = static_cast<uint32_t>(std::max<uint32_t>(seq.len, 1));
    const auto idx = static_cast<int32_t>(sym.size());
    sym.push_back(
        {static_cast<uint32_t>(i), len, idx - 1, i + len < text.size() ? idx + 1 : -1, -2});
    i += len;
  }
  return sym;
}

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(SpmConfig cfg);
  SpmTokenizer(const SpmTokenizer&) = delete;  // index_ points into texts_
  SpmTokenizer& operator=(const SpmTokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special) const override {
    return encode(text, add_bos, SplitRule{parse_special});
  }
  std::vector<int32_t> encode_with_literals(
      std::string_view text, bool add_bos, const std::vector<TextRange>& literal,
      const std::vector<std::string>& markers) const override {
    return encode(text, add_bos, SplitRule{true, &literal, &markers});
  }
  std::string token_to_bytes(int32_t id, bool show_special) const override;
  std::string decode(const std::vector<int32_t>& ids, bool show_special) const override;
  const std::string& token_text(int32_t id) const override;
  TokenType token_type(int32_t id) const override;
  int32_t n_vocab() const override { return static_cast<int32_t>(texts_.size()); }
  int32_t bos_id() const override { return bos_; }
  int32_t eos_id() const override { return eos_; }
  bool adds_bos() const override { return add_bos_; }
  bool is_eog(int32_t id) const override {
    return id >= 0 && id < n_vocab() && eog_[static_cast<size_t>(id)];
  }
  int32_t find_token(std::string_view text) const override { return index_.find(text); }

 private:
  std::vector<int32_t> encode(std::string_view text, bool add_bos, const SplitRule& rule) const;
  void check_id(int32_t id) const;
  // Encodes one escaped text fragment ("▁" for spaces) and appends its ids.
  void encode_fragment(std::string_view text, std::vector<int32_t>& out) const;
  // Merges adjacent symbols of `text` into the highest-scoring tokens until no pair is a token.
  void merge_pairs(std::string_view text, std::vector<SpmSymbol>& sym) const;
  void append_bytes(std::string_view chars, std::vector<int32_t>& out) const;
  // The constructor's steps.
  void take_vocab(SpmConfig& cfg);
  void index_texts();
  void map_bytes(int32_t unk);
  void mark_eog(std::initializer_list<int32_t> ids);
  void make_pieces();

  std::vector<std::string> texts_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::vector<std::string> pieces_;      // bytes of each token, special text shown
  TokenIndex index_;                     // over texts_
  std::array<int32_t, 256> byte_ids_{};  // byte fallback per byte; -1: none
  SpecialTokenSplitter specials_;
  std::vector<uint8_t> eog_;
  int32_t bos_ = -1, eos_ = -1;
  bool add_bos_ = true;
  bool add_space_prefix_ = true;
};

SpmTokenizer::SpmTokenizer(SpmConfig cfg)
    : add_bos_(cfg.add_bos), add_space_prefix_(cfg.add_space_prefix) {
  take_vocab(cfg);
  index_texts();
  const int64_t n = static_cast<int64_t>(texts_.size());
  auto special_id = [&](int64_t id, const char* key) -> int32_t {
    if (id < -1 || id >= n) {
      fail("tokenizer.ggml.{} = {} is out of range (the vocabulary has {} tokens)", key, id, n);
    }
    return static_cast<int32_t>(id);
  };
  bos_ = special_id(cfg.bos_id, "bos_token_id");
  eos_ = special_id(cfg.eos_id, "eos_token_id");
  const int32_t unk = special_id(cfg.unk_id, "unknown_token_id");
  special_id(cfg.pad_id, "padding_token_id");
  const int32_t eot = special_id(cfg.eot_id, "eot_token_id");
  const int32_t eom = special_id(cfg.eom_id, "eom_token_id");
  if (add_bos_ && bos_ < 0) {
    fail("tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is not set");
  }
  map_bytes(unk);
  mark_eog({eos_, eot, eom});
  specials_ = SpecialTokenSplitter(texts_, types_, cfg.model_name);
  make_pieces();
}

// Texts, scores and types: as many of each, scores not NaN, types known.
void SpmTokenizer::take_vocab(SpmConfig& cfg) {
  const size_t n = cfg.tokens.size();
  if (n == 0) fail("tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX)) fail("tokenizer.ggml.tokens has too many entries");
  if (cfg.scores.size() != n) {
    fail("tokenizer.ggml.scores has {} entries but tokenizer.ggml.tokens has {}", cfg.scores.size(),
         n);
  }
  if (!cfg.token_types.empty() && cfg.token_types.size() != n) {
    fail("tokenizer.ggml.token_type has {} entries but tokenizer.ggml.tokens has {}",
         cfg.token_types.size(), n);
  }
  texts_ = std::move(cfg.tokens);
  scores_ = std::move(cfg.scores);
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(scores_[i])) fail("tokenizer.ggml.scores[{}] is NaN", i);
  }
  types_.assign(n, TokenType::Normal);
  for (size_t i = 0; i < cfg.token_types.size(); ++i) {
    const int32_t t = cfg.token_types[i];
    if (t < 0 || t > static_cast<int32_t>(TokenType::Byte)) {
      fail("tokenizer.ggml.token_type[{}] = {} is not a token type (0..6)", i, t);
    }
    types_[i] = static_cast<TokenType>(t);
  }
}

// Empty texts named as llama.cpp does, Byte tokens checked, and the text -> id index (texts
// unique).
void SpmTokenizer::index_texts() {
  for (size_t i = 0; i < texts_.size(); ++i) {
    if (texts_[i].empty()) texts_[i] = fmt::format("[EMPTY_{}]", i);  // as llama.cpp does
    if (types_[i] == TokenType::Byte && parse_byte_token(texts_[i]) < 0) {
      fail("tokenizer.ggml.tokens[{}] = {} has token type Byte but is not '<0xXX>'", i,
           quoted_token(texts_[i]));
    }
  }
  if (const int32_t dup = index_.build(&texts_); dup >= 0) {
    const auto again = std::find(texts_.begin() + dup + 1, texts_.end(), texts_[dup]);
    fail("tokenizer.ggml.tokens has a duplicate: {} is token {} and token {}",
         quoted_token(texts_[dup]), dup, again - texts_.begin());
  }
}

// Each byte's fallback token: <0xXX>, else the one-byte text, else unk.
void SpmTokenizer::map_bytes(int32_t unk) {
  for (int b = 0; b < 256; ++b) {
    int32_t id = find_token(fmt::format("<0x{:02X}>", b));
    if (id < 0) id = find_token(std::string(1, static_cast<char>(b)));
    byte_ids_[static_cast<size_t>(b)] = id >= 0 ? id : unk;
  }
}

// End of generation: the given ids (-1: none) and llama.cpp's end-of-turn texts, which become
// Control tokens like its forced control texts.
void SpmTokenizer::mark_eog(std::initializer_list<int32_t> ids) {
  eog_.assign(texts_.size(), 0);
  for (const int32_t id : ids) {
    if (id >= 0) eog_[static_cast<size_t>(id)] = 1;
  }
  for (size_t i = 0; i < texts_.size(); ++i) {
    if (is_eog_text(texts_[i])) eog_[i] = 1;
    if (is_forced_control_text(texts_[i])) types_[i] = TokenType::Control;  // as llama.cpp does
  }
}

// What each token decodes to.
void SpmTokenizer::make_pieces() {
  pieces_.resize(texts_.size());
  for (size_t i = 0; i < texts_.size(); ++i) {
    switch (types_[i]) {
      case TokenType::Control:
      case TokenType::Unknown:
      case TokenType::UserDefined: pieces_[i] = texts_[i]; break;
      case TokenType::Normal: pieces_[i] = unescape_spaces(texts_[i]); break;
      case TokenType::Byte:
        pieces_[i] = std::string(1, static_cast<char>(parse_byte_token(texts_[i])));
        break;
      case TokenType::Undefined:
      case TokenType::Unused: break;  // llama.cpp renders these as nothing
    }
  }
}

void SpmTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= n_vocab()) {
    fail("token id {} is out of range (the vocabulary has {} tokens)", id, n_vocab());
  }
}

std::string SpmTokenizer::token_to_bytes(int32_t id, bool show_special) const {
  check_id(id);
  const TokenType t = types_[static_cast<size_t>(id)];
  if (!show_special && (t == TokenType::Control || t == TokenType::Unknown)) return {};
  return pieces_[static_cast<size_t>(id)];
}

std::string SpmTokenizer::decode(const std::vector<int32_t>& ids, bool show_special) const {
  std::string out = Tokenizer::decode(ids, show_special);
  // The space encode put in front of the text is not part of it (llama.cpp strips one leading
  // space of the first token's piece; only that token's, even when it is an empty BOS).
  if (add_space_prefix_ && !ids.empty() && !out.empty() && out[0] == ' ' &&
      token_to_bytes(ids[0], show_special).rfind(' ', 0) == 0) {
    out.erase(0, 1);
  }
  return out;
}

const std::string& SpmTokenizer::token_text(int32_t id) const {
  check_id(id);
  return texts_[static_cast<size_t>(id)];
}

TokenType SpmTokenizer::token_type(int32_t id) const {
  check_id(id);
  return types_[static_cast<size_t>(id)];
}

void SpmTokenizer::append_bytes(std::string_view chars, std::vector<int32_t>& out) const {
  for (const char c : chars) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id < 0) {
      fail(
          "cannot encode byte 0x{:02X}: the vocabulary has no '<0x{:02X}>' token, no one-byte "
          "token and no unknown token",
          static_cast<uint8_t>(c), static_cast<uint8_t>(c));
    }
    out.push_back(id);
  }
}

void SpmTokenizer::encode_fragment(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<SpmSymbol> sym = spm_characters(text);
  if (sym.empty()) return;
  merge_pairs(text, sym);
  for (int32_t i = 0; i >= 0; i = sym[static_cast<size_t>(i)].next) {
    const SpmSymbol& s = sym[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(s.begin, s.len);
    const int32_t id = s.id == -2 ? find_token(piece) : s.id;
    if (id >= 0) {
      out.push_back(id);
    } else {
      append_bytes(piece, out);  // never merged: one character missing from the vocabulary
    }
  }
}

void SpmTokenizer::merge_pairs(std::string_view text, std::vector<SpmSymbol>& sym) const {
  // Max-heap on score; equal scores: the leftmost pair first.
  const auto lower = [](const SpmBigram& a, const SpmBigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::vector<SpmBigram> heap;
  const auto add_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const SpmSymbol& l = sym[static_cast<size_t>(left)];
    const uint32_t len = l.len + sym[static_cast<size_t>(right)].len;
    const int32_t id = find_token(text.substr(l.begin, len));
    if (id < 0) return;
    heap.push_back({scores_[static_cast<size_t>(id)], left, right, len, id});
    std::push_heap(heap.begin(), heap.end(), lower);
  };
  for (size_t i = 1; i < sym.size(); ++i) {
    add_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    const SpmBigram bg = heap.back();
    heap.pop_back();
    SpmSymbol& l = sym[static_cast<size_t>(bg.left)];
    SpmSymbol& r = sym[static_cast<size_t>(bg.right)];
    // Stale when either side has merged since the pair was queued.
    if (l.len == 0 || r.len == 0 || l.len + r.len != bg.len) continue;
    l.len += r.len;
    l.id = bg.id;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[static_cast<size_t>(r.next)].prev = bg.left;
    add_pair(l.prev, bg.left);
    add_pair(bg.left, l.next);
  }
}

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool add_bos,
                                          const SplitRule& rule) const {
  std::string escaped;
  auto encode_text = [&](std::string_view frag, bool after_special, std::vector<int32_t>& out) {
    escaped.clear();
    if (add_space_prefix_ && after_special) escaped += kSpace;
    for (const char c : frag) {
      if (c == ' ') {
        escaped += kSpace;
      } else {
        escaped += c;
      }
    }
    encode_fragment(escaped, out);
  };
  return encode_fragments(text, add_bos && add_bos_ ? bos_ : -1, specials_, rule, encode_text);
}

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(SpmConfig cfg) {
  return std::make_unique<SpmTokenizer>(std::move(cfg));
}

}  // namespace fasa
