// Online calibration (calib=online): the query window, the measurement against its definitions,
// and the policy that calibrates at its first decode step (online_calibrated.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fasa/attention/calibration.h"
#include "fasa/attention/compound_greedy.h"
#include "fasa/attention/frequency_chunks.h"
#include "fasa/attention/online_calibration.h"
#include "fasa/attention/policy_facets.h"
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

// With spread P: the newest W queries and, of the older ones, the slots that are multiples of
// the smallest power-of-two stride with at most P multiples in [0, newest]; whatever the chunks,
// and a window fed only another's held queries (a prompt-cache file's) holds the same ones.
TEST(QueryWindow, SpreadKeepsEvenlySpacedOlderQueriesWhateverTheChunks) {
  const AttnShape sh = shape_of(1, 1, 1, 2);
  const int n = 100, W = 4, P = 8;
  std::vector<float> q(2 * n);  // [n tokens, 1 head, 2]
  for (int t = 0; t < n; ++t) q[2 * t] = q[2 * t + 1] = static_cast<float>(t);
  // newest slot 99: stride 16 (100 / 16 + 1 = 7 <= 8 multiples; stride 8 has 13)
  std::vector<int> want = {0, 16, 32, 48, 64, 80, 96, 97, 98, 99};
  auto held = [](const QueryWindow& w) {
    std::vector<int> s;
    for (int j = 0; j < w.size(0); ++j) {
      s.push_back(w.slot(0, j));
      EXPECT_EQ(w.query(0, j, 0)[1], static_cast<float>(w.slot(0, j)));  // its own row
    }
    return s;
  };
  for (int chunk : {1, 3, 7, 32, 100}) {
    QueryWindow w(sh, W, P);
    for (int t = 0; t < n; t += chunk) w.add(0, t, std::min(chunk, n - t), q.data() + 2 * t);
    EXPECT_EQ(held(w), want) << "chunk " << chunk;
    EXPECT_TRUE(w.full());
  }
  QueryWindow all(sh, W, P);
  all.add(0, 0, 60, q.data());  // a prefix: newest 59, stride 8
  EXPECT_EQ(held(all), (std::vector<int>{0, 8, 16, 24, 32, 40, 48, 56, 57, 58, 59}));
  QueryWindow replay(sh, W, P);  // its held queries only, then the rest of the prompt
  for (int j = 0; j < all.size(0); ++j) replay.add(0, all.slot(0, j), 1, all.query(0, j, 0));
  replay.add(0, 60, n - 60, q.data() + 120);
  EXPECT_EQ(held(replay), want);
  QueryWindow none(sh, W);  // spread 0: the newest W only
  none.add(0, 0, n, q.data());
  EXPECT_EQ(held(none), (std::vector<int>{96, 97, 98, 99}));
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

// A prompt shorter than K: CA's top-K is capped at a quarter of the keys (K = n would make every
// FC agree fully and the ranking arbitrary), so k = 256 on 40 keys measures what k = 10 does.
TEST(OnlineCalibration, CapsTopKAtAQuarterOfAShortPromptsKeys) {
  const int n_heads = 2, hd = 16, n = 40, w = 4;
  const AttnShape sh = shape_of(1, n_heads, 1, hd);
  PolicyContext ctx;
  ctx.shape = sh;
  ctx.arch = "llama";
  ctx.rope_layout = RopeLayout::Neox;
  ctx.rope_dim = hd;
  std::mt19937 rng(9);
  std::normal_distribution<float> g(0.0f, 1.0f);
  KvCache cache(sh, KvType::F32, 64);
  std::vector<float> k(hd), v(hd);
  for (int t = 0; t < n; ++t) {
    for (int c = 0; c < hd; ++c) k[c] = g(rng) * (1.0f + 0.3f * (c % (hd / 2)));
    cache.store(0, 0, t, k.data(), v.data());
  }
  QueryWindow win(sh, w);
  std::vector<float> q(static_cast<size_t>(w) * n_heads * hd);
  for (float& x : q) x = g(rng);
  win.add(0, n - w, w, q.data());
  OnlineCalibrationSpec spec;
  spec.window = w;
  spec.n_compound = 2;
  spec.key_sample = 0;
  const Calibration wide = calibrate_online(ctx, spec, win, cache);  // k = 256
  spec.k = n / 4;
  const Calibration capped = calibrate_online(ctx, spec, win, cache);
  EXPECT_EQ(wide.k, n / 4);
  for (int h = 0; h < n_heads; ++h) {
    const std::vector<float> a(wide.ca(0, h), wide.ca(0, h) + wide.n_fc());
    EXPECT_EQ(a, std::vector<float>(capped.ca(0, h), capped.ca(0, h) + capped.n_fc()));
    // The FCs are told apart: not every one agrees fully.
    EXPECT_LT(*std::min_element(a.begin(), a.end()), 0.99f) << h;
  }
  EXPECT_EQ(std::vector<int32_t>(wide.group_compound_fcs(0, 0), wide.group_compound_fcs(0, 0) + 2),
            std::vector<int32_t>(capped.group_compound_fcs(0, 0),
                                 capped.group_compound_fcs(0, 0) + 2));
}

// Delegates to another policy (full: a dense prefill's) and keeps every query it is shown
// (prefill and decode) in a window of `w` (and `spread`), as the online policy does.
class QueryTap final : public AttentionPolicy,
                       public PrefillObserver,
                       public OnlineCalibrationReport {
 public:
  QueryTap(std::unique_ptr<AttentionPolicy> inner, const AttnShape& sh, int w, int spread = 0)
      : inner_(std::move(inner)),
        inner_prefill_(facet<PrefillObserver>(*inner_)),
        inner_online_(facet<OnlineCalibrationReport>(*inner_)),
        win(sh, w, spread) {}
  std::string_view name() const override { return inner_->name(); }
  bool offers(Facet f) const override { return f != Facet::OnlineCalibration || inner_online_; }
  const OnlineCalibrationInfo& online_calibration() const override {
    return inner_online_->online_calibration();
  }
  bool needs_prefill_queries() const override { return false; }
  void on_prefill_queries(const KvCache& c, int layer, int first, int n, const float* q) override {
    win.add(layer, first, n, q);  // every layer of the tiny llama is global: row = layer
    if (inner_prefill_) inner_prefill_->on_prefill_queries(c, layer, first, n, q);
  }
  void copy_prefill_state_from(const AttentionPolicy&) override {}
  void on_append(const KvCache& c, int layer, int first, int n) override {
    inner_->on_append(c, layer, first, n);
  }
  void select(const AttnQuery& q, Selection& out) override { inner_->select(q, out); }
  void select_layer(const AttnQuery* qs, int n, Selection* outs) override {
    win.add(qs[0].layer, qs[0].n_visible - 1, 1, qs[0].q);
    inner_->select_layer(qs, n, outs);
  }
  std::unique_ptr<AttentionPolicy> inner_;
  PrefillObserver* inner_prefill_;  // inner_'s facets, or null
  const OnlineCalibrationReport* inner_online_;
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
// calibrate_online measures on the same prefill: for fasa's default selector (with and without
// queries spread over the prompt), fasa with the paper's selector and per-query-head sets, and
// double-sparsity.
TEST(OnlineCalibrated, EqualsThePolicyOfTheSameCalibrationSavedToAFile) {
  test::ThreadsGuard one(1);
  auto model = test::tiny_byte_model("online_tiny.gguf", false);
  const PolicyContext ctx = policy_context(model);
  const auto prompt = test::random_prompt(60, model->config().n_vocab, 7);
  const auto next = test::random_prompt(6, model->config().n_vocab, 8);
  SessionOptions so = test::tiny_session("full", 128);
  QueryTap rec(make_policy("full", ctx), ctx.shape, 8);
  QueryTap spread(make_policy("full", ctx), ctx.shape, 8, 6);
  so.external_policy = &rec;
  Session dense(model, so);
  dense.prefill(prompt);
  so.external_policy = &spread;
  Session dense2(model, so);
  dense2.prefill(prompt);
  so.external_policy = nullptr;
  struct Case {
    std::string online, file_spec;
    OnlineCalibrationSpec spec;
    const QueryWindow* win = nullptr;
    int queries = 8;
  };
  OnlineCalibrationSpec group;  // fasa's default: group sets of n_tip = 0.25 of 8 FCs
  group.window = 8;
  group.n_compound = 2;
  group.head_sets = true;  // a file holds them too (the policy reads only the group sets)
  OnlineCalibrationSpec heads = group;
  heads.head_sets = false;
  heads.n_compound = 0;
  OnlineCalibrationSpec spread_spec = group;
  spread_spec.spread = 6;
  OnlineCalibrationSpec ds = group;
  ds.n_compound = 0;
  ds.agreement = false;
  const std::vector<Case> cases = {
      {"fasa:calib=online,calib_window=8,budget=6,dense_layers=none",
       "fasa:budget=6,dense_layers=none", group},
      // prompt slots 0..59: the last 8 (52..59) and stride 16's 0, 16, 32, 48
      {"fasa:calib=online,calib_window=8,calib_spread=6,budget=6,dense_layers=none",
       "fasa:budget=6,dense_layers=none", spread_spec, &spread.win, 12},
      {"fasa:calib=online,calib_window=8,budget=6,method=paper,gqa=per-head,dense_layers=none",
       "fasa:budget=6,method=paper,gqa=per-head,dense_layers=none", heads},
      {"double-sparsity:calib=online,calib_window=8,budget=6,channels=4,dense_layers=none",
       "double-sparsity:budget=6,channels=4,dense_layers=none", ds},
  };
  for (const Case& cs : cases) {
    Calibration c = calibrate_online(ctx, cs.spec, cs.win ? *cs.win : rec.win, dense.cache());
    c.model_sha256 = ctx.model_sha256();
    const std::string path = ::testing::TempDir() + "/online_as_file.json";
    save_calibration(c, path);
    so.policy = cs.file_spec + ",calib=" + path;
    Session from_file(model, so);
    so.policy = cs.online;
    Session online(model, so);
    const auto want = prefill_then_decode(from_file, prompt, next);
    EXPECT_EQ(prefill_then_decode(online, prompt, next), want) << cs.online;
    const OnlineCalibrationInfo* info = online.facets().online_calibration();
    ASSERT_NE(info, nullptr);
    EXPECT_TRUE(info->done);
    EXPECT_FALSE(info->from_decode);
    EXPECT_FALSE(info->reused);
    EXPECT_EQ(info->queries, cs.queries);
    EXPECT_EQ(info->window, 8);
    EXPECT_LT(from_file.attn_stats().slots_read, from_file.attn_stats().slots_visible);
  }
}

// calib_refresh=R: the policy decodes as without refresh until its R-th step after calibrating;
// there it is, bit for bit, the policy of the calibration made from the newest W queries
// (decode steps' ones) on the same cache; and it counts its refreshes.
TEST(OnlineCalibrated, RefreshesFromTheNewestQueriesEveryRSteps) {
  test::ThreadsGuard one(1);
  auto model = test::tiny_byte_model("online_tiny4.gguf", false);
  const PolicyContext ctx = policy_context(model);
  const auto prompt = test::random_prompt(50, model->config().n_vocab, 3);
  const auto next = test::random_prompt(12, model->config().n_vocab, 4);
  const int R = 5, W = 4;
  PolicyOptions opts = {{"calib", "online"},
                        {"calib_window", "4"},
                        {"calib_refresh", "5"},
                        {"budget", "6"},
                        {"dense_layers", "none"}};
  QueryTap tap(make_policy("fasa", ctx, opts), ctx.shape, W);
  SessionOptions so = test::tiny_session("full", 128);
  so.external_policy = &tap;
  Session a(model, so);
  Session plain(model,
                test::tiny_session("fasa:calib=online,calib_window=4,budget=6,dense_layers=none",
                                   128));
  a.prefill(prompt);
  plain.prefill(prompt);
  OnlineCalibrationSpec spec;  // fasa's default selector, as the policy builds it
  spec.window = W;
  spec.n_compound = 2;
  spec.head_sets = true;
  for (size_t i = 0; i < next.size(); ++i) {
    if (i == static_cast<size_t>(R)) {
      // Step R refreshes from the newest W queries it has seen: decode steps 1..4.
      Calibration c = calibrate_online(ctx, spec, tap.win, a.cache());
      c.model_sha256 = ctx.model_sha256();
      const std::string path = ::testing::TempDir() + "/online_refreshed.json";
      save_calibration(c, path);
      Session ref(model, test::tiny_session("fasa:budget=6,dense_layers=none,calib=" + path, 128));
      ref.copy_prefix_from(a);
      const auto want = ref.decode(next[i]);
      EXPECT_EQ(a.decode(next[i]), want);
      plain.decode(next[i]);
      EXPECT_EQ(tap.online_calibration().refreshes, 1);
      continue;
    }
    const auto got = a.decode(next[i]);
    const auto want = plain.decode(next[i]);
    if (i < static_cast<size_t>(R)) {
      EXPECT_EQ(got, want) << i;  // no refresh yet
    }
  }
  const OnlineCalibrationInfo* info = &tap.online_calibration();
  EXPECT_EQ(info->refreshes, 2);  // steps 5 and 10
  EXPECT_GT(info->refresh_seconds, 0.0);
  EXPECT_EQ(plain.facets().online_calibration()->refreshes, 0);
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
    const OnlineCalibrationInfo* info = online.facets().online_calibration();
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
  EXPECT_FALSE(a.facets().online_calibration()->reused);
  EXPECT_GT(a.facets().online_calibration()->seconds, 0.0);
  EXPECT_TRUE(b.facets().online_calibration()->reused);
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
  EXPECT_TRUE(c.facets().online_calibration()->reused);
  Session part(model, so);
  part.copy_prefix_from(src, 30, &src.policy());
  EXPECT_EQ(part.policy().resident_bytes(), 0u);  // an empty window
  part.decode(next[0]);
  EXPECT_FALSE(part.facets().online_calibration()->done);
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
  for (const char* policy : {"fasa", "double-sparsity"}) {
    for (const std::string key : {"calib_spread", "calib_refresh"}) {
      test::expect_error(make(policy,
                              {{"calib", "/nonexistent.json"}, {"budget", "8"}, {key, "16"}}),
                         key + " applies to calib=online only");
      test::expect_error(make(policy, {{"calib", "online"}, {"budget", "8"}, {key, "x"}}),
                         key + " must be a whole number");
      test::expect_error(make(policy, {{"calib", "online"}, {"budget", "8"}, {key, "-1"}}),
                         key + " must be a whole number");
    }
  }
}

}  // namespace
}  // namespace fasa
