// What ends a generation besides the token limit (GenerateOptions): min_tokens holds back every
// ending, stop_at_eog = false (ignore_eos) goes on past end-of-generation tokens, and
// stop_token_ids end it like one. Greedy steps over hand-made logits, on a six-token vocabulary.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "fasa/engine/generate.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {
namespace {

// Ids 0 and 1 end a generation (control tokens without bytes), then "a", "b", "X", "Y".
class SixTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view, bool, bool) const override { return {}; }
  std::vector<int32_t> encode_with_literals(std::string_view, bool, const std::vector<TextRange>&,
                                            const std::vector<std::string>&) const override {
    return {};
  }
  std::string token_to_bytes(int32_t id, bool show_special = false) const override {
    return id < 2 && !show_special ? "" : kTexts[id];
  }
  const std::string& token_text(int32_t id) const override { return kTexts[id]; }
  TokenType token_type(int32_t id) const override {
    return id < 2 ? TokenType::Control : TokenType::Normal;
  }
  int32_t n_vocab() const override { return 6; }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return 0; }
  bool adds_bos() const override { return false; }
  bool is_eog(int32_t id) const override { return id < 2; }
  int32_t find_token(std::string_view) const override { return -1; }

 private:
  inline static const std::string kTexts[6] = {"<eos>", "<|end|>", "a", "b", "X", "Y"};
};

constexpr int32_t kEos = 0, kEnd = 1, kA = 2, kB = 3, kX = 4;
constexpr int kVocab = 6;
const float kNegInf = -std::numeric_limits<float>::infinity();

GenerateOptions greedy(int n_predict) {
  GenerateOptions o;
  o.n_predict = n_predict;
  o.sampler.temp = 0.0f;
  return o;
}

// Logits whose ranking is `order` (best first); the others far below.
std::vector<float> ranked(std::initializer_list<int32_t> order) {
  std::vector<float> l(kVocab, -50.0f);
  float v = 10.0f;
  for (int32_t id : order) l[id] = v--;
  return l;
}

// Steps with the same logits until done (or `limit` steps).
void run(Generation& g, const std::vector<float>& logits, int limit = 100) {
  for (int i = 0; i < limit && !g.done(); ++i) g.step(logits.data(), kVocab, true);
}

TEST(StopControls, MinTokensHoldsBackTheEndOfGeneration) {
  const SixTokenizer tok;
  const std::vector<float> logits = ranked({kEos, kEnd, kA});
  Generation plain(tok, greedy(10));
  run(plain, logits);
  EXPECT_EQ(plain.stop_reason(), StopReason::Eos);
  EXPECT_EQ(plain.text(), "");
  GenerateOptions o = greedy(10);
  o.min_tokens = 3;  // both end tokens are held back: "a" three times, then the end
  Generation held(tok, o);
  run(held, logits);
  EXPECT_EQ(held.stop_reason(), StopReason::Eos);
  EXPECT_EQ(held.text(), "aaa");
  EXPECT_EQ(held.tokens(), (std::vector<int32_t>{kA, kA, kA}));
  // The token limit still wins over min_tokens.
  o.n_predict = 2;
  Generation capped(tok, o);
  run(capped, logits);
  EXPECT_EQ(capped.stop_reason(), StopReason::Length);
  EXPECT_EQ(capped.text(), "aa");
}

TEST(StopControls, MinTokensHoldsBackStopTokensAndStopStrings) {
  const SixTokenizer tok;
  GenerateOptions o = greedy(10);
  o.stop_token_ids = {kX};
  o.min_tokens = 2;
  Generation by_id(tok, o);
  run(by_id, ranked({kX, kB}));
  EXPECT_EQ(by_id.stop_reason(), StopReason::Stop);
  EXPECT_EQ(by_id.text(), "bb");
  // A stop string is looked for from the min_tokens-th token's text on: "b" at the first token
  // is text, "b" at the second ends it.
  GenerateOptions s = greedy(10);
  s.stop = {"b"};
  s.min_tokens = 2;
  Generation by_text(tok, s);
  run(by_text, ranked({kB}));
  EXPECT_EQ(by_text.stop_reason(), StopReason::Stop);
  EXPECT_EQ(by_text.text(), "b");
  EXPECT_EQ(by_text.tokens().size(), 2u);
}

TEST(StopControls, AConstraintThatLeavesOnlyTheEndStillEnds) {
  const SixTokenizer tok;
  GenerateOptions o = greedy(10);
  o.min_tokens = 5;
  std::vector<float> only_end(kVocab, kNegInf);
  only_end[kEos] = 0.0f;  // as a finished JSON value masks the rest
  Generation g(tok, o);
  run(g, only_end);
  EXPECT_EQ(g.stop_reason(), StopReason::Eos);
  EXPECT_TRUE(g.tokens().empty());
}

TEST(StopControls, IgnoringTheEndGoesOnUntilTheLimit) {
  const SixTokenizer tok;
  GenerateOptions o = greedy(4);
  o.stop_at_eog = false;
  Generation g(tok, o);
  run(g, ranked({kEnd, kA}));
  EXPECT_EQ(g.stop_reason(), StopReason::Length);
  EXPECT_EQ(g.tokens(), (std::vector<int32_t>(4, kEnd)));
  EXPECT_EQ(g.text(), "");  // control tokens have no bytes
}

TEST(StopControls, StopTokenIdsEndWithoutBeingEmittedEvenWithoutEog) {
  const SixTokenizer tok;
  for (const bool stop_at_eog : {true, false}) {
    SCOPED_TRACE(stop_at_eog);
    GenerateOptions o = greedy(10);
    o.stop_at_eog = stop_at_eog;
    o.stop_token_ids = {kEnd, kX};
    Generation g(tok, o);
    const std::vector<float> a = ranked({kA}), x = ranked({kX});
    g.step(a.data(), kVocab, true);
    g.step(a.data(), kVocab, true);
    ASSERT_FALSE(g.done());
    g.step(x.data(), kVocab, true);
    EXPECT_TRUE(g.done());
    EXPECT_EQ(g.stop_reason(), StopReason::Stop);
    EXPECT_EQ(g.text(), "aa");
    EXPECT_EQ(g.tokens().size(), 2u);
    // kEnd is an end token and a stop token: without stop_at_eog it ends as a stop token.
    Generation e(tok, o);
    run(e, ranked({kEnd}));
    EXPECT_EQ(e.stop_reason(), stop_at_eog ? StopReason::Eos : StopReason::Stop);
  }
  // A token chosen by the caller (lossless decoding) ends the same way.
  GenerateOptions o = greedy(10);
  o.stop_token_ids = {kX};
  Generation g(tok, o);
  g.accept(kA, true);
  g.accept(kX, true);
  EXPECT_EQ(g.stop_reason(), StopReason::Stop);
  EXPECT_EQ(g.text(), "a");
}

}  // namespace
}  // namespace fasa
