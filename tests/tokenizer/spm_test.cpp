// SentencePiece-style tokenizer on a tiny hand-made vocabulary: score-ordered merging, byte
// fallback, the space prefix, special tokens, decoding, and every kind of bad vocabulary
// metadata, both as plain data and through a GGUF file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/spm.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {
namespace {

constexpr int32_t kByte0 = 6;  // <0x00> is token 6, <0xFF> token 261

// Ids: 0..5 specials, 6..261 byte tokens, then characters and merged pieces with their scores.
SpmConfig tiny_config() {
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
  add("<end_of_turn>", 0, 3);
  add("<u>", 0, 4);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, 6);
  for (const char* c : {"\xe2\x96\x81", "h", "e", "l", "o", "w", "r", "d", "a", "b", "c", "x"}) {
    add(c, -1, 1);
  }
  add("\xc3\xa9", -1, 1);  // é
  const std::vector<std::pair<std::string, float>> pieces = {{"ll", -5},
                                                             {"he", -4},
                                                             {"hell", -6},
                                                             {"hello", -7},
                                                             {"\xe2\x96\x81w", -8},
                                                             {"or", -9},
                                                             {"\xe2\x96\x81wor", -10},
                                                             {"ld", -11},
                                                             {"\xe2\x96\x81world", -12},
                                                             {"\xe2\x96\x81hello", -13},
                                                             {"ab", -20},
                                                             {"bc", -15},
                                                             {"aa", -30},
                                                             {"caf", -40},
                                                             {"\xe2\x96\x81\xe2\x96\x81", -50}};
  for (const auto& [text, score] : pieces) add(text, score, 1);
  cfg.bos_id = 1;
  cfg.eos_id = 2;
  cfg.unk_id = 0;
  cfg.add_bos = false;
  cfg.add_space_prefix = false;
  return cfg;
}

std::vector<int32_t> ids_of(const Tokenizer& tok, const std::vector<std::string>& texts) {
  std::vector<int32_t> out;
  for (const std::string& t : texts) {
    const int32_t id = tok.find_token(t);
    EXPECT_GE(id, 0) << "no token '" << t << "'";
    out.push_back(id);
  }
  return out;
}

TEST(TokenizerSpm, MergesHighestScoreFirst) {
  const auto tok = make_spm_tokenizer(tiny_config());
  EXPECT_EQ(tok->encode("hello", false, false), ids_of(*tok, {"hello"}));
  // "bc" (-15) beats "ab" (-20) although "ab" is further left.
  EXPECT_EQ(tok->encode("abc", false, false), ids_of(*tok, {"a", "bc"}));
  // Equal scores merge leftmost first.
  EXPECT_EQ(tok->encode("aaa", false, false), ids_of(*tok, {"aa", "a"}));
  EXPECT_EQ(tok->encode("aaaa", false, false), ids_of(*tok, {"aa", "aa"}));
  // Spaces are "▁" and merge like any character, across words too.
  EXPECT_EQ(tok->encode("hello world", false, false), ids_of(*tok, {"hello", "\xe2\x96\x81world"}));
  EXPECT_EQ(tok->encode("  x", false, false), ids_of(*tok, {"\xe2\x96\x81\xe2\x96\x81", "x"}));
  EXPECT_EQ(tok->encode("", false, false), std::vector<int32_t>{});
}

TEST(TokenizerSpm, ByteFallbackForMissingCharacters) {
  const auto tok = make_spm_tokenizer(tiny_config());
  // é is a token; ü (C3 BC) and 中 (E4 B8 AD) are not: one byte token per UTF-8 byte.
  EXPECT_EQ(tok->encode("\xc3\xa9", false, false), ids_of(*tok, {"\xc3\xa9"}));
  EXPECT_EQ(tok->encode("h\xc3\xbc\xe4\xb8\xad", false, false),
            (std::vector<int32_t>{tok->find_token("h"), kByte0 + 0xC3, kByte0 + 0xBC, kByte0 + 0xE4,
                                  kByte0 + 0xB8, kByte0 + 0xAD}));
  EXPECT_EQ(tok->decode(tok->encode("h\xc3\xbc\xe4\xb8\xad", false, false)),
            "h\xc3\xbc\xe4\xb8\xad");

  // Without byte tokens: a one-byte token if there is one, else the unknown token.
  SpmConfig cfg = tiny_config();
  for (int b = 0; b < 256; ++b) cfg.token_types[kByte0 + b] = 1, cfg.tokens[kByte0 + b] += "!";
  cfg.tokens[kByte0 + 0xBC] = "\xbc";
  const auto no_bytes = make_spm_tokenizer(cfg);
  EXPECT_EQ(no_bytes->encode("\xc3\xbc", false, false), (std::vector<int32_t>{0, kByte0 + 0xBC}));
  // Without those either: a clear error.
  cfg.unk_id = -1;
  const auto no_unk = make_spm_tokenizer(cfg);
  try {
    no_unk->encode("a\xe4\xb8\xad", false, false);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot encode byte 0xE4"), std::string::npos) << e.what();
  }
}

