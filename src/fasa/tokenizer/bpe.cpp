// Byte-level BPE, matching llama.cpp's tokenizer for gpt2-type vocabularies:
//   1. special tokens are cut out of the text (each special, longest text first, splits every
//      remaining text fragment at all its occurrences);
//   2. each text fragment is pre-tokenized into words (pretokenize.h);
//   3. each word's bytes map to GPT-2's printable alphabet, one symbol per byte, and the pair
//      of adjacent symbols with the lowest merge rank (leftmost on ties) merges until none is left.
#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <unordered_map>

#include "fasa/core/error.h"
#include "fasa/tokenizer/bpe.h"
#include "fasa/tokenizer/pretokenize.h"
#include "fasa/tokenizer/special_tokens.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa {

namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// A symbol of one word being merged: a byte's character, then the tokens merges make.
struct BpeSymbol {
  int32_t id;  // -1: the byte's character is not in the vocabulary
  int32_t prev, next;
  uint8_t byte;
  bool alive;
};

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeConfig cfg);

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
  const std::string& token_text(int32_t id) const override;
  TokenType token_type(int32_t id) const override;
  int32_t n_vocab() const override { return static_cast<int32_t>(texts_.size()); }
  int32_t bos_id() const override { return bos_; }
  int32_t eos_id() const override { return eos_; }
  bool adds_bos() const override { return add_bos_; }
  bool is_eog(int32_t id) const override {
    return id >= 0 && id < n_vocab() && eog_[static_cast<size_t>(id)];
  }
  int32_t find_token(std::string_view text) const override {
    const auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
  }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  // Per-call memo of word -> ids (words repeat a lot in prose).
  struct WordCache {
    std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> spans;
    std::vector<int32_t> ids;
  };

  std::vector<int32_t> encode(std::string_view text, bool add_bos, const SplitRule& rule) const;
  void check_id(int32_t id) const;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  // The word's bytes as one token, or -1 (pre-tokenizers that ignore merges look this up first).
  int32_t whole_word_id(std::string_view word) const;
  // Applies merges to adjacent symbols, lowest rank first (leftmost on ties), until none applies.
  void merge_pairs(std::vector<BpeSymbol>& sym) const;
  std::string render(int32_t id) const;
  // The constructor's steps.
  void take_vocab(BpeConfig& cfg);
  void read_merges(const std::vector<std::string>& merges);
  void mark_eog(std::initializer_list<int32_t> ids);

  std::vector<std::string> texts_;
  std::vector<TokenType> types_;
  std::vector<std::string> pieces_;  // bytes of each token, special text shown
  std::unordered_map<std::string_view, int32_t> ids_;
  std::array<int32_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, Merge> merges_;
  SpecialTokenSplitter specials_;
  std::vector<uint8_t> eog_;
  PreTokenizerInfo pre_;
  int32_t bos_ = -1, eos_ = -1;
  bool add_bos_ = false;
};

BpeTokenizer::BpeTokenizer(BpeConfig cfg) : pre_(pre_tokenizer_for(cfg.pre)) {
  take_vocab(cfg);
  read_merges(cfg.merges);
  const int64_t n = static_cast<int64_t>(texts_.size());
  auto special_id = [&](int64_t id, const char* key) -> int32_t {
    if (id < -1 || id >= n) {
      fail("tokenizer.ggml.{} = {} is out of range (the vocabulary has {} tokens)", key, id, n);
    }
    return static_cast<int32_t>(id);
  };
  bos_ = special_id(cfg.bos_id, "bos_token_id");
  eos_ = special_id(cfg.eos_id, "eos_token_id");
  const int32_t eot = special_id(cfg.eot_id, "eot_token_id");
  const int32_t eom = special_id(cfg.eom_id, "eom_token_id");
  add_bos_ = cfg.add_bos < 0 ? pre_.default_add_bos : cfg.add_bos != 0;
  if (add_bos_ && bos_ < 0) {
    fail("tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is not set");
  }
  mark_eog({eos_, eot, eom});
  specials_ = SpecialTokenSplitter(texts_, types_, cfg.model_name);
  pieces_.resize(texts_.size());
  for (size_t i = 0; i < texts_.size(); ++i) pieces_[i] = render(static_cast<int32_t>(i));
}

