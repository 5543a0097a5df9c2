// Qwen2.5-Coder-1.5B-Instruct's tokenizer (byte-level BPE, pre-tokenizer `qwen2`, 151,936 tokens)
// against goldens from llama.cpp (llama-cpp-python) and Jinja, written by
// scripts/dev/make_qwen_tokenizer_goldens.py into tests/data/tokenizer/.
//
// The model is 1.1 GB and opt-in (`fasa pull qwen2.5-coder-1.5b`; CI does not pull it): every
// test skips when it is missing, and fails instead only under FASA_REQUIRE_QWEN=1.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

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
    std::ifstream in(FASA_TEST_DATA_DIR "/tokenizer/qwen2.5-coder-1.5b_goldens.json");
    EXPECT_TRUE(in.good()) << "missing tests/data/tokenizer/qwen2.5-coder-1.5b_goldens.json";
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

std::string ids_str(const std::vector<int32_t>& ids) {
  std::ostringstream os;
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? " " : "") << ids[i];
  return os.str();
}

TEST(TokenizerQwen25Coder, Metadata) {
  FASA_QWEN_OR_SKIP(path);
  const Tokenizer& tok = *load(path).tok;
  EXPECT_EQ(tok.n_vocab(), 151936);
  EXPECT_EQ(tok.n_vocab(), goldens()["n_vocab"].get<int32_t>());
  EXPECT_EQ(tok.bos_id(), goldens()["bos_id"].get<int32_t>());  // <|endoftext|>, never added
  EXPECT_EQ(tok.eos_id(), goldens()["eos_id"].get<int32_t>());  // <|im_end|>
  EXPECT_FALSE(tok.adds_bos());
  EXPECT_EQ(tok.find_token("<|endoftext|>"), 151643);
  EXPECT_EQ(tok.find_token("<|im_start|>"), 151644);
  EXPECT_EQ(tok.token_type(151644), TokenType::Control);
  EXPECT_EQ(tok.token_type(tok.find_token("<tool_call>")), TokenType::UserDefined);
  EXPECT_EQ(tok.token_type(tok.find_token("[PAD151665]")), TokenType::Unused);
  EXPECT_EQ(tok.token_type(tok.find_token("Ġthe")), TokenType::Normal);
}

TEST(TokenizerQwen25Coder, GoldenIds) {
  FASA_QWEN_OR_SKIP(path);
  const Tokenizer& tok = *load(path).tok;
  const json& cases = goldens()["cases"];
  ASSERT_GE(cases.size(), 60u);
  int n_mismatch = 0;
  for (const json& c : cases) {
    const auto text = c["text"].get<std::string>();
    const bool special = c["parse_special"].get<bool>();
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tok.encode(text, /*add_bos=*/false, special);
    if (got != want) ++n_mismatch;
    EXPECT_EQ(got, want) << "text: \"" << test::escaped(text) << "\" parse_special=" << special
                         << "\n want: " << ids_str(want) << "\n  got: " << ids_str(got);
  }
  EXPECT_EQ(n_mismatch, 0);
}

TEST(TokenizerQwen25Coder, GoldenFuzz) {
  FASA_QWEN_OR_SKIP(path);
  const Tokenizer& tok = *load(path).tok;
  const json& fuzz = goldens()["fuzz"];
  ASSERT_GE(fuzz.size(), 300u);
  int n_mismatch = 0;
  for (const json& c : fuzz) {
    const auto text = c["text"].get<std::string>();
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tok.encode(text, false, true);
    if (got != want) {
      ++n_mismatch;
      ADD_FAILURE() << "text: \"" << test::escaped(text) << "\"\n want: " << ids_str(want)
                    << "\n  got: " << ids_str(got);
    }
  }
  EXPECT_EQ(n_mismatch, 0);
}

TEST(TokenizerQwen25Coder, GoldenAddBos) {
  FASA_QWEN_OR_SKIP(path);
  const Tokenizer& tok = *load(path).tok;
  // tokenizer.ggml.add_bos_token = false: no BOS even when asked.
  EXPECT_EQ(tok.encode("Hello world", true, true),
            goldens()["hello_world_add_bos_ids"].get<std::vector<int32_t>>());
}

TEST(TokenizerQwen25Coder, GoldenDetokenize) {
  FASA_QWEN_OR_SKIP(path);
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

TEST(TokenizerQwen25Coder, GoldenChatMatchesJinja) {
  FASA_QWEN_OR_SKIP(path);
  const Loaded& m = load(path);
  ASSERT_EQ(detect_chat_format(*m.file), ChatFormat::ChatML);
  const std::string sys = chat_default_system(*m.file);
  EXPECT_EQ(sys, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  EXPECT_EQ(m.file->get_string("tokenizer.chat_template"),
            goldens()["chat_template"].get<std::string>());
  ASSERT_GE(goldens()["chats"].size(), 12u);
  for (const json& c : goldens()["chats"]) {
    std::vector<ChatMessage> messages;
    for (const json& msg : c["messages"]) {
      messages.push_back({msg["role"].get<std::string>(), msg["content"].get<std::string>()});
    }
    const std::string text =
        render_chat(ChatFormat::ChatML, messages, c["add_generation_prompt"].get<bool>(), sys);
    EXPECT_EQ(text, c["text"].get<std::string>());
    EXPECT_EQ(m.tok->encode(text, false, true), c["ids"].get<std::vector<int32_t>>())
        << test::escaped(text);
  }
}

TEST(TokenizerQwen25Coder, EndOfGeneration) {
  FASA_QWEN_OR_SKIP(path);
  const Tokenizer& tok = *load(path).tok;
  EXPECT_TRUE(tok.is_eog(tok.find_token("<|im_end|>")));
  EXPECT_TRUE(tok.is_eog(tok.find_token("<|endoftext|>")));
  EXPECT_FALSE(tok.is_eog(tok.find_token("<|im_start|>")));
  EXPECT_FALSE(tok.is_eog(tok.find_token("Ġthe")));
}

uint64_t fnv1a64_int32le(const std::vector<int32_t>& ids) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const int32_t id : ids) {
    const auto u = static_cast<uint32_t>(id);
    for (int k = 0; k < 4; ++k) h = (h ^ ((u >> (8 * k)) & 0xFF)) * 0x100000001B3ull;
  }
  return h;
}

TEST(TokenizerQwen25Coder, PersuasionMatches) {
  FASA_QWEN_OR_SKIP(path);
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
