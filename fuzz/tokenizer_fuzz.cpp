// Fuzz target: the tokenizers (tokenizer/), byte-level BPE under each pre-tokenizer kind and
// SentencePiece-style with and without the space prefix, each on a small fixed vocabulary.
// Input: byte 0 picks the vocabulary, byte 1 the flags, the rest is the text (or, with flag 4,
// token ids to decode). Contract and properties:
//   - encode throws fasa::Error exactly when the text is not valid UTF-8, else returns ids in
//     [0, n_vocab); with add_bos it is BOS (if the vocabulary adds one) + the same ids;
//   - decoding gives the text back (BPE: byte for byte, special tokens shown; SentencePiece:
//     U+2581 comes back as a space, and with the space prefix only for text without specials);
//   - StreamDecoder's pieces are valid UTF-8 and equal the tokens' bytes with ill-formed
//     sequences replaced;
//   - decoding arbitrary ids returns or throws fasa::Error (an id out of range).
#include <array>
#include <memory>

#include "fasa/core/error.h"
#include "fasa/tokenizer/bpe.h"
#include "fasa/tokenizer/spm.h"
#include "fasa/tokenizer/tokenizer.h"
#include "fasa/tokenizer/unicode.h"
#include "fuzz_util.h"

namespace fasa::fuzz {
namespace {

constexpr std::string_view kSpmSpace = "\xe2\x96\x81";  // U+2581

// Ids 0..3 specials, then the 256 byte characters, then one token per merge.
BpeConfig bpe_config(const std::string& pre) {
  BpeConfig cfg;
  cfg.pre = pre;
  cfg.tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool>"};
  cfg.token_types = {3, 3, 3, 4};
  for (int b = 0; b < 256; ++b) {
    cfg.tokens.push_back(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
    cfg.token_types.push_back(1);
  }
  // "Ġ" is the space, "Ċ" the newline of byte-level BPE.
  const char* merges[] = {"t h",
                          "th e",
                          "\xc4\xa0 th",
                          "\xc4\xa0th e",
                          "i n",
                          "\xc4\xa0 in",
                          "e r",
                          "o n",
                          "a n",
                          "an d",
                          "\xc4\xa0 and",
                          "1 2",
                          "12 3",
                          "0 0",
                          "\xc4\xa0 \xc4\xa0",
                          "\xc4\x8a \xc4\x8a",
                          "' s",
                          "' t",
                          "r e",
                          "\xc3\x83 \xc2\xa9",
                          "\xc4\xa0 \xc3\x83\xc2\xa9",
                          "h e",
                          "l l",
                          "he ll",
                          "hell o",
                          "w o",
                          "wo r",
                          "l d",
                          "wor ld",
                          "\xc4\xa0 world"};
  for (const std::string m : merges) {
    const size_t sp = m.find(' ');
    const std::string joined = m.substr(0, sp) + m.substr(sp + 1);
    bool have = false;
    for (const std::string& t : cfg.tokens) have = have || t == joined;
    if (!have) {
      cfg.tokens.push_back(joined);
      cfg.token_types.push_back(1);
    }
    cfg.merges.push_back(m);
  }
  cfg.bos_id = 1;
  cfg.eos_id = 0;
  cfg.eot_id = 2;
  return cfg;
}

// Ids 0..4 specials, 5..260 the byte tokens <0xXX>, then characters and pieces by score.
SpmConfig spm_config(bool space_prefix) {
  SpmConfig cfg;
  auto add = [&](const std::string& text, float score, int32_t type) {
    cfg.tokens.push_back(text);
    cfg.scores.push_back(score);
    cfg.token_types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  add("<start_of_turn>", 0, 3);
  add("<tool>", 0, 4);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, 6);
  const char* chars[] =
      {"\xe2\x96\x81", "h",           "e", "l", "o", "w", "r", "d", "a", "n", "t", "1", "2",
       "\xc3\xa9",     "\xe4\xb8\xad"};
  for (const char* c : chars) add(c, -1, 1);
  const std::pair<const char*, float> pieces[] = {{"he", -3},
                                                  {"ll", -4},
                                                  {"hell", -5},
                                                  {"hello", -6},
                                                  {"\xe2\x96\x81h", -7},
                                                  {"\xe2\x96\x81hello", -8},
                                                  {"wo", -9},
                                                  {"or", -9},
                                                  {"wor", -10},
                                                  {"ld", -11},
                                                  {"world", -12},
                                                  {"\xe2\x96\x81world", -13},
                                                  {"an", -14},
                                                  {"and", -15},
                                                  {"\xe2\x96\x81\xe2\x96\x81", -16},
                                                  {"12", -17},
                                                  {"\xe2\x96\x81\xc3\xa9", -18}};
  for (const auto& [text, score] : pieces) add(text, score, 1);
  cfg.bos_id = 1;
  cfg.eos_id = 2;
  cfg.unk_id = 0;
  cfg.add_bos = true;
  cfg.add_space_prefix = space_prefix;
  return cfg;
}

struct Vocab {
  std::unique_ptr<Tokenizer> tok;
  bool spm = false;
  bool space_prefix = false;
};

const std::array<Vocab, 7>& vocabs() {
  static const std::array<Vocab, 7> v = [] {
    std::array<Vocab, 7> out;
    const char* pres[] = {"smollm", "gpt2", "llama3", "qwen2", "default"};
    for (int i = 0; i < 5; ++i) out[i].tok = make_bpe_tokenizer(bpe_config(pres[i]));
    for (int i = 0; i < 2; ++i) {
      out[5 + i].tok = make_spm_tokenizer(spm_config(i == 1));
      out[5 + i].spm = true;
      out[5 + i].space_prefix = i == 1;
    }
    return out;
  }();
  return v;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s.substr(i, from.size()) == from) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

// Ill-formed UTF-8 replaced by U+FFFD as StreamDecoder does (a truncated sequence at the end too).
std::string repaired(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unicode::Utf8Seq seq = unicode::utf8_at(s, i);
    if (seq.status == unicode::Utf8Status::Valid) {
      out.append(s.substr(i, seq.len));
    } else {
      unicode::append_utf8(out, unicode::kReplacementChar);
    }
    i += seq.len;
  }
  return out;
}

void check_stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool show_special) {
  StreamDecoder stream(tok, show_special);
  std::string streamed, raw;
  for (const int32_t id : ids) {
    const std::string piece = stream.push(id);
    FASA_FUZZ_EXPECT(find_invalid_utf8(piece) < 0);
    streamed += piece;
    raw += tok.token_to_bytes(id, show_special);
  }
  const std::string rest = stream.flush();
  FASA_FUZZ_EXPECT(find_invalid_utf8(rest) < 0);
  FASA_FUZZ_EXPECT(streamed + rest == repaired(raw));
}

// Whether a special token's text (SpecialTokenSplitter's: control, user-defined, unknown) occurs.
bool contains_special_text(const Tokenizer& tok, std::string_view text) {
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const TokenType t = tok.token_type(id);
    if ((t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) &&
        text.find(tok.token_text(id)) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

void check_encode(const Vocab& v, std::string_view text, bool add_bos, bool parse_special) {
  const Tokenizer& tok = *v.tok;
  const bool valid = find_invalid_utf8(text) < 0;
  std::vector<int32_t> ids;
  try {
    ids = tok.encode(text, false, parse_special);
  } catch (const Error&) {
    FASA_FUZZ_EXPECT(!valid);
    return;
  }
  FASA_FUZZ_EXPECT(valid);
  for (const int32_t id : ids) {
    FASA_FUZZ_EXPECT(id >= 0 && id < tok.n_vocab());
    tok.token_text(id);
    tok.token_type(id);
  }
  if (add_bos) {
    std::vector<int32_t> with_bos = tok.encode(text, true, parse_special);
    std::vector<int32_t> want;
    if (tok.adds_bos() && tok.bos_id() >= 0) want.push_back(tok.bos_id());
    want.insert(want.end(), ids.begin(), ids.end());
    FASA_FUZZ_EXPECT(with_bos == want);
  }
  const std::string decoded = tok.decode(ids, /*show_special=*/true);
  if (!v.spm) {
    FASA_FUZZ_EXPECT(decoded == text);
  } else if (!v.space_prefix) {
    FASA_FUZZ_EXPECT(decoded == replace_all(text, kSpmSpace, " "));
  } else if (!contains_special_text(tok, text)) {
    FASA_FUZZ_EXPECT(decoded == replace_all(text, kSpmSpace, " "));
  }
  check_stream(tok, ids, parse_special);
}

void check_decode_ids(const Tokenizer& tok, const uint8_t* data, size_t size, bool show_special) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < size; i += 2) {
    ids.push_back(static_cast<int16_t>(data[i] | (data[i + 1] << 8)));  // some out of range
  }
  bool in_range = true;
  for (const int32_t id : ids) in_range = in_range && id >= 0 && id < tok.n_vocab();
  try {
    tok.decode(ids, show_special);
  } catch (const Error&) {
    FASA_FUZZ_EXPECT(!in_range);
    return;
  }
  FASA_FUZZ_EXPECT(in_range);
  check_stream(tok, ids, show_special);
}

void run(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const Vocab& v = vocabs()[data[0] % vocabs().size()];
  const uint8_t flags = data[1];
  if (flags & 4) {
    check_decode_ids(*v.tok, data + 2, size - 2, flags & 2);
  } else {
    check_encode(v, as_text(data + 2, size - 2), flags & 1, flags & 2);
  }
}

}  // namespace
}  // namespace fasa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fasa::fuzz::run(data, size);
  return 0;
}
