// SmolLM2-135M-Instruct's tokenizer against goldens from llama.cpp (llama-cpp-python) and Jinja,
// written by scripts/dev/make_tokenizer_goldens.py into tests/data/tokenizer/.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fasa/core/error.h"
#include "fasa/io/gguf.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/hex_text.h"
#include "support/model_path.h"

namespace fasa {
namespace {

using nlohmann::json;

const json& goldens() {
  static const json j = [] {
    std::ifstream in(FASA_TEST_DATA_DIR "/tokenizer/smollm2_goldens.json");
    EXPECT_TRUE(in.good()) << "missing tests/data/tokenizer/smollm2_goldens.json";
    return in.good() ? json::parse(in) : json::object();
  }();
  return j;
}

struct Loaded {
  std::shared_ptr<const GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

const Loaded& load(const std::string& path) {
  static Loaded loaded;
  if (!loaded.tok) {
    loaded.file = GgufFile::open(path);
    loaded.tok = Tokenizer::from_gguf(*loaded.file);
  }
  return loaded;
}

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
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
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? " " : "") << ids[i];
  return os.str();
}

TEST(TokenizerSmolLM2, Metadata) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = *load(path).tok;
  EXPECT_EQ(tok.n_vocab(), goldens()["n_vocab"].get<int32_t>());
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_FALSE(tok.adds_bos());
  EXPECT_EQ(tok.token_text(1), "<|im_start|>");
  EXPECT_EQ(tok.token_type(1), TokenType::Control);
  EXPECT_EQ(tok.token_type(100), TokenType::Normal);
  EXPECT_EQ(tok.find_token("<|im_end|>"), 2);
  EXPECT_EQ(tok.find_token("Ġthe"), 260);
  EXPECT_EQ(tok.find_token("no such token here"), -1);
  EXPECT_THROW(tok.token_text(tok.n_vocab()), Error);
  EXPECT_THROW(tok.token_to_bytes(-1), Error);
}

TEST(TokenizerSmolLM2, GoldenIds) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = *load(path).tok;
  const json& cases = goldens()["cases"];
  ASSERT_GE(cases.size(), 40u);
  int n_mismatch = 0;
  for (const json& c : cases) {
    const auto text = c["text"].get<std::string>();
    const bool special = c["parse_special"].get<bool>();
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tok.encode(text, /*add_bos=*/false, special);
    if (got != want) ++n_mismatch;
    EXPECT_EQ(got, want) << "text: \"" << printable(text) << "\" parse_special=" << special
                         << "\n want: " << ids_str(want) << "\n  got: " << ids_str(got);
  }
  EXPECT_EQ(n_mismatch, 0);
}

TEST(TokenizerSmolLM2, GoldenAddBos) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = *load(path).tok;
  // SmolLM2 does not add BOS even when asked (tokenizer.ggml.add_bos_token = false).
  EXPECT_EQ(tok.encode("Hello world", true, true),
            goldens()["hello_world_add_bos_ids"].get<std::vector<int32_t>>());
}

TEST(TokenizerSmolLM2, GoldenDetokenize) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = *load(path).tok;
  for (const json& c : goldens()["cases"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids), c["detok"].get<std::string>()) << ids_str(ids);
    EXPECT_EQ(tok.decode(ids, true), c["detok_special"].get<std::string>()) << ids_str(ids);
  }
  for (const auto& [id, hex] : goldens()["pieces_hex"].items()) {
    EXPECT_EQ(tok.token_to_bytes(std::stoi(id), true), test::from_hex(hex.get<std::string>()))
        << "token " << id;
  }
}

TEST(TokenizerSmolLM2, GoldenChat) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Loaded& m = load(path);
  ASSERT_EQ(detect_chat_format(*m.file), ChatFormat::ChatML);
  const std::string sys = chat_default_system(*m.file);
  EXPECT_EQ(sys, "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_EQ(m.file->get_string("tokenizer.chat_template"),
            goldens()["chat_template"].get<std::string>());
  for (const json& c : goldens()["chats"]) {
    std::vector<ChatMessage> messages;
    for (const json& msg : c["messages"]) {
      messages.push_back({msg["role"].get<std::string>(), msg["content"].get<std::string>()});
    }
    const std::string text = render_chat(ChatFormat::ChatML, messages, true, sys);
    EXPECT_EQ(text, c["text"].get<std::string>());
    EXPECT_EQ(m.tok->encode(text, false, true), c["ids"].get<std::vector<int32_t>>())
        << printable(text);
    // Contents kept plain text (the server's and fasa run's way) change nothing here: no
    // golden content holds a special-token text.
    const RenderedChat parts = render_chat_parts(ChatFormat::ChatML, messages, true, sys);
    EXPECT_EQ(m.tok->encode_with_literals(parts.text, false, parts.content,
                                          chat_markers(ChatFormat::ChatML)),
              c["ids"].get<std::vector<int32_t>>())
        << printable(text);
  }
}

TEST(TokenizerSmolLM2, EndOfGeneration) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = *load(path).tok;
  EXPECT_TRUE(tok.is_eog(tok.find_token("<|im_end|>")));
  EXPECT_TRUE(tok.is_eog(tok.eos_id()));
  EXPECT_TRUE(tok.is_eog(tok.find_token("<|endoftext|>")));
  EXPECT_FALSE(tok.is_eog(tok.find_token("<|im_start|>")));
  EXPECT_FALSE(tok.is_eog(tok.find_token("Ġthe")));
  EXPECT_FALSE(tok.is_eog(-1));
  EXPECT_FALSE(tok.is_eog(tok.n_vocab()));
}

TEST(TokenizerSmolLM2, StreamDecoderHoldsPartialCharacters) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = *load(path).tok;
  for (const std::string text :
       {"😀 emoji 👨‍👩‍👧‍👦 family 🇯🇵 flag", "日本語のテキストと中文文本",
        "naïve — “quotes” ½", "<|im_start|>user\n你好<|im_end|>"}) {
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
      if (text.find("😀") != std::string::npos) {
        EXPECT_GT(n_partial_tokens, 0);  // some token ends inside a character
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

TEST(TokenizerSmolLM2, PersuasionMatchesAndIsFast) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
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
