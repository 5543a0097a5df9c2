// PrefillObservers (one watched dense prefill for several prefill-aware policies): against brute-force references (tests/attention/policies/eviction_fixture.h).
#include "attention/policies/eviction_fixture.h"

namespace fasa {
namespace {

// One dense prefill watched for several prefill-aware policies (the task runner's shared
// prefill) gives each of them exactly the state its own prefill would. The prompt (33 tokens in
// chunks of 16) would end in a one-token chunk: prefill keeps it dense (no decode step), so
// even the policies' own sessions stay copyable sources.
TEST(PrefillObservers, OneWatchedPrefillEqualsEachPolicysOwn) {
  const ForkSetup f("observers_tiny.gguf", 5, 45, 33);
  const auto& [model, prompt] = std::tie(f.model, f.prompt);
  const PolicyContext ctx = policy_context(model);
  SessionOptions so;
  so.n_ctx = 64;
  so.prefill_chunk = 16;
  auto run_decode = [&](Session& s) { return f.decode_rest(s); };
  const std::vector<std::string> bases = {"snapkv:window=4,budget=",
                                          "pyramidkv:window=4,beta=3,budget=",
                                          "h2o:recent=0.5,budget="};
  std::vector<std::unique_ptr<AttentionPolicy>> members;
  for (const std::string& b : bases) {
    std::string name;
    PolicyOptions po;
    parse_policy_spec(b + "20", &name, &po);
    members.push_back(make_policy(name, ctx, po));
  }
  PrefillObservers observers(std::move(members));
  SessionOptions wo = so;
  wo.external_policy = &observers;
  Session watched(model, wo);
  watched.prefill(prompt);
  EXPECT_EQ(watched.attn_stats().decode_tokens, 0u);  // the one-token tail was not a decode
  so.policy = "full";
  Session dense(model, so);
  dense.prefill(prompt);
  EXPECT_EQ(dense.last_logits(), watched.last_logits());
  for (const std::string& base : bases) {
    for (const char* b : {"9", "14"}) {
      so.policy = base + b;
      Session own(model, so);
      own.prefill(prompt);
      EXPECT_EQ(own.attn_stats().decode_tokens, 0u);
      Session from_own(model, so);
      from_own.copy_prefix_from(own);  // a pristine source (no decode step in its prefill)
      Session forked(model, so);
      ASSERT_TRUE(forked.can_copy_prefix_from(watched)) << so.policy;
      forked.copy_prefix_from(watched);
      const std::vector<float> want = run_decode(own);
      EXPECT_EQ(run_decode(forked), want) << so.policy;
      EXPECT_EQ(run_decode(from_own), want) << so.policy;
    }
  }
  // Sources only for the watched names; another window is another state.
  EXPECT_EQ(prefill_state_source(observers, "quest"), nullptr);
  EXPECT_NE(prefill_state_source(observers, "h2o"), nullptr);
  so.policy = "quest:budget=9";
  Session quest(model, so);
  EXPECT_TRUE(quest.can_copy_prefix_from(watched));  // decode-time: needs the cache only
  so.policy = "snapkv:budget=9,window=5";
  Session w5(model, so);
  EXPECT_THROW(w5.copy_prefix_from(watched), Error);
  EXPECT_EQ(w5.n_past(), 0);
  // Members must learn from the prefill, once each; observers are never a destination.
  auto make = [&](const std::string& s) {
    std::string name;
    PolicyOptions po;
    parse_policy_spec(s, &name, &po);
    return make_policy(name, ctx, po);
  };
  auto expect_refused = [](const std::function<void()>& f, const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_refused(
      [&] {
        std::vector<std::unique_ptr<AttentionPolicy>> m;
        m.push_back(make("streaming:budget=8"));
        PrefillObservers bad(std::move(m));
      },
      "policy 'streaming' does not learn from the prefill");
  expect_refused(
      [&] {
        std::vector<std::unique_ptr<AttentionPolicy>> m;
        m.push_back(make("h2o:budget=8"));
        m.push_back(make("h2o:budget=9"));
        PrefillObservers bad(std::move(m));
      },
      "policy 'h2o' is watched twice");
  expect_refused([&] { observers.copy_prefill_state_from(observers); },
                 "only gather prefill statistics");
}

}  // namespace
}  // namespace fasa
