// Gemma 3 270M's SentencePiece-style tokenizer against goldens from llama.cpp (llama-cpp-python)
// and Jinja (Gemma 3's chat template), written by scripts/dev/make_gemma3_tokenizer_goldens.py
// into tests/data/tokenizer/gemma3_goldens.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/spm.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/hex_text.h"
#include "support/model_path.h"

namespace fasa {
namespace {

using nlohmann::json;

const json& goldens() {
  static const json j = [] {
    std::ifstream in(FASA_TEST_DATA_DIR "/tokenizer/gemma3_goldens.json");
    EXPECT_TRUE(in.good()) << "missing tests/data/tokenizer/gemma3_goldens.json";
    return in.good() ? json::parse(in) : json::object();
  }();
  return j;
}

struct Loaded {
  std::shared_ptr<const GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<Tokenizer> tok_space_prefix;  // the same vocabulary with add_space_prefix
};

const Loaded& load(const std::string& path) {
  static Loaded loaded;
  if (!loaded.tok) {
    loaded.file = GgufFile::open(path);
    loaded.tok = Tokenizer::from_gguf(*loaded.file);
    SpmConfig cfg = read_spm_config(*loaded.file);
    cfg.add_space_prefix = true;
    loaded.tok_space_prefix = make_spm_tokenizer(std::move(cfg));
  }
  return loaded;
}

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 200)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      out += "\\x" + std::to_string(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::ostringstream os;
  for (size_t i = 0; i < ids.size() && i < 80; ++i) os << (i ? " " : "") << ids[i];
  if (ids.size() > 80) os << " ...";
  return os.str();
}

// Checks every case's ids (add_bos off) against `cases`; returns the number of mismatches.
int check_ids(const Tokenizer& tok, const json& cases, const char* what) {
  int n_mismatch = 0;
  for (const json& c : cases) {
    const auto text = c["text"].get<std::string>();
    const bool special = c["parse_special"].get<bool>();
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tok.encode(text, /*add_bos=*/false, special);
    if (got != want) ++n_mismatch;
    EXPECT_EQ(got, want) << what << " text: \"" << printable(text) << "\" parse_special=" << special
                         << "\n want: " << ids_str(want) << "\n  got: " << ids_str(got);
  }
  return n_mismatch;
}

TEST(TokenizerGemma3, Metadata) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const Tokenizer& tok = *load(path).tok;
  EXPECT_EQ(tok.n_vocab(), goldens()["n_vocab"].get<int32_t>());
  EXPECT_EQ(tok.n_vocab(), 262144);
  EXPECT_EQ(tok.bos_id(), goldens()["bos_id"].get<int32_t>());
  EXPECT_EQ(tok.eos_id(), goldens()["eos_id"].get<int32_t>());
  EXPECT_TRUE(tok.adds_bos());
  EXPECT_EQ(tok.token_text(2), "<bos>");
  EXPECT_EQ(tok.token_type(2), TokenType::Control);
  EXPECT_EQ(tok.token_type(3), TokenType::Control);  // <unk> is a control token in Gemma's file
  EXPECT_EQ(tok.token_type(107), TokenType::UserDefined);  // "\n"
  EXPECT_EQ(tok.token_type(212), TokenType::Control);  // "</s>": llama.cpp's EOG list makes it so
  EXPECT_EQ(tok.token_type(238), TokenType::Byte);     // <0x00>
  EXPECT_EQ(tok.find_token("<start_of_turn>"), 105);
  EXPECT_EQ(tok.find_token("\xe2\x96\x81"), 236743);
  EXPECT_EQ(tok.find_token("no such token here"), -1);
  EXPECT_THROW(tok.token_text(tok.n_vocab()), Error);
}

TEST(TokenizerGemma3, GoldenIds) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const json& cases = goldens()["cases"];
  ASSERT_GE(cases.size(), 90u);
  ASSERT_GE(goldens()["n_smollm2_cases"].get<size_t>(), 30u);
  EXPECT_EQ(check_ids(*load(path).tok, cases, "gemma3"), 0);
}

