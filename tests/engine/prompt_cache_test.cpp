// The prompt cache (engine/prompt_cache.h): a session started from a cached prefix generates
// exactly what a session that prefilled the whole prompt generates, for every policy, on a
// plain and on a hybrid (sliding-window) model; what it may reuse; its byte budget.
#include "fasa/engine/prompt_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fasa/engine/generate.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/threads_guard.h"
#include "support/tiny_byte_model.h"
#include "support/tiny_calibration.h"

namespace fasa {
namespace {

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

SessionOptions options(const std::string& policy) { return test::tiny_session(policy, 160); }

struct Answer {
  std::vector<int32_t> tokens;  // generated
  std::vector<float> first;     // logits after the prompt: [n_vocab]
  int reused = 0;               // prompt tokens the cache gave
};

// Prefills `prompt` (the part the cache does not give) and generates 12 tokens greedily; the
// prompt's prefilled state goes into the cache first, as the server does.
Answer run(const std::shared_ptr<const Model>& model, const std::string& policy,
           const std::vector<int32_t>& prompt, PromptCache* cache) {
  Session s(model, options(policy));
  Answer r;
  if (cache) r.reused = cache->start(s, prompt);
  if (r.reused < static_cast<int>(prompt.size())) {
    s.prefill(std::vector<int32_t>(prompt.begin() + r.reused, prompt.end()));
  }
  r.first = s.last_logits();
  if (cache) cache->insert(s, prompt);
  Generation gen(model->require_tokenizer(), test::greedy_options(12));
  gen.step(s.last_logits().data(), static_cast<int>(r.first.size()), true);
  while (!gen.done()) {
    s.decode(gen.next_token());
    gen.step(s.last_logits().data(), static_cast<int>(r.first.size()), s.n_past() < s.n_ctx());
  }
  r.tokens = gen.tokens();
  return r;
}

std::vector<std::string> specs(const std::string& calib) {
  const std::string c = "fasa:calib=" + calib;
  return {"full",
          "oracle:budget=4,gqa=per-head",
          "streaming:budget=4,sinks=1",
          "quest:budget=6,page=4,dense_layers=none",
          "sparq:budget=5,r=4",
          c + ",budget=4,dense_layers=none",
          c + ",budget=4,n_tip=2,fcs=compound,fc_sets=group,mean_value=on,dense_layers=none",
          "double-sparsity:calib=" + calib + ",budget=4,channels=4,dense_layers=none",
          "snapkv:budget=8,window=4",
          "pyramidkv:budget=8,window=2",
          "h2o:budget=6",
          "pyramidkv+fasa:keep=12,window=2," + c.substr(5) + ",budget=4,dense_layers=none"};
}

// A document, two questions about it: the second request reuses the document (decode-time
// policies: the common prefix; prefill-aware ones: the document's own entry, warmed first) and
// its answer equals an uncached run's, bit for bit.
void expect_cached_equals_uncached(const std::shared_ptr<const Model>& model,
                                   const std::vector<std::string>& policies) {
  test::ThreadsGuard one(1);
  const int n_vocab = model->config().n_vocab;
  const auto doc = test::random_prompt(48, n_vocab, 1);  // 3 prefill chunks
  auto q1 = test::random_prompt(9, n_vocab, 2), q2 = test::random_prompt(7, n_vocab, 3);
  q2[0] = q1[0] % (n_vocab - 1) + 1;  // the questions differ from their first token on
  for (const std::string& p : policies) {
    SCOPED_TRACE(p);
    PromptCache cache(64u << 20);
    Session probe(model, options(p));
    const bool prefill_aware = probe.facets().prefill != nullptr;
    if (prefill_aware) EXPECT_EQ(run(model, p, doc, &cache).reused, 0);  // warms the document
    EXPECT_EQ(run(model, p, concat(doc, q1), &cache).reused, prefill_aware ? 48 : 0);
    const Answer want = run(model, p, concat(doc, q2), nullptr);
    const Answer got = run(model, p, concat(doc, q2), &cache);
    EXPECT_EQ(got.reused, 48);
    EXPECT_EQ(got.first, want.first);
    EXPECT_EQ(got.tokens, want.tokens);
    // The same prompt again: everything reused, its logits too.
    const Answer again = run(model, p, concat(doc, q2), &cache);
    EXPECT_EQ(again.reused, 55);
    EXPECT_EQ(again.first, want.first);
    EXPECT_EQ(again.tokens, want.tokens);
  }
}

TEST(PromptCache, CachedEqualsUncachedForEveryPolicy) {
  auto model = test::tiny_byte_model("prompt_cache.gguf", false);
  expect_cached_equals_uncached(model, specs(test::calibrate_tiny(model, "prompt_cache.json")));
}

TEST(PromptCache, CachedEqualsUncachedOnAHybridModel) {
  auto model = test::tiny_byte_model("prompt_cache_hybrid.gguf", true);
  const std::string calib = test::calibrate_tiny(model, "prompt_cache_hybrid.json");
  expect_cached_equals_uncached(model, {"full", "streaming:budget=4,sinks=1", "h2o:budget=6",
                                        "fasa:calib=" + calib + ",budget=4,dense_layers=none"});
}

TEST(PromptCache, WhatItReuses) {
  test::ThreadsGuard one(1);
  const auto plain = test::tiny_byte_model("prompt_cache_reuse.gguf", false);
  const auto hybrid = test::tiny_byte_model("prompt_cache_reuse_hybrid.gguf", true);
  const int n_vocab = plain->config().n_vocab;
  const auto doc = test::random_prompt(40, n_vocab, 4);
  for (const auto& model : {plain, hybrid}) {
    const bool is_hybrid = model == hybrid;
    SCOPED_TRACE(is_hybrid ? "hybrid" : "plain");
    PromptCache cache(64u << 20);
    // The entry ran 30 tokens past the document: more than a prefill chunk (16).
    run(model, "full", concat(doc, test::random_prompt(30, n_vocab, 5)), &cache);
    const auto next = concat(doc, test::random_prompt(6, n_vocab, 6));
    const Answer want = run(model, "full", next, nullptr);
    const Answer got = run(model, "full", next, &cache);
    // A ring no longer holds the document's last window: the hybrid model prefills it all.
    EXPECT_EQ(got.reused, is_hybrid ? 0 : 32);  // 40 common, cut to a chunk boundary
    EXPECT_EQ(got.tokens, want.tokens);
    // A prompt that is a cached prompt's prefix: the rows of its whole chunks (46 = 2 x 16 + 14).
    const Answer prefix =
        run(model, "full", std::vector<int32_t>(next.begin(), next.end() - 1), &cache);
    EXPECT_EQ(prefix.reused, 32);
  }
  // Another context size is another cache layout: nothing to reuse.
  PromptCache cache(64u << 20);
  run(plain, "full", doc, &cache);
  SessionOptions other = options("full");
  other.n_ctx = 96;
  Session s(plain, other);
  EXPECT_EQ(cache.start(s, doc), 0);
  EXPECT_EQ(cache.stats().hits, 0u);
}

TEST(PromptCache, ByteBudgetEvictsTheLeastRecentlyUsed) {
  test::ThreadsGuard one(1);
  const auto model = test::tiny_byte_model("prompt_cache_lru.gguf", false);
  const int n_vocab = model->config().n_vocab;
  const auto a = test::random_prompt(40, n_vocab, 7), b = test::random_prompt(40, n_vocab, 8),
             c = test::random_prompt(40, n_vocab, 9);
  Session probe(model, options("full"));
  probe.prefill(a);
  const uint64_t one_entry = probe.cache().used_bytes();
  PromptCache cache(2 * one_entry + one_entry / 2);  // room for two
  run(model, "full", a, &cache);
  run(model, "full", b, &cache);
  EXPECT_EQ(cache.stats().entries, 2);
  EXPECT_EQ(cache.stats().bytes, 2 * one_entry);
  EXPECT_EQ(run(model, "full", a, &cache).reused, 40);  // a is now the most recent
  run(model, "full", c, &cache);                        // evicts b
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(run(model, "full", b, &cache).reused, 0);
  EXPECT_EQ(run(model, "full", c, &cache).reused, 40);
  // An entry larger than the whole budget is not kept; a zero budget keeps nothing.
  PromptCache small(one_entry / 2);
  run(model, "full", a, &small);
  EXPECT_EQ(small.stats().entries, 0);
  PromptCache off(0);
  run(model, "full", a, &off);
  EXPECT_EQ(run(model, "full", a, &off).reused, 0);
}

}  // namespace
}  // namespace fasa
