// The eval tools' shared prefill (eval/shared_prefill.h) on a tiny model: whichever source a
// setting's session starts from (the watched dense prefill, an earlier setting's session, a
// pristine prefill of its own), it equals a session that prefilled the prompt alone, bit for
// bit, and the prompt is prefilled only as often as the settings need.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fasa/engine/session.h"
#include "fasa/eval/shared_prefill.h"
#include "fasa/model/model.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

struct PrefillSetup {
  std::shared_ptr<const Model> model;
  std::vector<int32_t> tokens;  // [45] the prompt, then the tokens decoded after it
  std::vector<int32_t> prompt;  // [33]: prefilled in chunks of 16, 15, 2 (no decode step)
  SessionOptions so;
  PrefillSetup() {
    const std::string path = ::testing::TempDir() + "/shared_prefill_tiny.gguf";
    test::TinySpec spec;
    spec.wtype = DType::Q8_0;
    test::write_tiny_model(path, spec);
    model = Model::load(path);
    tokens = test::random_tokens(45, spec.n_vocab, 7);
    prompt.assign(tokens.begin(), tokens.begin() + 33);
    so.n_ctx = 64;
    so.prefill_chunk = 16;
  }
  // The session's logits after its prefix, then after each token decoded past the prompt.
  std::vector<float> decode_rest(Session& s) const {
    std::vector<float> out = s.last_logits();
    for (size_t i = prompt.size(); i < tokens.size(); ++i) {
      const auto& l = s.decode(tokens[i]);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  }
  // What setting `spec` gives after prefilling the prompt alone.
  std::vector<float> own(const std::string& spec) const {
    SessionOptions o = so;
    o.policy = spec;
    Session s(model, o);
    s.prefill(prompt);
    return decode_rest(s);
  }
  std::unique_ptr<Session> fresh(const std::string& spec) const {
    SessionOptions o = so;
    o.policy = spec;
    return std::make_unique<Session>(model, o);
  }
};

// Decode-time policies, prefill-aware ones the dense prefill watches (two budgets of one
// window share its statistics), and a second SnapKV window it does not watch: the first of
// those prefills, the second copies it.
const std::vector<std::string> kSpecs = {
    "full",
    "streaming:budget=8",
    "snapkv:window=4,budget=9",
    "h2o:recent=0.5,budget=12",
    "snapkv:window=5,budget=9",
    "oracle:budget=10",
    "snapkv:window=4,budget=14",
    "snapkv:window=5,budget=14",
};

TEST(SharedPrefill, StartedSessionsEqualTheirOwnPrefill) {
  const PrefillSetup t;
  const SharedPrefill shared(t.model, kSpecs, t.so, policy_context(t.model));
  EXPECT_TRUE(shared.via_dense(2));
  EXPECT_FALSE(shared.via_dense(4));  // another window: not watched
  EXPECT_TRUE(shared.can_copy(7, 4));
  EXPECT_FALSE(shared.can_copy(7, 2));
  PromptPrefill prompt(shared, t.prompt, PromptPrefill::Sources::Started);
  std::vector<std::unique_ptr<Session>> sessions;
  for (size_t p = 0; p < kSpecs.size(); ++p) {  // every session starts before any decodes
    sessions.push_back(t.fresh(kSpecs[p]));
    prompt.start(p, *sessions[p]);
  }
  EXPECT_EQ(prompt.n_prefills(), 2);  // the dense prefill, snapkv window=5's own
  for (size_t p = 0; p < kSpecs.size(); ++p) {
    EXPECT_EQ(t.decode_rest(*sessions[p]), t.own(kSpecs[p])) << kSpecs[p];
  }
  // The dense session is full attention over the same prompt.
  EXPECT_EQ(t.decode_rest(prompt.dense()), t.own("full"));
  EXPECT_EQ(prompt.n_prefills(), 2);
}

TEST(SharedPrefill, PristineSourcesServeSessionsThatRunOnAtOnce) {
  const PrefillSetup t;
  const SharedPrefill shared(t.model, kSpecs, t.so, policy_context(t.model));
  PromptPrefill prompt(shared, t.prompt, PromptPrefill::Sources::Pristine);
  for (size_t p = 0; p < kSpecs.size(); ++p) {  // each session decodes before the next starts
    const auto s = shared.make_session(p);
    prompt.start(p, *s);
    EXPECT_EQ(t.decode_rest(*s), t.own(kSpecs[p])) << kSpecs[p];
  }
  EXPECT_EQ(prompt.n_prefills(), 2);
  EXPECT_GT(prompt.prefill_seconds(), 0.0);
}

// Nothing watched: with Started sources the first setting prefills itself and the others copy
// it (no dense session); dense() makes and prefills one when asked.
TEST(SharedPrefill, WithoutWatchedPoliciesTheFirstSessionPrefills) {
  const PrefillSetup t;
  const std::vector<std::string> specs = {"streaming:budget=8", "oracle:budget=10", "full"};
  const SharedPrefill shared(t.model, specs, t.so, policy_context(t.model));
  PromptPrefill prompt(shared, t.prompt, PromptPrefill::Sources::Started);
  std::vector<std::unique_ptr<Session>> sessions;
  for (size_t p = 0; p < specs.size(); ++p) {
    sessions.push_back(t.fresh(specs[p]));
    prompt.start(p, *sessions[p]);
  }
  EXPECT_EQ(prompt.n_prefills(), 1);
  for (size_t p = 0; p < specs.size(); ++p) {
    EXPECT_EQ(t.decode_rest(*sessions[p]), t.own(specs[p])) << specs[p];
  }
  EXPECT_EQ(t.decode_rest(prompt.dense()), t.own("full"));
  EXPECT_EQ(prompt.n_prefills(), 2);
}

}  // namespace
}  // namespace fasa