// Texts (empty ones named as llama.cpp does, no duplicates) and types, the text -> id map and
// each byte's token.
void BpeTokenizer::take_vocab(BpeConfig& cfg) {
  const size_t n = cfg.tokens.size();
  if (n == 0) fail("tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX)) fail("tokenizer.ggml.tokens has too many entries");
  if (!cfg.token_types.empty() && cfg.token_types.size() != n) {
    fail("tokenizer.ggml.token_type has {} entries but tokenizer.ggml.tokens has {}",
         cfg.token_types.size(), n);
  }
  texts_ = std::move(cfg.tokens);
  types_.assign(n, TokenType::Normal);
  for (size_t i = 0; i < cfg.token_types.size(); ++i) {
    const int32_t t = cfg.token_types[i];
    if (t < 0 || t > static_cast<int32_t>(TokenType::Byte)) {
      fail("tokenizer.ggml.token_type[{}] = {} is not a token type (0..6)", i, t);
    }
    types_[i] = static_cast<TokenType>(t);
  }
  for (size_t i = 0; i < n; ++i) {
    if (texts_[i].empty()) texts_[i] = fmt::format("[EMPTY_{}]", i);  // as llama.cpp does
  }
  ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto [it, fresh] = ids_.emplace(texts_[i], static_cast<int32_t>(i));
    if (!fresh) {
      fail("tokenizer.ggml.tokens has a duplicate: {} is token {} and token {}",
           quoted_token(texts_[i]), it->second, i);
    }
  }
  for (int b = 0; b < 256; ++b) {
    byte_ids_[static_cast<size_t>(b)] = find_token(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
  }
}

// "left right" pairs of tokens whose concatenation is a token; the first rank of a pair wins.
void BpeTokenizer::read_merges(const std::vector<std::string>& merges) {
  merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string& m = merges[r];
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos) {
      fail("tokenizer.ggml.merges[{}] = {} is not 'left right'", r, quoted_token(m));
    }
    const std::string_view left(m.data(), space);
    const std::string_view right(m.data() + space + 1, m.size() - space - 1);
    const int32_t l = find_token(left), rt = find_token(right);
    if (l < 0 || rt < 0) {
      fail("tokenizer.ggml.merges[{}] = {} references unknown token {}", r, quoted_token(m),
           quoted_token(l < 0 ? left : right));
    }
    const int32_t result = find_token(std::string(left) + std::string(right));
    if (result < 0) {
      fail("tokenizer.ggml.merges[{}] = {} makes {}, which is not a token", r, quoted_token(m),
           quoted_token(std::string(left) + std::string(right)));
    }
    merges_.emplace(pair_key(l, rt), Merge{static_cast<int32_t>(r), result});  // first rank wins
  }
}

// End of generation: the given ids (-1: none) and llama.cpp's end-of-turn texts; forced control
// texts become Control tokens.
void BpeTokenizer::mark_eog(std::initializer_list<int32_t> ids) {
  eog_.assign(texts_.size(), 0);
  for (int32_t id : ids) {
    if (id >= 0) eog_[static_cast<size_t>(id)] = 1;
  }
  for (size_t i = 0; i < texts_.size(); ++i) {
    if (is_eog_text(texts_[i])) eog_[i] = 1;
    if (is_forced_control_text(texts_[i])) types_[i] = TokenType::Control;  // as llama.cpp does
  }
}

std::string BpeTokenizer::render(int32_t id) const {
  const std::string& text = texts_[static_cast<size_t>(id)];
  switch (types_[static_cast<size_t>(id)]) {
    case TokenType::Control:
    case TokenType::Unknown:
    case TokenType::UserDefined: return text;
    case TokenType::Byte:
      if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>' &&
          std::isxdigit(static_cast<unsigned char>(text[3])) &&
          std::isxdigit(static_cast<unsigned char>(text[4]))) {
        return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
      }
      [[fallthrough]];
    case TokenType::Normal: {
      std::string out;
      size_t i = 0;
      while (i < text.size()) {
        const size_t start = i;
        const int byte = unicode::cp_to_byte(unicode::next_cp(text, i));
        if (byte >= 0) {
          out.push_back(static_cast<char>(byte));
        } else {
          out.append(text, start, i - start);  // not in the byte alphabet: keep as is
        }
      }
      return out;
    }
    case TokenType::Undefined:
    case TokenType::Unused: break;
  }
  return {};
}

void BpeTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= n_vocab()) {
    fail("token id {} is out of range (the vocabulary has {} tokens)", id, n_vocab());
  }
}

