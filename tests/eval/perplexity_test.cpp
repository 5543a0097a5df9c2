// Perplexity protocols on a tiny model, against the log-probabilities computed directly.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fasa/core/error.h"
#include "fasa/engine/session.h"
#include "fasa/eval/perplexity.h"
#include "fasa/model/model.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

struct Tiny {
  std::shared_ptr<const Model> model;
  std::vector<int32_t> tokens;
  Tiny() {
    const std::string path = ::testing::TempDir() + "/ppl_tiny_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                             ".gguf";
    test::TinySpec spec;
    spec.wtype = DType::Q4_1;
    test::write_tiny_model(path, spec);
    model = Model::load(path);
    std::mt19937 rng(12);
    tokens.resize(100);
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  }
};

// Mean NLL of tokens[from+1 .. to] given logits at positions [from, to) of one chunk.
double direct_nll(const Model& m, const std::vector<int32_t>& chunk, int from, int to) {
  SessionOptions so;
  so.n_ctx = static_cast<int>(chunk.size());
  Session s(std::shared_ptr<const Model>(&m, [](const Model*) {}), so);
  const auto logits = s.eval_all(chunk, 1);
  const int n_vocab = m.config().n_vocab;
  double nll = 0.0;
  for (int i = from; i < to; ++i) {
    nll -= log_prob(logits.data() + static_cast<size_t>(i) * n_vocab, n_vocab, chunk[i + 1]);
  }
  return nll / (to - from);
}

TEST(PerplexityTest, SecondHalfConventionMatchesDirectComputation) {
  Tiny t;
  PplOptions o;
  o.n_ctx = 32;
  o.n_chunks = 3;
  o.batch = 7;
  const PplResult r = perplexity(t.model, t.tokens, o, nullptr);
  EXPECT_EQ(r.n_scored, 3 * 15);
  EXPECT_EQ(r.argmax.size(), 3u * 32);
  double nll = 0.0;
  for (int c = 0; c < 3; ++c) {
    const std::vector<int32_t> chunk(t.tokens.begin() + 32 * c, t.tokens.begin() + 32 * (c + 1));
    nll += direct_nll(*t.model, chunk, 16, 31) * 15;
  }
  EXPECT_NEAR(r.mean_nll, nll / 45, 1e-9);
  EXPECT_NEAR(r.ppl, std::exp(nll / 45), 1e-6);
  EXPECT_GT(r.ppl_se, 0.0);
}

TEST(PerplexityTest, DecodeProtocolScoresTheLastDTokens) {
  Tiny t;
  PplOptions o;
  o.n_ctx = 40;
  o.n_chunks = 2;
  o.n_decode = 8;
  const PplResult full = perplexity(t.model, t.tokens, o, nullptr);
  EXPECT_EQ(full.n_scored, 16);
  EXPECT_EQ(full.argmax.size(), 16u);
  double nll = 0.0;
  for (int c = 0; c < 2; ++c) {
    const std::vector<int32_t> chunk(t.tokens.begin() + 40 * c, t.tokens.begin() + 40 * (c + 1));
    nll += direct_nll(*t.model, chunk, 31, 39) * 8;
  }
  EXPECT_NEAR(full.mean_nll, nll / 16, 1e-9);
  // A budget covering the cache is full attention; a small one reads fewer rows.
  o.policy = "oracle:budget=64";
  EXPECT_EQ(perplexity(t.model, t.tokens, o, nullptr).mean_nll, full.mean_nll);
  o.policy = "oracle:budget=4";
  const PplResult sparse = perplexity(t.model, t.tokens, o, nullptr);
  EXPECT_LT(sparse.attn.slots_read, sparse.attn.slots_visible);
  EXPECT_NE(sparse.mean_nll, full.mean_nll);
}

TEST(PerplexityTest, BadOptionsAreErrors) {
  Tiny t;
  PplOptions o;
  o.n_ctx = 200;
  EXPECT_THROW(perplexity(t.model, t.tokens, o, nullptr), Error);  // shorter than one chunk
  o.n_ctx = 32;
  o.n_chunks = 4;
  EXPECT_THROW(perplexity(t.model, t.tokens, o, nullptr), Error);  // 128 > 100 tokens
  o.n_chunks = 1;
  o.n_decode = 32;
  EXPECT_THROW(perplexity(t.model, t.tokens, o, nullptr), Error);
  o.n_decode = -1;
  EXPECT_THROW(perplexity(t.model, t.tokens, o, nullptr), Error);
  o.n_decode = 0;
  o.compare = {"oracle:budget=4"};  // policies act at decode steps only
  EXPECT_THROW(perplexity_all(t.model, t.tokens, o, nullptr), Error);
}

// Comparing policies in one run (the dense prefix computed once and copied) gives exactly what
// separate runs give.
TEST(PerplexityTest, ComparedPoliciesEqualSeparateRuns) {
  Tiny t;
  PplOptions o;
  o.n_ctx = 40;
  o.n_chunks = 2;
  o.n_decode = 12;
  o.batch = 16;
  o.policy = "full";
  o.compare = {"oracle:budget=4", "oracle:budget=0.2,gqa=per-head"};
  const std::vector<PplResult> all = perplexity_all(t.model, t.tokens, o, nullptr);
  ASSERT_EQ(all.size(), 3u);
  for (size_t p = 0; p < all.size(); ++p) {
    PplOptions one = o;
    one.compare.clear();
    one.policy = p == 0 ? o.policy : o.compare[p - 1];
    const PplResult r = perplexity(t.model, t.tokens, one, nullptr);
    EXPECT_EQ(all[p].policy, one.policy);
    EXPECT_EQ(all[p].ppl, r.ppl) << one.policy;
    EXPECT_EQ(all[p].argmax, r.argmax) << one.policy;
    EXPECT_EQ(all[p].attn.slots_read, r.attn.slots_read) << one.policy;
  }
  EXPECT_NE(all[0].ppl, all[1].ppl);  // the sparse policies really differ from full
}

}  // namespace
}  // namespace fasa
