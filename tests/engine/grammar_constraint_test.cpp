// Grammar-constrained decoding (GrammarConstraint): its mask equals a brute-force one (every
// token's bytes fed to a copy of the state) over a vocabulary of multi-byte tokens; generation
// under it always yields a value that parses and validates, or (cut by the token limit) a
// prefix of one; and SmolLM2 answers a pydantic-style schema and a guided choice.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/core/splitmix.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/grammar_constraint.h"
#include "fasa/engine/json_schema.h"
#include "fasa/engine/prompt.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/model_path.h"
#include "support/schema_check.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

using ojson = nlohmann::ordered_json;

// A vocabulary of given byte strings: id 0 is the end of generation, id 1 a control token with
// no bytes, then every byte, then multi-byte pieces (some the same bytes as another id).
class ListTokenizer : public Tokenizer {
 public:
  ListTokenizer() {
    texts_ = {"<eos>", "<ctl>"};
    for (int b = 1; b < 256; ++b) texts_.push_back(std::string(1, static_cast<char>(b)));
    for (const char* s :
         {"{\"",  "\":",      "\": \"",   "\",",     "\", \"", "\"}",   "}",    "]}",
          "name", "na",       "nam",      "kind",    "true",   "false", "null", "nul",
          "12",   "123",      "0.",       "0.5",     "-1",     "e+",    " ",    "  ",
          "\n  ", "ab",       "abc",      "é",       "\xC3",   "\\u00", "\\n",  "[\"",
          "\"]",  "\"town\"", "town",     "capital", "\"c",    ", ",    "{}",   "[]",
          "}}",   "true}",    "\"name\"", "yes",     "no",     ", but"}) {
      texts_.push_back(s);
    }
  }
  std::vector<int32_t> encode(std::string_view, bool, bool) const override { return {}; }
  std::vector<int32_t> encode_with_literals(std::string_view, bool, const std::vector<TextRange>&,
                                            const std::vector<std::string>&) const override {
    return {};
  }
  std::string token_to_bytes(int32_t id, bool = false) const override {
    return id < 2 ? "" : texts_[id];
  }
  const std::string& token_text(int32_t id) const override { return texts_[id]; }
  TokenType token_type(int32_t id) const override {
    return id < 2 ? TokenType::Control : TokenType::Normal;
  }
  int32_t n_vocab() const override { return static_cast<int32_t>(texts_.size()); }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return 0; }
  bool adds_bos() const override { return false; }
  bool is_eog(int32_t id) const override { return id == 0; }
  int32_t find_token(std::string_view) const override { return -1; }

 private:
  std::vector<std::string> texts_;
};

const char* kSchemas[] = {
    R"({"type": "object", "properties": {"name": {"type": "string"},
        "kind": {"enum": ["town", "capital", 12, null]},
        "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "number"}, "maxItems": 4},
        "ok": {"type": "boolean"}}, "required": ["name", "kind", "ok"]})",
    R"({"$defs": {"T": {"type": "object", "properties": {"v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/T"}, "maxItems": 2}},
        "required": ["v"]}}, "$ref": "#/$defs/T"})",
    R"({"type": "object", "additionalProperties": {"type": ["string", "boolean"]}})",
    R"({"type": "array", "items": {}, "minItems": 1, "maxItems": 3})",
};

// Random logits, those of tokens with closing bytes raised by `close` (values then end well
// within the token limit).
void random_logits(const Tokenizer& tok, uint64_t& state, std::vector<float>* logits,
                   float close = 3.0f) {
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    float x = static_cast<float>(splitmix64(state) % 8000) / 1000.0f - 4.0f;
    const std::string b = tok.token_to_bytes(id);
    if (b.find_first_of("\"]}") != std::string::npos) x += close;
    (*logits)[id] = x;
  }
}

TEST(GrammarConstraint, MaskEqualsBruteForceOverMultiByteTokens) {
  const ListTokenizer tok;
  int steps = 0;
  for (const char* text : kSchemas) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(text);
      auto g = std::make_shared<const Grammar>(compile_json_schema(ojson::parse(text)));
      GrammarConstraint c(tok, g);
      GrammarPrefix state(*g);
      uint64_t rng = seed;
      std::vector<float> logits(tok.n_vocab());
      for (int step = 0; step < 200; ++step, ++steps) {
        random_logits(tok, rng, &logits, static_cast<float>(seed - 1));
        std::vector<float> masked = logits;
        c.mask(masked.data(), tok.n_vocab());
        int32_t best = -1;
        for (int32_t id = 0; id < tok.n_vocab(); ++id) {
          GrammarPrefix p = state;
          const std::string b = tok.token_to_bytes(id);
          const bool want = id == 0 ? state.complete() : !b.empty() && p.feed(b);
          ASSERT_EQ(!std::isinf(masked[id]), want) << "step " << step << " token " << id;
          if (want && (best < 0 || masked[id] > masked[best])) best = id;
        }
        ASSERT_GE(best, 0) << "nothing allowed at step " << step;
        if (best == 0) break;
        c.accept(best);
        ASSERT_TRUE(state.feed(tok.token_to_bytes(best)));
        EXPECT_EQ(c.complete(), state.complete());
      }
    }
  }
  EXPECT_GT(steps, 300);
}