TEST(TokenizerGemma3, GoldenIdsWithSpacePrefix) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const Tokenizer& tok = *load(path).tok_space_prefix;
  const json& cases = goldens()["space_prefix_cases"];
  ASSERT_EQ(cases.size(), goldens()["cases"].size());
  EXPECT_EQ(check_ids(tok, cases, "add_space_prefix"), 0);
  for (const json& c : cases) {
    const auto text = c["text"].get<std::string>();
    const auto want = c["ids_add_bos"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.encode(text, true, c["parse_special"].get<bool>()), want) << printable(text);
    EXPECT_EQ(tok.decode(c["ids"].get<std::vector<int32_t>>()), c["detok"].get<std::string>());
    EXPECT_EQ(tok.decode(want), c["detok_add_bos"].get<std::string>()) << printable(text);
  }
}

TEST(TokenizerGemma3, GoldenAddBos) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const Tokenizer& tok = *load(path).tok;
  for (const json& c : goldens()["bos_cases"]) {
    const auto text = c["text"].get<std::string>();
    EXPECT_EQ(tok.encode(text, true, c["parse_special"].get<bool>()),
              c["ids"].get<std::vector<int32_t>>())
        << printable(text);
  }
}

TEST(TokenizerGemma3, GoldenDetokenize) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const Tokenizer& tok = *load(path).tok;
  for (const json& c : goldens()["cases"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids), c["detok"].get<std::string>()) << ids_str(ids);
    EXPECT_EQ(tok.decode(ids, true), c["detok_special"].get<std::string>()) << ids_str(ids);
    // Round trip: the text comes back (control tokens shown when parsed), except a literal
    // U+2581, SentencePiece's space, which comes back as a space.
    const auto text = c["text"].get<std::string>();
    if (text.find("\xe2\x96\x81") != std::string::npos) continue;
    if (!c["parse_special"].get<bool>()) {
      EXPECT_EQ(tok.decode(ids), text) << printable(text);
    }
    EXPECT_EQ(tok.decode(ids, true), text) << printable(text);
  }
  for (const auto& [id, hex] : goldens()["pieces_hex"].items()) {
    EXPECT_EQ(tok.token_to_bytes(std::stoi(id), true), test::from_hex(hex.get<std::string>()))
        << "token " << id;
  }
}

TEST(TokenizerGemma3, GoldenChat) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const Loaded& m = load(path);
  // The file has no tokenizer.chat_template: the architecture picks the format.
  EXPECT_EQ(m.file->find("tokenizer.chat_template"), nullptr);
  ASSERT_EQ(detect_chat_format(*m.file), ChatFormat::Gemma);
  EXPECT_EQ(chat_default_system(*m.file), "");
  ASSERT_GE(goldens()["chats"].size(), 10u);
  for (const json& c : goldens()["chats"]) {
    std::vector<ChatMessage> messages;
    for (const json& msg : c["messages"]) {
      messages.push_back({msg["role"].get<std::string>(), msg["content"].get<std::string>()});
    }
    const bool gen = c["add_generation_prompt"].get<bool>();
    const std::string text = render_chat(ChatFormat::Gemma, messages, gen);
    EXPECT_EQ("<bos>" + text, c["jinja_text"].get<std::string>());
    EXPECT_EQ(text, c["text"].get<std::string>());
    EXPECT_EQ(m.tok->encode(text, true, true), c["ids"].get<std::vector<int32_t>>())
        << printable(text);
    // Contents kept plain text (the server's and fasa run's way): the same ids, except where a
    // content holds "<start_of_turn>", which the goldens (llama.cpp, Jinja + Hugging Face) parse
    // as the token and the engine keeps as text (docs/SERVER.md, chat tokenization).
    const RenderedChat parts = render_chat_parts(ChatFormat::Gemma, messages, gen);
    const std::vector<int32_t> ids = m.tok->encode_with_literals(parts.text, true, parts.content,
                                                                 chat_markers(ChatFormat::Gemma));
    bool special_in_content = false;
    for (const ChatMessage& msg : messages) {
      special_in_content |= msg.content.find("<start_of_turn>") != std::string::npos;
    }
    if (!special_in_content) {
      EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>()) << printable(text);
    } else {
      const int32_t sot = m.tok->find_token("<start_of_turn>");
      EXPECT_EQ(std::count(ids.begin(), ids.end(), sot) + 1,
                std::count(c["ids"].begin(), c["ids"].end(), sot))
          << printable(text);
    }
  }
}

