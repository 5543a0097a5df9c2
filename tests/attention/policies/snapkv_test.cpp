// SnapKV: against brute-force references (tests/attention/policies/eviction_fixture.h).
#include "attention/policies/eviction_fixture.h"

namespace fasa {
namespace {

// The first decode step after a 39-token prompt keeps the top B - 1 - window voted slots of the
// prompt before the window, the window and the current token; the next step slides the recent
// part by one; recompress=1 re-votes over the kept slots with the newest window (the decode
// query included) and never brings an evicted slot back.
TEST(SnapKvPolicy, KeepsTheVotedSlotsTheWindowAndTheCurrentToken) {
  const int P = 39, W = 8, B = 20, K = 3;
  Data d(P + 3);
  int checked = 0;
  for (const char* gqa : {"shared", "per-head"}) {
    const bool per_head = std::string(gqa) == "per-head";
    for (int recompress : {0, 1}) {
      auto p = policy_from("snapkv:budget=20,window=8,kernel=3,gqa=" + std::string(gqa) +
                           ",recompress=" + std::to_string(recompress));
      d.prefill(*p, P, 16);  // chunks of 16, 16 and 7
      for (int l = 0; l < kShape.n_layers; ++l) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          Selection s1;
          p->select(d.step(l, g, P + 1), s1);
          ASSERT_FALSE(s1.all);
          ASSERT_EQ(s1.per_head, per_head);
          std::vector<int32_t> prompt(P);
          std::iota(prompt.begin(), prompt.end(), 0);
          bool clear = false;
          const auto want =
              snap_reference(d, l, g, P - W, W, prompt, K, B - 1 - W, per_head, &clear);
          for (size_t j = 0; j < want.size(); ++j) {
            const auto& got = s1.slots_for(static_cast<int>(j));
            EXPECT_EQ(got.size(), static_cast<size_t>(B));
            if (clear) {
              EXPECT_EQ(got, with_range(want[j], P - W, P + 1)) << gqa << " layer " << l;
            }
          }
          checked += clear;
          // The next step: the recent part slides (slot P - W leaves), or a new vote.
          Selection s2;
          p->select(d.step(l, g, P + 2), s2);
          for (size_t j = 0; j < want.size(); ++j) {
            const auto& a = s1.slots_for(static_cast<int>(j));
            const auto& b = s2.slots_for(static_cast<int>(j));
            EXPECT_EQ(b.size(), static_cast<size_t>(B));
            for (int32_t s : b) {  // nothing evicted comes back
              EXPECT_TRUE(s == P + 1 || std::binary_search(a.begin(), a.end(), s)) << s;
            }
            if (recompress == 0) {
              std::vector<int32_t> voted(a.begin(), a.begin() + (B - 1 - W));
              EXPECT_EQ(b, with_range(voted, P - W + 1, P + 2));
            } else {
              // Window: tokens P - W + 1 .. P (the last query is the decode step's); candidates:
              // the slots kept before, older than the window.
              std::vector<int32_t> alive(a.begin(), a.end());
              bool clear2 = false;
              const auto want2 =
                  snap_reference(d, l, g, P - W + 1, W, alive, K, B - 1 - W, per_head, &clear2);
              if (clear2) {
                EXPECT_EQ(b, with_range(want2[j], P - W + 1, P + 2)) << gqa;
              }
              checked += clear2;
            }
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 22);  // 24 cases, (nearly) all clear of near-ties
}

TEST(SnapKvPolicy, SmallBudgetsKeepTheNewestSlots) {
  Data d(30);
  auto p = policy_from("snapkv:budget=5,window=4");  // B <= window + 1: no vote
  d.prefill(*p, 29, 8);
  Selection s;
  p->select(d.step(1, 0, 30), s);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{25, 26, 27, 28, 29}));
  // Without any prefill (decode steps only) nothing is voted either: the newest slots.
  auto q = policy_from("snapkv:budget=6,window=2");
  for (int n = 1; n <= 30; ++n) q->select(d.step(0, 1, n), s);
  EXPECT_EQ(s.slots, (std::vector<int32_t>{24, 25, 26, 27, 28, 29}));
  // A budget covering the cache is dense until something has to go.
  auto r = policy_from("snapkv:budget=30,window=4");
  d.prefill(*r, 29, 8);
  r->select(d.step(0, 0, 30), s);
  EXPECT_TRUE(s.all);
}

// One dense prefill forked into several sessions of the same policy (other budgets) equals each
// session's own prefill, bit for bit; forking from another policy, or from a session that has
// decoded, is refused; eval ppl --decode gives such policies the same numbers.
TEST(SnapKvPolicy, ForkedPrefillEqualsOwnPrefill) {
  const ForkSetup f("eviction_fork_tiny.gguf", 12, 48, 36);
  const auto& [spec, model, tokens, prompt] = std::tie(f.spec, f.model, f.tokens, f.prompt);
  SessionOptions so;
  so.n_ctx = 64;
  so.prefill_chunk = 16;
  auto run_decode = [&](Session& s) { return f.decode_rest(s); };
  for (const std::string& base :
       {std::string("snapkv:window=4,budget="), std::string("pyramidkv:window=4,beta=3,budget="),
        std::string("h2o:recent=0.5,budget=")}) {
    so.policy = base + "20";
    Session source(model, so);
    source.prefill(prompt);
    for (const char* b : {"9", "12", "0.3"}) {
      so.policy = base + b;
      Session own(model, so);
      own.prefill(prompt);
      Session forked(model, so);
      ASSERT_TRUE(forked.can_copy_prefix_from(source));
      forked.copy_prefix_from(source);
      EXPECT_EQ(run_decode(own), run_decode(forked)) << so.policy;
    }
    // A dense session's copy carries no queries: refused, with a clear message.
    so.policy = "full";
    Session dense(model, so);
    dense.prefill(prompt);
    so.policy = base + "9";
    Session fork(model, so);
    EXPECT_FALSE(fork.can_copy_prefix_from(dense));
    try {
      fork.copy_prefix_from(dense);
      ADD_FAILURE() << "forked from a dense session";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("learns from the prefill queries"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(fork.n_past(), 0);  // unchanged
    // A source that has decoded is no longer a prefill.
    source.decode(tokens[36]);
    EXPECT_THROW(fork.copy_prefix_from(source), Error);
  }
  // Another observation window is another state.
  so.policy = "snapkv:budget=9,window=4";
  Session w4(model, so);
  w4.prefill(prompt);
  so.policy = "snapkv:budget=9,window=5";
  Session w5(model, so);
  EXPECT_THROW(w5.copy_prefix_from(w4), Error);

  // eval ppl --decode: the snapkv sessions prefill themselves (or copy each other): the same
  // numbers as a session that prefilled the chunk's prefix itself.
  PplOptions o;
  o.n_ctx = 48;
  o.n_decode = 12;
  o.batch = 16;
  // (snapkv with window 4 and h2o take their statistics from one watched prefill; window 5 is
  // another state and prefills itself, its second budget copies that, window 6 prefills too.)
  o.compare = {"snapkv:budget=9,window=4", "snapkv:budget=12,window=4",
               "h2o:recent=0.5,budget=9",  "snapkv:budget=9,window=5",
               "snapkv:budget=9,window=6", "snapkv:budget=12,window=5"};
  const auto results = perplexity_all(model, tokens, o, nullptr);
  for (size_t p = 1; p < results.size(); ++p) {
    so.policy = o.compare[p - 1];
    Session s(model, so);
    s.prefill(prompt);
    const std::vector<float> logits = run_decode(s);
    double nll = 0.0;
    for (int i = 0; i < 12; ++i) {
      nll -= log_prob(logits.data() + static_cast<size_t>(i) * spec.n_vocab, spec.n_vocab,
                      tokens[36 + i]);
    }
    EXPECT_DOUBLE_EQ(results[p].mean_nll, nll / 12) << o.compare[p - 1];
  }
}

}  // namespace
}  // namespace fasa