std::shared_ptr<const Model> byte_model() {
  test::TinySpec spec;
  spec.byte_tokenizer = true;  // one token per byte; token 0 is EOS
  const std::string path = ::testing::TempDir() + "/grammar_bytes.gguf";
  test::write_tiny_model(path, spec);
  return Model::load(path);
}

// Sampling under the constraint from random logits: a value that parses and satisfies the
// schema whenever it ends by itself; a prefix of one when the token limit cuts it.
TEST(GrammarConstraint, GenerationAlwaysSatisfiesTheSchema) {
  const auto m = byte_model();
  const Tokenizer& tok = m->require_tokenizer();
  for (const char* text : kSchemas) {
    const ojson schema = ojson::parse(text);
    auto g = std::make_shared<const Grammar>(compile_json_schema(schema));
    int ended = 0;
    for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
      GenerateOptions o;
      o.n_predict = 600;
      o.grammar = g;
      o.sampler.temp = 1.0f;
      o.sampler.top_k = 0;
      o.sampler.top_p = 1.0f;
      o.sampler.min_p = 0.0f;
      o.sampler.seed = seed;
      Generation gen(tok, o);
      std::vector<float> logits(tok.n_vocab());
      uint64_t state = seed;
      while (!gen.done()) {
        random_logits(tok, state, &logits);
        gen.step(logits.data(), tok.n_vocab(), true);
      }
      SCOPED_TRACE(gen.text());
      GrammarPrefix p(*g);
      EXPECT_TRUE(p.feed(gen.text()));
      if (gen.stop_reason() == StopReason::Eos) {
        EXPECT_TRUE(p.complete());
        EXPECT_EQ(test::text_violation(gen.text(), schema), "");
        ended += 1;
      } else {
        EXPECT_EQ(gen.stop_reason(), StopReason::Length);
      }
    }
    EXPECT_GE(ended, 3) << text;
  }
}

GenerateResult smollm2_answer(const std::shared_ptr<const Model>& model, const std::string& ask,
                              std::shared_ptr<const Grammar> g) {
  SessionOptions so;
  so.n_ctx = 1024;
  Session s(model, so);
  GenerateOptions o;
  o.n_predict = 200;
  o.sampler.temp = 0.0f;
  o.grammar = std::move(g);
  return generate(s, chat_prompt_tokens(*model, {{"user", ask}}), o, nullptr);
}

TEST(GrammarConstraint, SmolLM2AnswersAPydanticSchemaAndAChoice) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto model = Model::load(path);
  const ojson schema = ojson::parse(R"({"$defs": {"Kind": {"enum": ["capital", "town"],
      "title": "Kind", "type": "string"}}, "properties": {
      "name": {"title": "Name", "type": "string"}, "country": {"type": "string"},
      "population": {"type": "integer"}, "is_capital": {"type": "boolean"},
      "kind": {"$ref": "#/$defs/Kind"},
      "motto": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}},
      "required": ["name", "country", "population", "is_capital", "kind"],
      "title": "City", "type": "object"})");
  auto g = std::make_shared<const Grammar>(compile_json_schema(schema));
  const GenerateResult r =
      smollm2_answer(model, "Describe Paris as a JSON object: name, country, population.", g);
  SCOPED_TRACE(r.text);
  EXPECT_EQ(r.stop_reason, StopReason::Eos);
  EXPECT_EQ(test::text_violation(r.text, schema), "");
  EXPECT_NE(r.text.find("Paris"), std::string::npos);

  auto choice = std::make_shared<const Grammar>(choice_grammar({"yes", "no"}));
  const GenerateResult c = smollm2_answer(model, "Is the sky blue? Answer yes or no.", choice);
  EXPECT_EQ(c.stop_reason, StopReason::Eos);
  EXPECT_TRUE(c.text == "yes" || c.text == "no") << c.text;
}

}  // namespace
}  // namespace fasa
