// The echo scorer (server/prompt_scorer.h): a prompt that starts like a kept one takes its rows
// and logprobs and gives, bit for bit, what scoring it alone gives; on a plain and on a hybrid
// (sliding-window) model, for prompts sharing prefixes of several lengths; its byte budget.
#include "fasa/server/prompt_scorer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fasa/model/model.h"
#include "support/tiny_byte_model.h"

namespace fasa::server {
namespace {

SessionOptions options() {
  SessionOptions so = test::tiny_session("full", 200);
  so.prefill_chunk = PromptScorer::kChunk;
  return so;
}

// Alone: a scorer that keeps nothing.
std::vector<TokenLogprob> alone(const std::shared_ptr<const Model>& m,
                                const std::vector<int32_t>& prompt, int top) {
  PromptScorer s(m, options(), policy_context(m), 0);
  return s.score(prompt, top);
}

void expect_same(const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id) << what << " " << i;
    EXPECT_EQ(a[i].logprob, b[i].logprob) << what << " " << i;  // bit for bit
    EXPECT_EQ(a[i].top, b[i].top) << what << " " << i;
  }
}

// prompt[0, n) of `base`, then `tail` tokens of another seed.
std::vector<int32_t> branch(const std::vector<int32_t>& base, int n, int tail, uint32_t seed,
                            int n_vocab) {
  std::vector<int32_t> p(base.begin(), base.begin() + n);
  const std::vector<int32_t> t = test::random_prompt(tail, n_vocab, seed);
  p.insert(p.end(), t.begin(), t.end());
  return p;
}

void check_model(bool hybrid) {
  const auto m = test::tiny_byte_model(hybrid ? "scorer_hybrid.gguf" : "scorer_plain.gguf", hybrid);
  const int n_vocab = m->config().n_vocab;
  const std::vector<int32_t> a = test::random_prompt(100, n_vocab, 5);  // rows [0, 99)
  PromptScorer kept(m, options(), policy_context(m), 64 << 20);
  expect_same(kept.score(a, 2), alone(m, a, 2), "first");
  EXPECT_EQ(kept.stats().hits, 0u);
  // Shared prefixes around the chunk boundaries (32, 64, 96), a continuation of a, a prefix of
  // a, and a itself again.
  struct Case {
    int shared, tail;
  };
  for (const Case c : {Case{70, 20}, Case{64, 30}, Case{65, 40}, Case{33, 10}, Case{31, 50},
                       Case{100, 17}, Case{97, 0}, Case{100, 0}}) {
    const std::vector<int32_t> p = branch(a, c.shared, c.tail, 40 + c.tail, n_vocab);
    const std::string what =
        (hybrid ? "hybrid " : "plain ") + std::to_string(c.shared) + "+" + std::to_string(c.tail);
    const uint64_t before = kept.stats().tokens_reused;
    expect_same(kept.score(p, 2), alone(m, p, 2), what);
    if (!hybrid && c.shared >= 33) {
      EXPECT_GT(kept.stats().tokens_reused, before) << what;
    }
  }
  if (!hybrid) {
    // 70 shared tokens: rows [0, 64) taken (tokens [0, 64] agree; a whole chunk boundary).
    PromptScorer s(m, options(), policy_context(m), 64 << 20);
    s.score(a, 2);
    s.score(branch(a, 70, 20, 1, n_vocab), 2);
    EXPECT_EQ(s.stats().tokens_reused, 64u);
    // Another `top`: nothing taken.
    s.score(branch(a, 70, 20, 1, n_vocab), 3);
    EXPECT_EQ(s.stats().hits, 1u);
  }
  // A budget below one prompt's rows keeps nothing.
  PromptScorer tiny(m, options(), policy_context(m), 1024);
  tiny.score(a, 1);
  EXPECT_EQ(tiny.stats().entries, 0);
  EXPECT_EQ(tiny.stats().bytes, 0u);
  expect_same(tiny.score(a, 1), alone(m, a, 1), "over budget");
}

TEST(PromptScorer, KeptPrefixesGiveTheLoneScoresOnAPlainModel) { check_model(false); }

TEST(PromptScorer, KeptPrefixesGiveTheLoneScoresOnAHybridModel) { check_model(true); }

TEST(PromptScorer, TheBudgetEvictsTheLeastRecentlyUsed) {
  const auto m = test::tiny_byte_model("scorer_lru.gguf", false);
  const int n_vocab = m->config().n_vocab;
  const std::vector<int32_t> a = test::random_prompt(65, n_vocab, 7);
  const std::vector<int32_t> b = test::random_prompt(65, n_vocab, 8);
  PromptScorer probe(m, options(), policy_context(m), 64 << 20);
  probe.score(a, 1);
  const uint64_t one = probe.stats().bytes;
  ASSERT_GT(one, 0u);
  PromptScorer s(m, options(), policy_context(m), one + one / 2);  // room for one entry
  s.score(a, 1);
  s.score(b, 1);  // evicts a
  EXPECT_EQ(s.stats().entries, 1);
  s.score(a, 1);
  EXPECT_EQ(s.stats().hits, 0u);
  s.score(a, 1);  // a is kept now
  EXPECT_EQ(s.stats().hits, 1u);
  EXPECT_EQ(s.stats().tokens_reused, 64u);
  EXPECT_LE(s.stats().bytes, one + one / 2);
}

}  // namespace
}  // namespace fasa::server
