// Byte-level BPE on a tiny hand-made vocabulary: merge order, special tokens, BOS, decoding,
// and every kind of bad vocabulary metadata, both as plain data and through a GGUF file.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/bpe.h"
#include "fasa/tokenizer/tokenizer.h"
#include "fasa/tokenizer/unicode.h"

namespace fasa {
namespace {

// Ids: 0..4 specials, 5..260 the byte characters (byte b is id 5 + b), then merge results.
BpeConfig tiny_config() {
  BpeConfig cfg;
  cfg.pre = "smollm";
  cfg.tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<u>", "<|im_start|>system"};
  cfg.token_types = {3, 3, 3, 4, 3};
  for (int b = 0; b < 256; ++b) {
    cfg.tokens.push_back(unicode::byte_to_utf8(static_cast<uint8_t>(b)));
    cfg.token_types.push_back(1);
  }
  const std::vector<std::string> merges = {"h e",          "l l",        "he ll",
                                           "hell o",       "\xc4\xa0 w", "o r",
                                           "\xc4\xa0w or", "l d",        "\xc4\xa0wor ld",
                                           "a a",          "b c",        "a b"};
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ');
    cfg.tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
    cfg.token_types.push_back(1);
  }
  cfg.merges = merges;
  cfg.bos_id = 1;
  cfg.eos_id = 0;
  cfg.add_bos = 0;
  return cfg;
}

int32_t byte_id(char c) { return 5 + static_cast<uint8_t>(c); }

TEST(TokenizerBpe, MergesLowestRankFirst) {
  const auto tok = make_bpe_tokenizer(tiny_config());
  const int32_t hello = tok->find_token("hello");
  const int32_t world = tok->find_token("\xc4\xa0world");
  ASSERT_GE(hello, 0);
  ASSERT_GE(world, 0);
  EXPECT_EQ(tok->encode("hello world", false, false), (std::vector<int32_t>{hello, world}));
  // "b c" (rank 10) beats "a b" (rank 11) although "a b" is further left.
  EXPECT_EQ(tok->encode("abc", false, false),
            (std::vector<int32_t>{byte_id('a'), tok->find_token("bc")}));
  // Equal ranks merge leftmost first.
  const int32_t aa = tok->find_token("aa");
  EXPECT_EQ(tok->encode("aaa", false, false), (std::vector<int32_t>{aa, byte_id('a')}));
  EXPECT_EQ(tok->encode("aaaa", false, false), (std::vector<int32_t>{aa, aa}));
  EXPECT_EQ(tok->encode("", false, false), std::vector<int32_t>{});
}

TEST(TokenizerBpe, RoundTripsAnyText) {
  const auto tok = make_bpe_tokenizer(tiny_config());
  for (const std::string text : {"hello world", "  x\n\ty  ", "caf\xc3\xa9 \xe4\xb8\xad 123",
                                 "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9", "it's"}) {
    EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text);
    EXPECT_EQ(tok->decode(tok->encode(text, false, true)), text);
  }
}

