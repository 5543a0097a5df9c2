// What a request may ask of the logits before sampling: penalties and logit_bias (LogitRules),
// JSON-constrained decoding (JsonPrefix, JsonConstraint) and logprobs (token_logprob), each
// against a brute-force reference or hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fasa/core/splitmix.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/json_constraint.h"
#include "fasa/engine/logit_rules.h"
#include "fasa/model/model.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

TEST(LogitRules, PenaltiesAndBiasAsOpenAIAndVllmDefineThem) {
  std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f, 0.0f};
  LogitRules r;
  EXPECT_FALSE(r.any());
  r.presence_penalty = 0.5f;
  r.frequency_penalty = 0.25f;
  r.bias = {{4, -100.0f}, {1, 2.0f}, {99, 5.0f}};  // 99: outside, ignored
  ASSERT_TRUE(r.any());
  r.apply(l.data(), 5, {3, 0, 3, 3});  // token 3 three times, token 0 once
  EXPECT_FLOAT_EQ(l[0], 2.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[1], -1.0f + 2.0f);
  EXPECT_FLOAT_EQ(l[2], 0.5f);
  EXPECT_FLOAT_EQ(l[3], 3.0f - 0.5f - 0.75f);
  EXPECT_FLOAT_EQ(l[4], -100.0f);
  // Repetition: positive logits divided, negative multiplied, over the prompt and the output,
  // once per token however often it appears.
  std::vector<float> m = {2.0f, -1.0f, 0.5f, 3.0f};
  LogitRules rep;
  rep.repetition_penalty = 2.0f;
  rep.prompt = {1, 1};
  rep.apply(m.data(), 4, {3, 3});
  EXPECT_EQ(m, (std::vector<float>{2.0f, -2.0f, 0.5f, 1.5f}));
}

// llama.cpp's repeat_last_n: only the last N ids of the prompt followed by the output count.
TEST(LogitRules, RepetitionWindowLooksAtTheLastIdsOnly) {
  const std::vector<float> logits = {2.0f, 2.0f, 2.0f, 2.0f, 2.0f};
  auto penalized = [&](int last_n) {
    LogitRules r;
    r.repetition_penalty = 2.0f;
    r.repetition_last_n = last_n;
    r.prompt = {0, 1, 2};
    std::vector<float> l = logits;
    r.apply(l.data(), 5, {3});  // the window runs over 0 1 2 | 3
    std::vector<int> ids;
    for (int i = 0; i < 5; ++i) {
      if (l[i] != 2.0f) ids.push_back(i);
    }
    return ids;
  };
  EXPECT_EQ(penalized(-1), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(penalized(10), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(penalized(2), (std::vector<int>{2, 3}));
  EXPECT_EQ(penalized(1), (std::vector<int>{3}));
  EXPECT_EQ(penalized(0), (std::vector<int>{}));
}

// Every prefix of valid JSON objects is accepted and completes exactly at the end; a byte that
// breaks validity is refused.
TEST(JsonPrefix, AcceptsPrefixesOfObjectsAndRefusesTheRest) {
  const std::vector<std::string> good = {
      R"({})",
      R"( { "a" : 1 } )",
      R"({"a":[1,-2.5e+3,0,0.25,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9"],"b":{"c":{}}})",
      R"({"k": [], "l": [[]], "m": -0, "n": 1E5, "o": "é ✓"})",
  };
  for (const std::string& text : good) {
    SCOPED_TRACE(text);
    JsonPrefix p;
    size_t end = text.find_last_of('}');
    for (size_t i = 0; i < text.size(); ++i) {
      if (i > end && text[i] == ' ') break;  // trailing spaces are not offered after the end
      ASSERT_TRUE(p.feed(static_cast<unsigned char>(text[i]))) << "at byte " << i;
      EXPECT_EQ(p.complete(), i == end) << "at byte " << i;
    }
  }
  const std::vector<std::string> bad = {
      "[",
      "\"a\"",
      "1",
      "{a",
      "{\"a\" 1",
      "{\"a\":}",
      "{\"a\":1,}",
      "{\"a\":01",
      "{\"a\":1.}",
      "{\"a\":tru ",
      "{\"a\":\"\x01",
      "{\"a\":\"\\x",
      "{\"a\":\"\\u12g",
      "{}}",
      "{} x",
      "{\"a\":-}",
      "{\"a\":1e}",
      "{\"a\":[1 2]}",
      "{\"a\":[1,]}",
      "{\"a\"}",
      "{,}",
      "{\"a\":1]",
  };
  for (const std::string& text : bad) {
    SCOPED_TRACE(text);
    JsonPrefix p;
    bool ok = true;
    for (size_t i = 0; i < text.size() && ok; ++i) ok = p.feed(static_cast<unsigned char>(text[i]));
    EXPECT_FALSE(ok) << "accepted";
  }
  // Whitespace is capped.
  JsonPrefix p;
  for (int i = 0; i < JsonPrefix::kMaxSpaces; ++i) EXPECT_TRUE(p.feed(' '));
  EXPECT_FALSE(p.feed(' '));
}