TEST(TokenizerSpm, SpacePrefixAfterTextStartAndSpecials) {
  SpmConfig cfg = tiny_config();
  cfg.add_space_prefix = true;
  const auto tok = make_spm_tokenizer(cfg);
  const int32_t sot = 3, u = 5;
  EXPECT_EQ(tok->encode("hello world", false, false),
            ids_of(*tok, {"\xe2\x96\x81hello", "\xe2\x96\x81world"}));
  // Every text fragment after a special token (control or user-defined) gets the space too.
  const std::vector<int32_t> hello = ids_of(*tok, {"\xe2\x96\x81hello"});
  const std::vector<int32_t> space_x = ids_of(*tok, {"\xe2\x96\x81", "x"});
  EXPECT_EQ(tok->encode("<start_of_turn>hello<u>x", false, true),
            (std::vector<int32_t>{sot, hello[0], u, space_x[0], space_x[1]}));
  // Decoding drops the one space encode added in front of the text...
  for (const std::string text : {"hello world", " hello", "x  y "}) {
    EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text) << text;
  }
  // ... but, as in llama.cpp, not those after special tokens, nor after a leading BOS.
  EXPECT_EQ(tok->decode(tok->encode("<u>hello", false, false)), "<u> hello");
  EXPECT_EQ(tok->decode({1, hello[0]}), " hello");
}

TEST(TokenizerSpm, SpecialTokens) {
  const auto tok = make_spm_tokenizer(tiny_config());
  const std::vector<int32_t> parsed = tok->encode("<start_of_turn>hello<end_of_turn>", false, true);
  EXPECT_EQ(parsed, (std::vector<int32_t>{3, tok->find_token("hello"), 4}));
  // Without parse_special control texts are plain text (here: byte fallback for '<', '_', ...),
  // but user-defined tokens still match.
  const std::vector<int32_t> plain = tok->encode("<end_of_turn>", false, false);
  EXPECT_GT(plain.size(), 5u);
  EXPECT_EQ(tok->decode(plain), "<end_of_turn>");
  EXPECT_EQ(tok->encode("a<u>b", false, false),
            (std::vector<int32_t>{tok->find_token("a"), 5, tok->find_token("b")}));
  // Decoding hides control tokens unless asked; user-defined text always shows.
  EXPECT_EQ(tok->decode(parsed), "hello");
  EXPECT_EQ(tok->decode(parsed, true), "<start_of_turn>hello<end_of_turn>");
  EXPECT_EQ(tok->token_to_bytes(5), "<u>");
  EXPECT_EQ(tok->token_to_bytes(0), "");
  EXPECT_EQ(tok->token_to_bytes(0, true), "<unk>");
  EXPECT_EQ(tok->token_to_bytes(kByte0 + 0x41), "A");
  EXPECT_EQ(tok->token_to_bytes(tok->find_token("\xe2\x96\x81world")), " world");
  EXPECT_EQ(tok->token_text(tok->find_token("\xe2\x96\x81world")), "\xe2\x96\x81world");
  EXPECT_EQ(tok->token_type(kByte0), TokenType::Byte);
}

TEST(TokenizerSpm, RoundTripsAnyText) {
  const auto tok = make_spm_tokenizer(tiny_config());
  for (const std::string text :
       {"hello world", "  x\n\ty  ", "caf\xc3\xa9 \xe4\xb8\xad 123",
        "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9", "it's", "<0x41>"}) {
    EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text);
    EXPECT_EQ(tok->decode(tok->encode(text, false, true)), text);
  }
  // A literal U+2581 in the text is SentencePiece's space: it comes back as a space.
  EXPECT_EQ(tok->decode(tok->encode("\xe2\x96\x81 x", false, false)), "  x");
}

TEST(TokenizerSpm, StreamDecoderJoinsByteTokens) {
  const auto tok = make_spm_tokenizer(tiny_config());
  const std::vector<int32_t> ids = tok->encode("\xe4\xb8\xad", false, false);
  ASSERT_EQ(ids.size(), 3u);
  StreamDecoder dec(*tok);
  EXPECT_EQ(dec.push(ids[0]), "");
  EXPECT_EQ(dec.push(ids[1]), "");
  EXPECT_EQ(dec.push(ids[2]), "\xe4\xb8\xad");
  EXPECT_EQ(dec.push(kByte0 + 0xE4), "");
  EXPECT_EQ(dec.flush(), "\xef\xbf\xbd");  // an unfinished character becomes U+FFFD
}