TEST(TokenizerBpe, SpecialTokens) {
  const auto tok = make_bpe_tokenizer(tiny_config());
  const std::vector<int32_t> parsed = tok->encode("<|im_start|>hi<|im_end|>", false, true);
  EXPECT_EQ(parsed, (std::vector<int32_t>{1, byte_id('h'), byte_id('i'), 2}));
  // The longest special text wins.
  EXPECT_EQ(tok->encode("<|im_start|>system", false, true), std::vector<int32_t>{4});
  EXPECT_EQ(tok->encode("<|im_start|>sys", false, true).front(), 1);
  // Without parse_special control tokens are plain text, but user-defined ones still match.
  const std::vector<int32_t> plain = tok->encode("<|im_end|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok->decode(plain), "<|im_end|>");
  EXPECT_EQ(tok->encode("a<u>b", false, false),
            (std::vector<int32_t>{byte_id('a'), 3, byte_id('b')}));
  // Decoding hides control tokens unless asked; user-defined text always shows.
  EXPECT_EQ(tok->decode(parsed), "hi");
  EXPECT_EQ(tok->decode(parsed, true), "<|im_start|>hi<|im_end|>");
  EXPECT_EQ(tok->token_to_bytes(3), "<u>");
  EXPECT_EQ(tok->token_to_bytes(tok->find_token("\xc4\xa0world")), " world");
}

TEST(TokenizerBpe, BosOnlyWhenTheModelAddsIt) {
  BpeConfig cfg = tiny_config();
  const auto no_bos = make_bpe_tokenizer(cfg);
  EXPECT_FALSE(no_bos->adds_bos());
  EXPECT_EQ(no_bos->encode("a", true, false), std::vector<int32_t>{byte_id('a')});
  cfg.add_bos = 1;
  const auto with_bos = make_bpe_tokenizer(cfg);
  EXPECT_TRUE(with_bos->adds_bos());
  EXPECT_EQ(with_bos->encode("a", true, false), (std::vector<int32_t>{1, byte_id('a')}));
  EXPECT_EQ(with_bos->encode("a", false, false), std::vector<int32_t>{byte_id('a')});
  EXPECT_EQ(with_bos->encode("", true, false), std::vector<int32_t>{1});
  cfg.add_bos = -1;  // key absent: Llama 3 vocabularies add BOS, the others do not
  cfg.pre = "llama-bpe";
  EXPECT_TRUE(make_bpe_tokenizer(cfg)->adds_bos());
}

TEST(TokenizerBpe, EndOfGeneration) {
  const auto tok = make_bpe_tokenizer(tiny_config());
  EXPECT_TRUE(tok->is_eog(0));   // eos, also <|endoftext|>
  EXPECT_TRUE(tok->is_eog(2));   // <|im_end|>
  EXPECT_FALSE(tok->is_eog(1));  // <|im_start|>
  EXPECT_FALSE(tok->is_eog(byte_id('a')));
  BpeConfig cfg = tiny_config();
  cfg.token_types[2] = 1;  // a Normal <|im_end|> is still end of turn, and becomes Control
  cfg.eot_id = 3;
  const auto tok2 = make_bpe_tokenizer(cfg);
  EXPECT_TRUE(tok2->is_eog(2));
  EXPECT_EQ(tok2->token_type(2), TokenType::Control);
  EXPECT_TRUE(tok2->is_eog(3));  // tokenizer.ggml.eot_token_id
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

void expect_config_error(const std::function<void(BpeConfig&)>& edit,
                         const std::vector<std::string>& parts) {
  BpeConfig cfg = tiny_config();
  edit(cfg);
  expect_error([&] { make_bpe_tokenizer(cfg); }, parts);
}

TEST(TokenizerBpe, BadVocabularies) {
  expect_config_error([](BpeConfig& c) { c.pre = "no-such-pre"; },
                      {"tokenizer.ggml.pre", "no-such-pre"});
  expect_config_error([](BpeConfig& c) { c.tokens.clear(), c.token_types.clear(); },
                      {"tokenizer.ggml.tokens", "empty"});
  expect_config_error([](BpeConfig& c) { c.token_types.pop_back(); },
                      {"tokenizer.ggml.token_type", "entries", "tokenizer.ggml.tokens"});
  expect_config_error([](BpeConfig& c) { c.token_types[7] = 9; },
                      {"tokenizer.ggml.token_type[7] = 9"});
  expect_config_error([](BpeConfig& c) { c.merges.push_back("he zz"); },
                      {"tokenizer.ggml.merges[12]", "unknown token 'zz'"});
  expect_config_error([](BpeConfig& c) { c.merges.push_back("hello"); },
                      {"tokenizer.ggml.merges[12]", "'hello'"});
  expect_config_error([](BpeConfig& c) { c.merges.push_back("w o"); },
                      {"tokenizer.ggml.merges[12]", "'wo', which is not a token"});
  expect_config_error([](BpeConfig& c) { c.bos_id = 100000; },
                      {"tokenizer.ggml.bos_token_id = 100000", "out of range"});
  expect_config_error([](BpeConfig& c) { c.eos_id = -5; }, {"tokenizer.ggml.eos_token_id = -5"});
  expect_config_error([](BpeConfig& c) { c.tokens[7] = c.tokens[8]; },
                      {"duplicate", "token 7", "token 8"});
  expect_config_error([](BpeConfig& c) { c.bos_id = -1, c.add_bos = 1; },
                      {"add_bos_token", "bos_token_id"});
}

TEST(TokenizerBpe, BadTokenIds) {
  const auto tok = make_bpe_tokenizer(tiny_config());
  expect_error([&] { tok->token_to_bytes(tok->n_vocab()); }, {"token id", "out of range"});
  expect_error([&] { tok->decode({0, -3}); }, {"token id -3"});
  expect_error([&] { tok->token_type(1 << 30); }, {"out of range"});
}

// --- the same through GGUF files -------------------------------------------------------------

std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / ("fasa_tok_" + name + ".gguf")).string();
}

