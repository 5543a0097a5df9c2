// /tokenize, /detokenize and /tokenizer_info bodies on SmolLM2's tokenizer: llama.cpp's form and
// vLLM's (what lm-eval's remote tokenizer sends) give the tokenizer's own ids; errors name the
// field.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fasa/io/gguf.h"
#include "fasa/server/api.h"
#include "fasa/server/tokenize_api.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/model_path.h"

namespace fasa::server {
namespace {

using nlohmann::json;

const Tokenizer& smollm2_tokenizer(const std::string& path) {
  static const std::shared_ptr<const GgufFile> file = GgufFile::open(path);
  static const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(*file);
  return *tok;
}

std::string error_param(const Tokenizer& tok, const std::string& body) {
  try {
    tokenize_body(tok, body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.param;
  }
  return "(no error)";
}

TEST(TokenizeApi, VllmFormGivesTheTokenizersIdsAndParsesSpecialTexts) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = smollm2_tokenizer(path);
  const std::string text = "The capital of France is";
  const json want = tok.encode(text, false, false);
  EXPECT_EQ(json::parse(tokenize_body(tok, json{{"content", text}}.dump()))["tokens"], want);
  EXPECT_EQ(json::parse(
                tokenize_body(tok,
                              json{{"prompt", text}, {"add_special_tokens", false}, {"model", "x"}}
                                  .dump()))["tokens"],
            want);
  // A Hugging Face tokenizer parses special-token texts: the EOS text is one token, EOS.
  const std::string eos = tok.token_text(tok.eos_id());
  const json ids = json::parse(tokenize_body(tok, json{{"prompt", eos}}.dump()))["tokens"];
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0].get<int32_t>(), tok.eos_id());
  // llama.cpp's form keeps it text unless asked.
  EXPECT_GT(json::parse(tokenize_body(tok, json{{"content", eos}}.dump()))["tokens"].size(), 1u);
}

TEST(TokenizeApi, BadVllmBodiesNameTheField) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = smollm2_tokenizer(path);
  EXPECT_EQ(error_param(tok, R"({"prompt": 3})"), "prompt");
  EXPECT_EQ(error_param(tok, R"({"prompt": "a", "content": "a"})"), "prompt");
  EXPECT_EQ(error_param(tok, R"({"prompt": "a", "add_special_tokens": 1})"), "add_special_tokens");
  EXPECT_EQ(error_param(tok, R"({"prompt": "a", "with_pieces": true})"), "with_pieces");
  EXPECT_EQ(error_param(tok, R"({"content": "a", "add_special_tokens": true})"),
            "add_special_tokens");
}

TEST(TokenizeApi, DetokenizeAnswersBothNames) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = smollm2_tokenizer(path);
  const std::string text = "Hello there, world";
  const json ids = tok.encode(text, false, false);
  const json out = json::parse(detokenize_body(tok, json{{"tokens", ids}}.dump()));
  EXPECT_EQ(out["content"], text);
  EXPECT_EQ(out["prompt"], text);
}

TEST(TokenizeApi, TokenizerInfoNamesTheSpecialTokens) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = smollm2_tokenizer(path);
  const json info = json::parse(tokenizer_info_body(tok, 512, "{{ messages }}"));
  EXPECT_EQ(info["eos_token"], tok.token_text(tok.eos_id()));
  EXPECT_EQ(info["add_bos_token"], tok.adds_bos());
  EXPECT_EQ(info["model_max_length"], 512);
  EXPECT_TRUE(info["pad_token"].is_null());
  EXPECT_EQ(info["chat_template"], "{{ messages }}");
  EXPECT_TRUE(json::parse(tokenizer_info_body(tok, 512, ""))["chat_template"].is_null());
  if (tok.bos_id() < 0) {
    EXPECT_TRUE(info["bos_token"].is_null());
  } else {
    EXPECT_EQ(info["bos_token"], tok.token_text(tok.bos_id()));
  }
}

}  // namespace
}  // namespace fasa::server
