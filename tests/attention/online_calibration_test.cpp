// Online calibration (calib=online): the query window, the measurement against its definitions,
// and the policy that calibrates at its first decode step (online_calibrated.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fasa/attention/calibration.h"
#include "fasa/attention/compound_greedy.h"
#include "fasa/attention/frequency_chunks.h"
#include "fasa/attention/online_calibration.h"
#include "fasa/attention/policy.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/expect_error.h"
#include "support/threads_guard.h"
#include "support/tiny_byte_model.h"

namespace fasa {
namespace {

AttnShape shape_of(int n_layers, int n_heads, int n_kv, int hd) {
  return AttnShape{n_layers, n_heads, n_kv, hd, {}};
}

TEST(QueryWindow, KeepsTheNewestQueriesOfEachLayerAndTruncates) {
  const AttnShape sh = shape_of(2, 2, 1, 4);
  QueryWindow w(sh, 3);
  std::vector<float> q(5 * 2 * 4);  // [5 tokens, 2 heads, 4]
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i);
  w.add(0, 10, 2, q.data());  // slots 10, 11
  EXPECT_FALSE(w.full());
  w.add(0, 12, 2, q.data() + 16);  // slots 12, 13: 10 drops out
  w.add(1, 0, 5, q.data());        // a chunk longer than the window: slots 2..4
  EXPECT_TRUE(w.full());
  EXPECT_EQ(w.size(0), 3);
  EXPECT_EQ(w.slot(0, 0), 11);
  EXPECT_EQ(w.slot(0, 2), 13);
  EXPECT_EQ(w.query(0, 0, 1)[0], q[1 * 8 + 4]);  // slot 11 = row 1 of the first chunk, head 1
  EXPECT_EQ(w.query(0, 2, 0)[3], q[16 + 8 + 3]);
  EXPECT_EQ(w.slot(1, 0), 2);
  EXPECT_EQ(w.query(1, 0, 0)[0], q[2 * 8]);
  EXPECT_EQ(w.bytes(), 6u * 2 * 4 * sizeof(float) + 6 * sizeof(int32_t));
  w.truncate(13);  // a rollback to 13 slots
  EXPECT_EQ(w.size(0), 2);
  EXPECT_EQ(w.size(1), 3);
  w.clear();
  EXPECT_EQ(w.size(1), 0);
}

// A cache of random keys and a window of random queries: the calibration equals the definitions
// computed plainly (exact greedy, key_sample 0), for f32 and for f16 rows (read as f32).
TEST(OnlineCalibration, MeasuresTheDefinitionsOnTheCachesKeys) {
  const int n_layers = 2, n_heads = 4, n_kv = 2, hd = 16, n = 120, w = 6;
  const AttnShape sh = shape_of(n_layers, n_heads, n_kv, hd);
  PolicyContext ctx;
  ctx.shape = sh;
  ctx.arch = "llama";
  ctx.rope_layout = RopeLayout::Neox;
  ctx.rope_dim = hd;
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (KvType type : {KvType::F32, KvType::F16}) {
    KvCache cache(sh, type, 128);
    std::vector<float> k(hd), v(hd);
    for (int l = 0; l < n_layers; ++l) {
      for (int h = 0; h < n_kv; ++h) {
        for (int t = 0; t < n; ++t) {
          for (int c = 0; c < hd; ++c) k[c] = g(rng) * (1.0f + 0.2f * (c % (hd / 2)));
          cache.store(l, h, t, k.data(), v.data());
        }
      }
    }
    QueryWindow win(sh, w);
    std::vector<float> q(static_cast<size_t>(w) * n_heads * hd);
    for (int l = 0; l < n_layers; ++l) {
      for (float& x : q) x = g(rng);
      win.add(l, n - w, w, q.data());
    }
    OnlineCalibrationSpec spec;
    spec.window = w;
    spec.k = 10;
    spec.n_compound = 3;
    spec.head_sets = true;
    spec.key_sample = 0;
    const Calibration c = calibrate_online(ctx, spec, win, cache);
    ASSERT_EQ(c.layers, (std::vector<int>{0, 1}));
    EXPECT_EQ(c.n_compound, 3);
    const auto fcs = fc_dims(RopeLayout::Neox, FcLayout::Rope, hd, hd);
    EXPECT_EQ(c.n_fc(), static_cast<int>(fcs.size()));
    for (int l = 0; l < n_layers; ++l) {
      for (int kv = 0; kv < n_kv; ++kv) {
        std::vector<float> keys(static_cast<size_t>(n) * hd);  // the rows as f32
        for (int t = 0; t < n; ++t) {
          kv_row_to_f32(static_cast<const uint8_t*>(cache.k_rows(l, kv)) + t * cache.row_bytes(),
                        type, hd, keys.data() + t * hd);
        }
        std::vector<CaQuery> group;
        for (int h = kv * 2; h < kv * 2 + 2; ++h) {
          std::vector<double> ca_sum(fcs.size(), 0.0), ci(hd, 0.0);
          std::vector<CaQuery> own;
          for (int j = 0; j < w; ++j) {
            const float* qj = win.query(l, j, h);
            const int seen = n - w + j + 1;  // the query of slot n - w + j
            std::vector<float> ca(fcs.size());
            fc_agreement(qj, keys.data(), seen, hd, fcs, 10, ca.data());
            for (size_t f = 0; f < fcs.size(); ++f) ca_sum[f] += ca[f];
            for (int d = 0; d < hd; ++d) {
              ci[d] += std::fabs(qj[d] * keys[static_cast<size_t>(seen - 1) * hd + d]);
            }
            own.push_back({qj, keys.data(), seen});
            group.push_back({qj, keys.data(), seen});
          }
          for (size_t f = 0; f < fcs.size(); ++f) {
            EXPECT_NEAR(c.ca(l, h)[f], ca_sum[f] / w, 1e-5) << l << " " << h << " " << f;
          }
          for (int d = 0; d < hd; ++d) EXPECT_NEAR(c.channels(l, h)[d], ci[d] / w, 1e-4);
          const CompoundSet hs = greedy_compound_fcs(own, hd, fcs, 10, 3);
          EXPECT_EQ(std::vector<int32_t>(c.compound_fcs(l, h), c.compound_fcs(l, h) + 3), hs.fcs);
        }
        const CompoundSet gs = greedy_compound_fcs(group, hd, fcs, 10, 3);
        EXPECT_EQ(std::vector<int32_t>(c.group_compound_fcs(l, kv),
                                       c.group_compound_fcs(l, kv) + 3),
                  gs.fcs);
        for (int s = 0; s < 3; ++s) EXPECT_NEAR(c.group_compound_cas(l, kv)[s], gs.ca[s], 1e-6);
      }
    }
    QueryWindow empty(sh, w);
    test::expect_error([&] { calibrate_online(ctx, spec, empty, cache); }, "saw no query");
  }
}

// Keeps a dense prefill's last queries, as the online policy does.
class WindowRecorder final : public AttentionPolicy {
 public:
  WindowRecorder(const AttnShape& sh, int w) : sh_(sh), win(sh, w) {}
  std::string_view name() const override { return "recorder"; }
  void select(const AttnQuery&, Selection& out) override { out.set_all(); }
  bool wants_prefill_queries() const override { return true; }
  void on_prefill_queries(const KvCache&, int layer, int first, int n, const float* q) override {
    win.add(layer, first, n, q);  // every layer of the llama is global: row = layer
  }
  AttnShape sh_;
  QueryWindow win;
};

std::vector<float> prefill_then_decode(Session& s, const std::vector<int32_t>& prompt,
                                       const std::vector<int32_t>& next) {
  std::vector<float> out = s.prefill(prompt);
  for (int32_t t : next) {
    const auto& l = s.decode(t);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

// calib=online is, bit for bit, the policy made from a calibration file holding what
// calibrate_online measures on the same prefill: for fasa's default selector, fasa with the
// paper's selector and per-query-head sets, and double-sparsity.
TEST(OnlineCalibrated, EqualsThePolicyOfTheSameCalibrationSavedToAFile) {
  test::ThreadsGuard one(1);
  auto model = test::tiny_byte_model("online_tiny.gguf", false);
  const PolicyContext ctx = policy_context(model);
  const auto prompt = test::random_prompt(60, model->config().n_vocab, 7);
  const auto next = test::random_prompt(6, model->config().n_vocab, 8);
  SessionOptions so = test::tiny_session("full", 128);
  WindowRecorder rec(ctx.shape, 8);
  so.external_policy = &rec;
  Session dense(model, so);
  dense.prefill(prompt);
  so.external_policy = nullptr;
  struct Case {
    std::string online, file_spec;
    OnlineCalibrationSpec spec;
  };
  OnlineCalibrationSpec group;  // fasa's default: group sets of n_tip = 0.25 of 8 FCs
  group.window = 8;
  group.n_compound = 2;
  group.head_sets = true;  // a file holds them too (the policy reads only the group sets)
  OnlineCalibrationSpec heads = group;
  heads.head_sets = false;
  heads.n_compound = 0;
  OnlineCalibrationSpec ds = group;
  ds.n_compound = 0;
  ds.agreement = false;
  const std::vector<Case> cases = {
      {"fasa:calib=online,calib_window=8,budget=6,dense_layers=none",
       "fasa:budget=6,dense_layers=none", group},
      {"fasa:calib=online,calib_window=8,budget=6,method=paper,gqa=per-head,dense_layers=none",
       "fasa:budget=6,method=paper,gqa=per-head,dense_layers=none", heads},
      {"double-sparsity:calib=online,calib_window=8,budget=6,channels=4,dense_layers=none",
       "double-sparsity:budget=6,channels=4,dense_layers=none", ds},
  };
  for (const Case& cs : cases) {
    Calibration c = calibrate_online(ctx, cs.spec, rec.win, dense.cache());
    c.model_sha256 = ctx.model_sha256();
    const std::string path = ::testing::TempDir() + "/online_as_file.json";
    save_calibration(c, path);
    so.policy = cs.file_spec + ",calib=" + path;
    Session from_file(model, so);
    so.policy = cs.online;
    Session online(model, so);
    const auto want = prefill_then_decode(from_file, prompt, next);
    EXPECT_EQ(prefill_then_decode(online, prompt, next), want) << cs.online;
    const OnlineCalibrationInfo* info = online.policy().online_calibration();
    ASSERT_NE(info, nullptr);
    EXPECT_TRUE(info->done);
    EXPECT_FALSE(info->from_decode);
    EXPECT_FALSE(info->reused);
    EXPECT_EQ(info->queries, 8);
    EXPECT_EQ(info->window, 8);
    EXPECT_LT(from_file.attn_stats().slots_read, from_file.attn_stats().slots_visible);
  }
}

// Without a prefill to watch (a synthetic fill, a restored prefix) the policy attends densely
// over its first `window` decode steps, then calibrates from their queries.
TEST(OnlineCalibrated, CalibratesFromItsFirstDecodeStepsWhenNoPrefillWasSeen) {
  test::ThreadsGuard one(1);
  auto model = test::tiny_byte_model("online_tiny2.gguf", false);
  const auto next = test::random_prompt(9, model->config().n_vocab, 3);
  SessionOptions so = test::tiny_session("full", 128);
  Session full(model, so);
  so.policy = "fasa:calib=online,calib_window=4,budget=6,dense_layers=none";
  Session online(model, so);
  full.fill_synthetic(50, 11);
  online.fill_synthetic(50, 11);  // no longer refused: it can do without prefill queries
  for (size_t i = 0; i < next.size(); ++i) {
    const auto want = full.decode(next[i]);
    const auto got = online.decode(next[i]);
    const OnlineCalibrationInfo* info = online.policy().online_calibration();
    if (i < 4) {  // collecting: dense, so the very logits of full attention
      EXPECT_EQ(got, want) << i;
      EXPECT_FALSE(info->done);
    } else {
      EXPECT_TRUE(info->done);
      EXPECT_TRUE(info->from_decode);
      EXPECT_EQ(info->queries, 4);
    }
  }
  EXPECT_LT(online.attn_stats().slots_read, online.attn_stats().slots_visible);
}

// Copies of one prefill (eval's shared prefill, the prompt cache) calibrate once: the first that
// decodes makes it, the others reuse it and decode the same.
TEST(OnlineCalibrated, CopiesOfOnePrefillShareOneCalibration) {
  test::ThreadsGuard one(1);
  auto model = test::tiny_byte_model("online_tiny3.gguf", false);
  const auto prompt = test::random_prompt(40, model->config().n_vocab, 5);
  const auto next = test::random_prompt(4, model->config().n_vocab, 6);
  SessionOptions so =
      test::tiny_session("fasa:calib=online,calib_window=8,budget=5,dense_layers=none", 128);
  Session src(model, so);
  src.prefill(prompt);
  Session a(model, so), b(model, so);
  a.copy_prefix_from(src);
  b.copy_prefix_from(src);
  std::vector<float> la, lb;
  for (int32_t t : next) {
    const auto& x = a.decode(t);
    la.insert(la.end(), x.begin(), x.end());
  }
  for (int32_t t : next) {
    const auto& x = b.decode(t);
    lb.insert(lb.end(), x.begin(), x.end());
  }
  EXPECT_EQ(la, lb);
  EXPECT_FALSE(a.policy().online_calibration()->reused);
  EXPECT_GT(a.policy().online_calibration()->seconds, 0.0);
  EXPECT_TRUE(b.policy().online_calibration()->reused);
  // A session of its own prefill decodes the same as the copies.
  Session own(model, so);
  own.prefill(prompt);
  std::vector<float> lo;
  for (int32_t t : next) {
    const auto& x = own.decode(t);
    lo.insert(lo.end(), x.begin(), x.end());
  }
  EXPECT_EQ(lo, la);
  // A copy of a session that has decoded takes the calibration it made; a copy of only part of
  // a prefill takes nothing (the window would not be its prompt's) and collects decode queries.
  Session c(model, so);
  c.copy_prefix_from(a);
  c.decode(next[0]);
  EXPECT_TRUE(c.policy().online_calibration()->reused);
  Session part(model, so);
  part.copy_prefix_from(src, 30, &src.policy());
  EXPECT_EQ(part.policy().resident_bytes(), 0u);  // an empty window
  part.decode(next[0]);
  EXPECT_FALSE(part.policy().online_calibration()->done);
}

TEST(OnlineCalibrated, BadOptionsAreClearErrors) {
  auto model = test::tiny_byte_model("online_tiny4.gguf", false);
  const PolicyContext ctx = policy_context(model);
  auto make = [&](const std::string& name, const PolicyOptions& o) {
    return [&ctx, name, o] { make_policy(name, ctx, o); };
  };
  test::expect_error(make("fasa", {{"calib", "online"}, {"budget", "8"}, {"variant", "m"}}),
                     "calib=online does not serve variant m");
  test::expect_error(make("fasa",
                          {{"calib", "/nonexistent.json"}, {"budget", "8"}, {"calib_window", "8"}}),
                     "calib_window applies to calib=online only");
  test::expect_error(make("double-sparsity",
                          {{"calib", "/nonexistent.json"}, {"budget", "8"}, {"calib_window", "8"}}),
                     "calib_window applies to calib=online only");
  test::expect_error(make("fasa", {{"calib", "online"}, {"budget", "8"}, {"calib_window", "0"}}),
                     "calib_window must be a whole number in [1, 4096]");
  test::expect_error(make("fasa", {{"calib", ""}, {"budget", "8"}}), "calib");
  test::expect_error(make("fasa",
                          {{"calib", "/nonexistent.json"}, {"budget", "8"}, {"calib_keys", "64"}}),
                     "calib_keys applies to calib=online only");
  test::expect_error(make("fasa", {{"calib", "online"}, {"budget", "8"}, {"calib_keys", "-1"}}),
                     "calib_keys must be a whole number");
  test::expect_error(make("double-sparsity",
                          {{"calib", "online"}, {"budget", "8"}, {"calib_keys", "64"}}),
                     "has no option 'calib_keys'");
}

}  // namespace
}  // namespace fasa