std::string BpeTokenizer::token_to_bytes(int32_t id, bool show_special) const {
  check_id(id);
  const TokenType t = types_[static_cast<size_t>(id)];
  if (!show_special && (t == TokenType::Control || t == TokenType::Unknown)) return {};
  return pieces_[static_cast<size_t>(id)];
}

const std::string& BpeTokenizer::token_text(int32_t id) const {
  check_id(id);
  return texts_[static_cast<size_t>(id)];
}

TokenType BpeTokenizer::token_type(int32_t id) const {
  check_id(id);
  return types_[static_cast<size_t>(id)];
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (pre_.ignore_merges) {
    if (const int32_t id = whole_word_id(word); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  const auto n = static_cast<int32_t>(word.size());
  std::vector<BpeSymbol> sym(static_cast<size_t>(n));  // [n] one per byte, linked
  for (int32_t i = 0; i < n; ++i) {
    const auto b = static_cast<uint8_t>(word[static_cast<size_t>(i)]);
    sym[static_cast<size_t>(i)] = {byte_ids_[b], i - 1, i + 1 < n ? i + 1 : -1, b, true};
  }
  merge_pairs(sym);
  for (int32_t i = 0; i >= 0 && i < n; i = sym[static_cast<size_t>(i)].next) {
    const BpeSymbol& s = sym[static_cast<size_t>(i)];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    // llama.cpp's fallback for a character missing from the vocabulary: each of its UTF-8
    // bytes as a one-byte token, where such a token exists (usually none does).
    for (char c : unicode::byte_to_utf8(s.byte)) {
      const int32_t id = find_token(std::string_view(&c, 1));
      if (id >= 0) out.push_back(id);
    }
  }
}

int32_t BpeTokenizer::whole_word_id(std::string_view word) const {
  std::string encoded;
  for (char c : word) encoded += unicode::byte_to_utf8(static_cast<uint8_t>(c));
  return find_token(encoded);
}

void BpeTokenizer::merge_pairs(std::vector<BpeSymbol>& sym) const {
  struct Bigram {
    int32_t rank, left, right, left_id, right_id, result;
  };
  // Min-heap on (rank, left position).
  const auto later = [](const Bigram& a, const Bigram& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  std::vector<Bigram> heap;
  const auto add_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t l = sym[static_cast<size_t>(left)].id, r = sym[static_cast<size_t>(right)].id;
    if (l < 0 || r < 0) return;
    const auto it = merges_.find(pair_key(l, r));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, right, l, r, it->second.result});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  const auto n = static_cast<int32_t>(sym.size());
  for (int32_t i = 0; i + 1 < n; ++i) add_pair(i, i + 1);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Bigram bg = heap.back();
    heap.pop_back();
    BpeSymbol& l = sym[static_cast<size_t>(bg.left)];
    BpeSymbol& r = sym[static_cast<size_t>(bg.right)];
    // Stale when either side has merged since the pair was queued.
    if (!l.alive || !r.alive || l.next != bg.right || l.id != bg.left_id || r.id != bg.right_id) {
      continue;
    }
    l.id = bg.result;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) sym[static_cast<size_t>(r.next)].prev = bg.left;
    add_pair(l.prev, bg.left);
    add_pair(bg.left, l.next);
  }
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_bos,
                                          const SplitRule& rule) const {
  WordCache cache;
  auto encode_text = [&](std::string_view frag, bool, std::vector<int32_t>& out) {
    for (const std::string_view word : pre_tokenize(pre_.kind, frag)) {
      const auto it = cache.spans.find(word);
      if (it != cache.spans.end()) {
        const auto [start, len] = it->second;
        out.insert(out.end(), cache.ids.begin() + start, cache.ids.begin() + start + len);
        continue;
      }
      const size_t before = out.size();
      encode_word(word, out);
      const auto start = static_cast<uint32_t>(cache.ids.size());
      cache.ids.insert(cache.ids.end(), out.begin() + static_cast<std::ptrdiff_t>(before),
                       out.end());
      const auto len = static_cast<uint32_t>(out.size() - before);
      cache.spans.emplace(word, std::make_pair(start, len));
    }
  };
  return encode_fragments(text, add_bos && add_bos_ ? bos_ : -1, specials_, rule, encode_text);
}

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(BpeConfig cfg) {
  return std::make_unique<BpeTokenizer>(std::move(cfg));
}

}  // namespace fasa