TEST(TokenizerSpm, BosAndEndOfGeneration) {
  SpmConfig cfg = tiny_config();
  EXPECT_EQ(make_spm_tokenizer(cfg)->encode("a", true, false),
            std::vector<int32_t>{make_spm_tokenizer(cfg)->find_token("a")});
  cfg.add_bos = true;
  const auto tok = make_spm_tokenizer(cfg);
  EXPECT_TRUE(tok->adds_bos());
  EXPECT_EQ(tok->encode("a", true, false), (std::vector<int32_t>{1, tok->find_token("a")}));
  EXPECT_EQ(tok->encode("", true, false), std::vector<int32_t>{1});
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->is_eog(2));   // eos
  EXPECT_TRUE(tok->is_eog(4));   // <end_of_turn>
  EXPECT_FALSE(tok->is_eog(3));  // <start_of_turn>
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_FALSE(tok->is_eog(-1));
  EXPECT_FALSE(tok->is_eog(tok->n_vocab()));
}

// Expects `fn` to throw fasa::Error whose message contains every one of `parts`.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected fasa::Error containing '" << parts.front() << "'";
  } catch (const Error& e) {
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message: " << e.what() << "\nmissing: " << p;
    }
  }
}

void expect_config_error(const std::function<void(SpmConfig&)>& edit,
                         const std::vector<std::string>& parts) {
  SpmConfig cfg = tiny_config();
  edit(cfg);
  expect_error([&] { make_spm_tokenizer(cfg); }, parts);
}

TEST(TokenizerSpm, BadVocabularies) {
  expect_config_error([](SpmConfig& c) { c.tokens.clear(), c.scores.clear(); },
                      {"tokenizer.ggml.tokens", "empty"});
  expect_config_error([](SpmConfig& c) { c.scores.pop_back(); },
                      {"tokenizer.ggml.scores has", "entries", "tokenizer.ggml.tokens has"});
  expect_config_error([](SpmConfig& c) { c.scores[9] = std::numeric_limits<float>::quiet_NaN(); },
                      {"tokenizer.ggml.scores[9]", "NaN"});
  expect_config_error([](SpmConfig& c) { c.token_types.pop_back(); },
                      {"tokenizer.ggml.token_type has", "tokenizer.ggml.tokens"});
  expect_config_error([](SpmConfig& c) { c.token_types[7] = 9; },
                      {"tokenizer.ggml.token_type[7] = 9"});
  expect_config_error([](SpmConfig& c) { c.tokens[7] = "<0xZZ>"; },
                      {"tokenizer.ggml.tokens[7] = '<0xZZ>'", "Byte"});
  expect_config_error([](SpmConfig& c) { c.tokens[7] = c.tokens[8]; },
                      {"duplicate", "token 7", "token 8"});
  expect_config_error([](SpmConfig& c) { c.unk_id = 100000; },
                      {"tokenizer.ggml.unknown_token_id = 100000", "out of range"});
  expect_config_error([](SpmConfig& c) { c.pad_id = -7; },
                      {"tokenizer.ggml.padding_token_id = -7"});
  expect_config_error([](SpmConfig& c) { c.bos_id = -1, c.add_bos = true; },
                      {"add_bos_token", "bos_token_id"});
}

TEST(TokenizerSpm, BadInput) {
  const auto tok = make_spm_tokenizer(tiny_config());
  expect_error([&] { tok->encode("ok \xc3 bad", false, false); },
               {"not valid UTF-8", "byte offset 3"});
  expect_error([&] { tok->encode("\xed\xa0\x80", false, true); }, {"byte offset 0"});
  expect_error([&] { tok->token_to_bytes(tok->n_vocab()); }, {"token id", "out of range"});
  expect_error([&] { tok->decode({1, -3}); }, {"token id -3"});
}

// --- the same through GGUF files -------------------------------------------------------------

std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / ("fasa_spm_" + name + ".gguf")).string();
}