std::shared_ptr<const Model> byte_model() {
  test::TinySpec spec;
  spec.byte_tokenizer = true;  // one token per byte; token 0 is EOS
  const std::string path = ::testing::TempDir() + "/logit_rules_bytes.gguf";
  test::write_tiny_model(path, spec);
  return Model::load(path);
}

// Greedy decoding under the constraint from random logits (a tiny random model) always yields
// one JSON object and then stops.
TEST(JsonConstraint, GenerationIsAlwaysOneJsonObject) {
  const auto m = byte_model();
  const Tokenizer& tok = m->require_tokenizer();
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    GenerateOptions o;
    o.n_predict = 400;
    o.json_object = true;
    o.sampler.temp = 1.0f;
    o.sampler.top_k = 0;
    o.sampler.top_p = 1.0f;
    o.sampler.min_p = 0.0f;
    o.sampler.seed = seed;
    Generation g(tok, o);
    std::vector<float> logits(tok.n_vocab());
    uint64_t state = seed;
    while (!g.done()) {
      for (float& x : logits) x = static_cast<float>(splitmix64(state) % 8000) / 1000.0f - 4.0f;
      g.step(logits.data(), tok.n_vocab(), true);
    }
    SCOPED_TRACE(g.text());
    if (g.stop_reason() == StopReason::Eos) {
      JsonPrefix p;
      EXPECT_TRUE(p.feed(g.text()));
      EXPECT_TRUE(p.complete());
    } else {  // the token limit: still a prefix of one
      EXPECT_EQ(g.stop_reason(), StopReason::Length);
      JsonPrefix p;
      EXPECT_TRUE(p.feed(g.text()));
    }
  }
}

TEST(TokenLogprob, EqualsALogSoftmaxAndItsTopIds) {
  const std::vector<float> l = {1.0f, 3.0f, -std::numeric_limits<float>::infinity(), 3.0f, 0.0f};
  double z = 0;
  for (float x : l) z += std::exp(static_cast<double>(x));
  const TokenLogprob t = token_logprob(l.data(), 5, 4, 3);
  EXPECT_EQ(t.id, 4);
  EXPECT_NEAR(t.logprob, 0.0 - std::log(z), 1e-6);
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].first, 1);  // ties: the lower id first
  EXPECT_EQ(t.top[1].first, 3);
  EXPECT_EQ(t.top[2].first, 0);
  EXPECT_NEAR(t.top[2].second, 1.0 - std::log(z), 1e-6);
  EXPECT_TRUE(token_logprob(l.data(), 5, 0, 0).top.empty());
}

// Generation records one logprob per sampled token, from the logits after the rules.
TEST(TokenLogprob, GenerationRecordsThemAfterTheRules) {
  const auto m = byte_model();
  const Tokenizer& tok = m->require_tokenizer();
  GenerateOptions o;
  o.n_predict = 3;
  o.sampler.temp = 0.0f;
  o.logprobs = 2;
  o.rules.bias = {{'b' + 1, 50.0f}};  // token id = byte + 1
  Generation g(tok, o);
  std::vector<float> logits(tok.n_vocab(), 0.0f);
  logits['a' + 1] = 10.0f;
  while (!g.done()) {
    g.step(logits.data(), tok.n_vocab(), true);
  }
  EXPECT_EQ(g.text(), "bbb");  // the bias wins over 'a'
  ASSERT_EQ(g.logprobs().size(), 3u);
  for (const TokenLogprob& t : g.logprobs()) {
    EXPECT_EQ(t.id, 'b' + 1);
    EXPECT_GT(t.logprob, -1e-3);
    EXPECT_EQ(t.top[0].first, 'b' + 1);
    EXPECT_EQ(t.top[1].first, 'a' + 1);
  }
}

}  // namespace
}  // namespace fasa
