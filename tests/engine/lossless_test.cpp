// Lossless decoding (engine/lossless.h): greedy output equals `--policy full` token for token
// for every policy and K, rollback returns every policy to its save point exactly, the kept
// rows are the dense ones (a session that prefilled the generated text densely is in the same
// state), and temperature sampling has full attention's distribution (a chi-square test).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fasa/calibrate/calibrator.h"
#include "fasa/core/error.h"
#include "fasa/engine/adaptive_k.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/lossless.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/expect_error.h"
#include "support/model_path.h"
#include "support/threads_guard.h"
#include "support/tiny_byte_model.h"
#include "support/tiny_calibration.h"

namespace fasa {
namespace {

// Policies with small budgets, so drafts often disagree with full attention.
std::vector<std::string> policy_specs(const std::string& calib) {
  const std::string c = "fasa:calib=" + calib, d = "double-sparsity:calib=" + calib;
  return {"oracle:budget=4,gqa=per-head",
          "streaming:budget=4,sinks=1",
          "quest:budget=6,page=4,dense_layers=none",
          "sparq:budget=5,r=4",
          c + ",budget=4,dense_layers=none",
          c + ",budget=0.2,gqa=per-head,sink=1,recent=1,dense_layers=none",
          c + ",budget=4,n_tip=2,fcs=compound,fc_sets=group,mean_value=on,layer_budget=calibrated,"
              "dense_layers=none",
          d + ",budget=4,channels=4,dense_layers=none",
          "snapkv:budget=8,window=4",
          "pyramidkv:budget=8,window=2",
          "h2o:budget=6",
          "pyramidkv+fasa:keep=12,window=2," + c.substr(5) + ",budget=4,dense_layers=none",
          "fasa:calib=online,calib_window=4,budget=4,dense_layers=none",
          "double-sparsity:calib=online,budget=4,channels=4,dense_layers=none",
          "pyramidkv+fasa:keep=12,window=2,calib=online,calib_window=4,budget=4,"
          "dense_layers=none"};
}

SessionOptions session_options(const std::string& policy) {
  return test::tiny_session(policy, 128);
}

void expect_greedy_equals_full(const std::shared_ptr<const Model>& model,
                               const std::vector<std::string>& policies) {
  const int n_vocab = model->config().n_vocab;
  test::ThreadsGuard one(1);  // tiny steps: no thread handoffs
  int64_t drafted = 0, accepted = 0;
  for (uint32_t prompt_seed = 1; prompt_seed <= 3; ++prompt_seed) {
    const auto prompt = test::random_prompt(20 + 7 * prompt_seed, n_vocab, prompt_seed);
    Session full(model, session_options("full"));
    const GenerateResult want = generate(full, prompt, test::greedy_options(32), nullptr);
    ASSERT_EQ(want.tokens.size(), 32u);
    for (const std::string& p : policies) {
      for (const char* k : {"1", "4", "14", "auto"}) {
        Session s(model, session_options(p));
        LosslessStats st;
        const GenerateResult got =
            generate_lossless(s, prompt, test::greedy_options(32), parse_lossless(k), nullptr, &st);
        ASSERT_EQ(got.tokens, want.tokens) << p << " K=" << k << " prompt " << prompt_seed;
        EXPECT_EQ(got.text, want.text);
        EXPECT_EQ(st.tokens, 32);
        EXPECT_GE(st.verifications, 32 / 15);
        drafted += st.drafted;
        accepted += st.accepted;
      }
    }
  }
  // The drafts were not all right (the test exercises rejections) nor all wrong.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
}

TEST(Lossless, GreedyEqualsFullForEveryPolicyAndK) {
  auto model = test::tiny_byte_model("lossless_tiny.gguf", false);
  expect_greedy_equals_full(model,
                            policy_specs(test::calibrate_tiny(model, "lossless_calib.json")));
}

TEST(Lossless, GreedyEqualsFullOnAHybridStack) {
  auto model = test::tiny_byte_model("lossless_hybrid.gguf", true);
  const std::string calib = test::calibrate_tiny(model, "lossless_hybrid_calib.json");
  expect_greedy_equals_full(model, {"streaming:budget=4,sinks=1", "h2o:budget=6",
                                    "fasa:calib=" + calib + ",budget=4,dense_layers=none"});
}

// Real models, real text (a held-in novel): 2 prompts of 200 tokens, 32 greedy tokens.
void expect_real_model_greedy_equals_full(const std::string& path) {
  std::string why;
  const std::string text_file = test::text_path("austen_emma.txt", &why);
  if (text_file.empty()) GTEST_SKIP() << why;
  auto model = Model::load(path);
  std::ifstream in(text_file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<int32_t> all =
      model->require_tokenizer().encode(text.substr(20000, 40000), false, false);
  int64_t drafted = 0, accepted = 0;
  for (int i = 0; i < 2; ++i) {
    const std::vector<int32_t> prompt(all.begin() + 1000 * i, all.begin() + 1000 * i + 200);
    SessionOptions so;
    so.n_ctx = 512;
    Session full(model, so);
    const GenerateResult want = generate(full, prompt, test::greedy_options(32), nullptr);
    for (const char* p : {"streaming:budget=32", "h2o:budget=48"}) {
      for (const char* k : {"3", "auto"}) {
        so.policy = p;
        Session s(model, so);
        LosslessStats st;
        const GenerateResult got =
            generate_lossless(s, prompt, test::greedy_options(32), parse_lossless(k), nullptr, &st);
        ASSERT_EQ(got.tokens, want.tokens) << p << " K=" << k << " prompt " << i;
        drafted += st.drafted;
        accepted += st.accepted;
      }
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
}

TEST(Lossless, GreedyEqualsFullOnSmolLM2) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  expect_real_model_greedy_equals_full(path);
}

TEST(Lossless, GreedyEqualsFullOnGemma3) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  expect_real_model_greedy_equals_full(path);
}

// Decodes `tokens` one by one, returning every step's logits and the policy's resident bytes.
std::vector<float> decode_all(Session& s, const std::vector<int32_t>& tokens,
                              std::vector<uint64_t>* resident) {
  std::vector<float> out;
  for (int32_t t : tokens) {
    const auto& l = s.decode(t);
    out.insert(out.end(), l.begin(), l.end());
    resident->push_back(s.policy().resident_bytes());
  }
  return out;
}

// A save point, drafts decoded with the policy, a rollback: every later step equals, bit for
// bit, a session that never drafted (its selections, hence its logits), and so do the bytes
// the policy keeps.
void expect_rollback_restores(const std::shared_ptr<const Model>& model,
                              const std::vector<std::string>& policies) {
  const int n_vocab = model->config().n_vocab;
  const auto prompt = test::random_prompt(37, n_vocab, 5);
  const auto drafts = test::random_prompt(9, n_vocab, 6);
  const auto next = test::random_prompt(12, n_vocab, 7);
  for (const std::string& p : policies) {
    Session a(model, session_options(p)), b(model, session_options(p));
    a.prefill(prompt);
    b.prefill(prompt);
    std::vector<uint64_t> res_a, res_b, ignored;
    for (int round = 0; round < 2; ++round) {  // twice: a rollback after decode steps too
      a.save_point();
      decode_all(a, drafts, &ignored);
      a.rollback();
      ASSERT_EQ(a.n_past(), b.n_past()) << p;
      // An online calibration made while drafting stays (online_calibrated.h): `a` then holds the
      // real policy's side data where `b` still holds its query window, until b decodes too.
      if (p.find("calib=online") == std::string::npos) {
        EXPECT_EQ(a.policy().resident_bytes(), b.policy().resident_bytes()) << p;
      }
      ASSERT_EQ(decode_all(a, next, &res_a), decode_all(b, next, &res_b))
          << p << " round " << round;
      EXPECT_EQ(res_a, res_b) << p;
    }
  }
}

TEST(Lossless, RollbackReturnsEveryPolicyToItsSavePoint) {
  auto model = test::tiny_byte_model("lossless_rb.gguf", false);
  auto specs = policy_specs(test::calibrate_tiny(model, "lossless_rb_calib.json"));
  specs.push_back("full");
  expect_rollback_restores(model, specs);
}

TEST(Lossless, RollbackOnAHybridStack) {
  auto model = test::tiny_byte_model("lossless_rb_hybrid.gguf", true);
  const std::string calib = test::calibrate_tiny(model, "lossless_rb_hybrid_calib.json");
  expect_rollback_restores(model, {"quest:budget=6,page=4,dense_layers=none", "h2o:budget=6",
                                   "fasa:calib=" + calib + ",budget=4,dense_layers=none"});
}

// After lossless generation every kept row is the verification's dense row: the session is in
// the state of one that prefilled the prompt and the generated tokens densely, so the next
// (sparse) decode steps agree bit for bit. (Policies that learn from prefill queries, H2O and
// SnapKV, see a prefill's queries that lossless decoding never shows them: not compared.)
TEST(Lossless, KeptRowsAreTheDenseRows) {
  auto model = test::tiny_byte_model("lossless_rows.gguf", false);
  const std::string calib = test::calibrate_tiny(model, "lossless_rows_calib.json");
  const int n_vocab = model->config().n_vocab;
  const auto prompt = test::random_prompt(30, n_vocab, 11);
  const auto next = test::random_prompt(8, n_vocab, 12);
  for (const std::string& p :
       {std::string("quest:budget=6,page=4,dense_layers=none"), std::string("sparq:budget=5,r=4"),
        "fasa:calib=" + calib + ",budget=4,dense_layers=none",
        "double-sparsity:calib=" + calib + ",budget=4,channels=4,dense_layers=none"}) {
    Session a(model, session_options(p));
    const GenerateResult r = generate_lossless(a, prompt, test::greedy_options(20),
                                               parse_lossless("4"), nullptr, nullptr);
    // a holds the prompt and every generated token but the last (not appended yet).
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), r.tokens.begin(), r.tokens.end() - 1);
    ASSERT_EQ(a.n_past(), static_cast<int>(all.size())) << p;
    SessionOptions so = session_options(p);
    so.prefill_chunk = 7;
    Session b(model, so);
    b.prefill(all);
    std::vector<uint64_t> ra, rb;
    EXPECT_EQ(decode_all(a, next, &ra), decode_all(b, next, &rb)) << p;
    EXPECT_EQ(ra, rb) << p;
  }
}

// The exact distribution of the next `n` tokens under full attention, by enumeration: every
// sequence of ids the sampler's filters let through, with its probability.
void enumerate(const std::shared_ptr<const Model>& model, const Session& s, Sampler& sampler,
               std::vector<int32_t>& seq, double p, int n,
               std::map<std::vector<int32_t>, double>* out) {
  if (static_cast<int>(seq.size()) == n) {
    (*out)[seq] = p;
    return;
  }
  TokenDist d;
  sampler.distribution(s.last_logits().data(), s.model().config().n_vocab, &d);
  for (size_t i = 0; i < d.ids.size(); ++i) {
    Session c(model, session_options("full"));
    c.copy_prefix_from(s);
    c.decode(d.ids[i]);
    seq.push_back(d.ids[i]);
    enumerate(model, c, sampler, seq, p * d.w[i] / d.sum, n, out);
    seq.pop_back();
  }
}

// Speculative sampling keeps full attention's distribution whatever the drafts: 4 tokens at
// temperature 1 with top-k 2 (16 sequences), drafted by a policy that reads 8 slots, against the
// exact probabilities; chi-square at p = 0.001 (the seeds are fixed, so the test is
// deterministic; accepting every draft, or never correcting from max(0, q - p), fails it).
TEST(Lossless, SamplingKeepsFullAttentionsDistribution) {
  auto model = test::tiny_byte_model("lossless_dist.gguf", false);
  test::ThreadsGuard one(1);
  const int n = 4, runs = 4000;
  GenerateOptions go;
  go.n_predict = n;
  go.stop_at_eog = false;
  go.sampler.temp = 1.0f;
  go.sampler.top_k = 2;
  go.sampler.top_p = 1.0f;
  go.sampler.min_p = 0.0f;
  const auto prompt = test::random_prompt(12, model->config().n_vocab, 21);
  Session base(model, session_options("full"));
  base.prefill(prompt);
  std::map<std::vector<int32_t>, double> exact;
  Sampler filters(go.sampler);
  std::vector<int32_t> seq;
  enumerate(model, base, filters, seq, 1.0, n, &exact);
  ASSERT_EQ(exact.size(), 16u);
  std::map<std::vector<int32_t>, int> seen;
  LosslessStats st;
  Session s(model, session_options("streaming:budget=8,sinks=1"));
  for (int r = 0; r < runs; ++r) {
    s.reset();
    s.copy_prefix_from(base);
    go.sampler.seed = 1000 + r;
    ++seen[generate_lossless(s, go, parse_lossless("3"), nullptr, &st).tokens];
  }
  EXPECT_GT(st.accepted, st.drafted / 10);
  EXPECT_LT(st.accepted, st.drafted * 9 / 10);
  double chi2 = 0.0;
  int df = -1;
  for (const auto& [tokens, p] : exact) {
    const double want = p * runs;
    ASSERT_GE(want, 5.0) << "a sequence too rare for the test";
    const double d = seen[tokens] - want;
    chi2 += d * d / want;
    ++df;
  }
  EXPECT_EQ(seen.size(), exact.size());  // nothing outside the filters' support
  // The chi-square quantile at 0.999 (Wilson-Hilferty; 37.7 for 15 degrees of freedom).
  const double h = 2.0 / (9.0 * df), limit = df * std::pow(1.0 - h + 3.0902 * std::sqrt(h), 3);
  EXPECT_LT(chi2, limit) << "chi-square with " << df << " degrees of freedom";
}

// `auto`'s choice from measured times (synthetic, so the test does not depend on the machine):
// every draft kept and verifications that cost little more per extra token -> many drafts;
// no draft kept -> dense decoding (K = 0) with a probe of K = 2 every 16th verification; drafts
// as slow as a dense step -> dense decoding too.
int settle(AdaptiveK& ak, double accept, double t_draft, double v0, double v1, int rounds,
           int* probes) {
  int k = 0;
  for (int r = 0; r < rounds; ++r) {
    k = ak.next();
    if (probes && k == 2) ++*probes;
    ak.observe(k, static_cast<int>(accept * k), t_draft * k, v0 + v1 * (k + 1));
  }
  return ak.next();
}

TEST(Lossless, AutoChoosesKFromTheMeasuredTimes) {
  AdaptiveK cheap;
  EXPECT_EQ(cheap.next(), 4);  // nothing measured yet
  EXPECT_GE(settle(cheap, 1.0, 1.0, 20.0, 1.0, 40, nullptr), 12);
  AdaptiveK wrong;
  int probes = 0;
  settle(wrong, 0.0, 1.0, 20.0, 1.0, 64, &probes);
  EXPECT_GE(probes, 3);
  EXPECT_LE(probes, 5);
  AdaptiveK slow_drafts;
  EXPECT_EQ(settle(slow_drafts, 0.7, 21.0, 20.0, 1.0, 40, nullptr), 0);
  // End to end, a drafter that reads one slot: few drafts kept, and the output is still full
  // attention's. How many it drafts depends on this machine's times (on a tiny model a batched
  // verification may cost little more than one dense step, so long drafts can pay even at a low
  // acceptance rate); the choice itself is checked on the synthetic times above.
  test::ThreadsGuard one(1);
  auto model = test::tiny_byte_model("lossless_auto.gguf", false);
  const auto prompt = test::random_prompt(40, model->config().n_vocab, 8);
  Session full(model, session_options("full"));
  const GenerateResult want = generate(full, prompt, test::greedy_options(80), nullptr);
  LosslessStats bad;
  Session b(model, session_options("streaming:budget=1,sinks=0"));
  const GenerateResult got =
      generate_lossless(b, prompt, test::greedy_options(80), parse_lossless("auto"), nullptr, &bad);
  EXPECT_LT(bad.acceptance(), 0.5);
  EXPECT_EQ(got.tokens, want.tokens);
}

TEST(Lossless, BadOptionsAreRefused) {
  for (const char* bad : {"", "x", "-1", "15", "4x", "2.5"}) {
    EXPECT_THROW(parse_lossless(bad), Error) << bad;
  }
  EXPECT_EQ(parse_lossless("off").k, 0);
  EXPECT_EQ(lossless_name(parse_lossless("auto")), "auto");
  EXPECT_EQ(parse_lossless("14").k, 14);
  auto model = test::tiny_byte_model("lossless_bad.gguf", false);
  const auto prompt = test::random_prompt(10, model->config().n_vocab, 3);
  SessionOptions so = session_options("full");
  so.prefill_chunk = 4;
  Session s(model, so);
  test::expect_error(
      [&] {
        generate_lossless(s, prompt, test::greedy_options(4), parse_lossless("6"), nullptr,
                          nullptr);
      },
      "prefill chunk must be at least");
  const std::string calib = test::calibrate_tiny(model, "lossless_bad_calib.json");
  Session m(model, session_options("fasa:calib=" + calib +
                                   ",budget=4,variant=m,offload_dir=" + ::testing::TempDir()));
  test::expect_error(
      [&] {
        generate_lossless(m, prompt, test::greedy_options(4), parse_lossless("2"), nullptr,
                          nullptr);
      },
      "tiered KV cache");
}

}  // namespace
}  // namespace fasa