TEST(TokenizerGemma3, EndOfGeneration) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const Tokenizer& tok = *load(path).tok;
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_eog(id)) eog.push_back(id);
  }
  EXPECT_EQ(eog, goldens()["eog_ids"].get<std::vector<int32_t>>());  // <eos>, <end_of_turn>, </s>
  EXPECT_TRUE(tok.is_eog(tok.find_token("<end_of_turn>")));
  EXPECT_TRUE(tok.is_eog(tok.eos_id()));
  EXPECT_FALSE(tok.is_eog(tok.find_token("<start_of_turn>")));
  EXPECT_FALSE(tok.is_eog(-1));
}

TEST(TokenizerGemma3, StreamDecoderHoldsPartialCharacters) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const Tokenizer& tok = *load(path).tok;
  for (const std::string text :
       {"\xf0\x9f\xa6\x99 llamas \xf0\x9f\xa6\x99", "\xf0\x93\x80\x80\xf0\x93\x80\x87 glyphs",
        "<start_of_turn>user\n\xe4\xbd\xa0\xe5\xa5\xbd<end_of_turn>"}) {
    const std::vector<int32_t> ids = tok.encode(text, false, true);
    for (const bool show_special : {false, true}) {
      StreamDecoder dec(tok, show_special);
      std::string all;
      int n_partial_tokens = 0;
      for (const int32_t id : ids) {
        if (find_invalid_utf8(tok.token_to_bytes(id)) >= 0) ++n_partial_tokens;
        const std::string piece = dec.push(id);
        EXPECT_EQ(find_invalid_utf8(piece), -1) << "partial character emitted for " << id;
        all += piece;
      }
      all += dec.flush();
      EXPECT_EQ(all, tok.decode(ids, show_special));
      if (text.find("glyphs") != std::string::npos) {
        EXPECT_GT(n_partial_tokens, 0);  // byte fallback tokens end inside a character
      }
    }
  }
}

uint64_t fnv1a64_int32le(const std::vector<int32_t>& ids) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const int32_t id : ids) {
    const auto u = static_cast<uint32_t>(id);
    for (int k = 0; k < 4; ++k) {
      h = (h ^ ((u >> (8 * k)) & 0xFF)) * 0x100000001B3ull;
    }
  }
  return h;
}

TEST(TokenizerGemma3, PersuasionMatchesAndIsFast) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const json& corpus = goldens()["corpus"];
  ASSERT_TRUE(corpus.is_object());
  FASA_TEXT_OR_SKIP(file, corpus["file"].get<std::string>());
  std::ifstream in(file, std::ios::binary);
  ASSERT_TRUE(in.good()) << "cannot read " << file;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Tokenizer& tok = *load(path).tok;

  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = tok.encode(text, false, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[   INFO   ] %s: %zu bytes -> %zu tokens in %.3f s (%.2f MB/s)\n",
              corpus["file"].get<std::string>().c_str(), text.size(), ids.size(), seconds,
              text.size() / seconds / 1e6);

  ASSERT_EQ(ids.size(), corpus["n_tokens"].get<size_t>());
  const auto first = corpus["first_ids"].get<std::vector<int32_t>>();
  const auto last = corpus["last_ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + first.size()), first);
  EXPECT_EQ(std::vector<int32_t>(ids.end() - last.size(), ids.end()), last);
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(fnv1a64_int32le(ids)));
  EXPECT_EQ(std::string(hash), corpus["ids_fnv1a64_int32le"].get<std::string>());
  EXPECT_EQ(tok.decode(ids), text);
}

}  // namespace
}  // namespace fasa