// Writes `cfg` as GGUF metadata; `edit` may change or drop keys before writing.
std::string write_vocab(const std::string& name, const BpeConfig& cfg,
                        const std::function<void(GgufWriter&)>& extra = {},
                        const std::vector<std::string>& skip = {}) {
  GgufWriter w;
  auto want = [&](const std::string& key) {
    return std::find(skip.begin(), skip.end(), key) == skip.end();
  };
  w.set_string("general.architecture", "llama");
  if (want("tokenizer.ggml.model")) w.set_string("tokenizer.ggml.model", "gpt2");
  if (want("tokenizer.ggml.pre")) w.set_string("tokenizer.ggml.pre", cfg.pre);
  if (want("tokenizer.ggml.tokens")) w.set_string_array("tokenizer.ggml.tokens", cfg.tokens);
  if (want("tokenizer.ggml.token_type")) {
    w.set_i32_array("tokenizer.ggml.token_type", cfg.token_types);
  }
  if (want("tokenizer.ggml.merges")) w.set_string_array("tokenizer.ggml.merges", cfg.merges);
  w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(cfg.bos_id));
  w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(cfg.eos_id));
  w.set_bool("tokenizer.ggml.add_bos_token", cfg.add_bos == 1);
  if (extra) extra(w);
  const std::string path = temp_path(name);
  w.write(path);
  return path;
}

std::unique_ptr<Tokenizer> load_vocab(const std::string& path) {
  const auto file = GgufFile::open(path);
  return Tokenizer::from_gguf(*file);
}

TEST(TokenizerGguf, LoadsATinyVocabulary) {
  const std::string path = write_vocab("ok", tiny_config());
  const auto tok = load_vocab(path);
  const auto direct = make_bpe_tokenizer(tiny_config());
  EXPECT_EQ(tok->n_vocab(), direct->n_vocab());
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 0);
  EXPECT_FALSE(tok->adds_bos());
  for (const char* text : {"hello world", "<|im_start|>abc<|im_end|>", "aaaa <u>"}) {
    EXPECT_EQ(tok->encode(text, true, true), direct->encode(text, true, true)) << text;
  }
  std::filesystem::remove(path);
}

TEST(TokenizerGguf, BadMetadataNamesTheProblem) {
  BpeConfig cfg = tiny_config();
  cfg.pre = "mystery-pre";
  std::string path = write_vocab("pre", cfg);
  expect_error([&] { load_vocab(path); }, {path, "tokenizer.ggml.pre", "mystery-pre"});

  path = write_vocab("notokens", tiny_config(), {}, {"tokenizer.ggml.tokens"});
  expect_error([&] { load_vocab(path); }, {path, "missing tokenizer.ggml.tokens"});

  path = write_vocab("nomerges", tiny_config(), {}, {"tokenizer.ggml.merges"});
  expect_error([&] { load_vocab(path); }, {"missing tokenizer.ggml.merges"});

  path = write_vocab("nomodel", tiny_config(), {}, {"tokenizer.ggml.model"});
  expect_error([&] { load_vocab(path); }, {"missing tokenizer.ggml.model"});

  // A BPE vocabulary labelled as SentencePiece lacks that model type's scores.
  path = write_vocab("spm", tiny_config(),
                     [](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "llama"); },
                     {"tokenizer.ggml.model"});
  expect_error([&] { load_vocab(path); }, {"missing tokenizer.ggml.scores"});

  cfg = tiny_config();
  cfg.merges.push_back("he qq");
  path = write_vocab("merge", cfg);
  expect_error([&] { load_vocab(path); }, {"tokenizer.ggml.merges[12]", "unknown token 'qq'"});

  cfg = tiny_config();
  cfg.token_types.resize(10);
  path = write_vocab("types", cfg);
  expect_error([&] { load_vocab(path); }, {"tokenizer.ggml.token_type has 10 entries"});

  cfg = tiny_config();
  cfg.bos_id = 5000;
  path = write_vocab("bos", cfg);
  expect_error([&] { load_vocab(path); }, {"tokenizer.ggml.bos_token_id = 5000", "out of range"});

  path = write_vocab("tokentype", tiny_config(),
                     [](GgufWriter& w) { w.set_string("tokenizer.ggml.tokens", "not an array"); },
                     {"tokenizer.ggml.tokens"});
  expect_error([&] { load_vocab(path); }, {"tokenizer.ggml.tokens"});
  for (const char* n :
       {"pre", "notokens", "nomerges", "nomodel", "spm", "merge", "types", "bos", "tokentype"}) {
    std::filesystem::remove(temp_path(n));
  }
}

}  // namespace
}  // namespace fasa