// Writes `cfg` as GGUF metadata; `extra` may add keys, `skip` drops keys.
std::string write_vocab(const std::string& name, const SpmConfig& cfg,
                        const std::function<void(GgufWriter&)>& extra = {},
                        const std::vector<std::string>& skip = {}) {
  GgufWriter w;
  auto want = [&](const std::string& key) {
    return std::find(skip.begin(), skip.end(), key) == skip.end();
  };
  w.set_string("general.architecture", "gemma3");
  if (want("tokenizer.ggml.model")) w.set_string("tokenizer.ggml.model", "llama");
  if (want("tokenizer.ggml.tokens")) w.set_string_array("tokenizer.ggml.tokens", cfg.tokens);
  if (want("tokenizer.ggml.scores")) w.set_f32_array("tokenizer.ggml.scores", cfg.scores);
  if (want("tokenizer.ggml.token_type")) {
    w.set_i32_array("tokenizer.ggml.token_type", cfg.token_types);
  }
  if (want("tokenizer.ggml.bos_token_id")) {
    w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(cfg.bos_id));
  }
  w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(cfg.eos_id));
  w.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(cfg.unk_id));
  if (want("tokenizer.ggml.add_bos_token")) {
    w.set_bool("tokenizer.ggml.add_bos_token", cfg.add_bos);
  }
  if (want("tokenizer.ggml.add_space_prefix")) {
    w.set_bool("tokenizer.ggml.add_space_prefix", cfg.add_space_prefix);
  }
  if (extra) extra(w);
  const std::string path = temp_path(name);
  w.write(path);
  return path;
}

std::unique_ptr<Tokenizer> load_vocab(const std::string& path) {
  const auto file = GgufFile::open(path);
  return Tokenizer::from_gguf(*file);
}

TEST(TokenizerSpmGguf, LoadsATinyVocabulary) {
  const std::string path = write_vocab("ok", tiny_config());
  const auto tok = load_vocab(path);
  const auto direct = make_spm_tokenizer(tiny_config());
  EXPECT_EQ(tok->n_vocab(), direct->n_vocab());
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_FALSE(tok->adds_bos());
  for (const char* text :
       {"hello world", "<start_of_turn>abc<end_of_turn>", "aaaa <u> \xe4\xb8\xad"}) {
    EXPECT_EQ(tok->encode(text, true, true), direct->encode(text, true, true)) << text;
  }
  // Absent add_bos_token / add_space_prefix: llama.cpp's defaults for this model type (true).
  const std::string defaults =
      write_vocab("defaults", tiny_config(), {},
                  {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_space_prefix"});
  const auto tok2 = load_vocab(defaults);
  EXPECT_TRUE(tok2->adds_bos());
  EXPECT_EQ(tok2->encode("hello", true, false),
            (std::vector<int32_t>{1, tok2->find_token("\xe2\x96\x81hello")}));
  std::filesystem::remove(path);
  std::filesystem::remove(defaults);
}

TEST(TokenizerSpmGguf, BadMetadataNamesTheProblem) {
  std::string path = write_vocab("noscores", tiny_config(), {}, {"tokenizer.ggml.scores"});
  expect_error([&] { load_vocab(path); }, {path, "missing tokenizer.ggml.scores"});

  SpmConfig cfg = tiny_config();
  cfg.scores.resize(10);
  path = write_vocab("shortscores", cfg);
  expect_error([&] { load_vocab(path); },
               {path, "tokenizer.ggml.scores has 10 entries", "tokenizer.ggml.tokens has"});

  path = write_vocab("textscores", tiny_config(),
                     [](GgufWriter& w) {
                       w.set_string_array("tokenizer.ggml.scores", {"a", "b"});
                     },
                     {"tokenizer.ggml.scores"});
  expect_error([&] { load_vocab(path); }, {path, "tokenizer.ggml.scores"});

  cfg = tiny_config();
  cfg.token_types.resize(10);
  path = write_vocab("types", cfg);
  expect_error([&] { load_vocab(path); }, {"tokenizer.ggml.token_type has 10 entries"});

  path = write_vocab("notokens", tiny_config(), {}, {"tokenizer.ggml.tokens"});
  expect_error([&] { load_vocab(path); }, {path, "missing tokenizer.ggml.tokens"});

  path = write_vocab("nobos", tiny_config(), {},
                     {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token"});
  EXPECT_EQ(load_vocab(path)->bos_id(), 1);  // llama.cpp's default id for this model type

  path = write_vocab("t5", tiny_config(),
                     [](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "t5"); },
                     {"tokenizer.ggml.model"});
  expect_error([&] { load_vocab(path); },
               {"unsupported tokenizer.ggml.model = 't5'", "gpt2, llama"});
  for (const char* n :
       {"noscores", "shortscores", "textscores", "types", "notokens", "nobos", "t5"}) {
    std::filesystem::remove(temp_path(n));
  }
}

}  // namespace
}  // namespace fasa
