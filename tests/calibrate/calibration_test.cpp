// Calibration on tiny models: the statistic's invariants, the file format and its bindings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "fasa/calibrate/calibrator.h"
#include "fasa/calibrate/heatmap.h"
#include "fasa/core/error.h"
#include "fasa/core/sha256.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/cli_runner.h"
#include "support/expect_error.h"
#include "support/model_path.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"
#include "support/xml_check.h"

namespace fasa {
namespace {

std::shared_ptr<const Model> tiny(const std::string& name, uint32_t seed = 1, int n_heads = 4) {
  const std::string path = ::testing::TempDir() + "/" + name;
  test::TinySpec s;
  s.seed = seed;
  s.n_heads = n_heads;
  s.wtype = DType::Q8_0;
  test::write_tiny_model(path, s);
  return Model::load(path);
}

std::vector<int32_t> text_tokens(int n) {
  std::mt19937 rng(3);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % 320);
  return t;
}

CalibrateOptions small_opts() {
  CalibrateOptions o;
  o.k = 8;
  o.samples = 3;
  o.tokens = 40;
  o.steps = 5;
  return o;
}

TEST(Calibration, MeansAreAgreementsAndRanked) {
  auto m = tiny("calib_a.gguf");
  const Calibration c = calibrate(m, text_tokens(200), small_opts(), nullptr);
  EXPECT_EQ(c.n_fc(), 8);  // head_dim 16
  ASSERT_EQ(c.mean_ca.size(), 2u * 4 * 8);
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 4; ++h) {
      for (int i = 0; i < c.n_fc(); ++i) {
        EXPECT_GE(c.ca(l, h)[i], 0.0f);
        EXPECT_LE(c.ca(l, h)[i], 1.0f);
      }
      for (int i = 1; i < c.n_fc(); ++i) {
        EXPECT_GE(c.ca(l, h)[c.rank(l, h)[i - 1]], c.ca(l, h)[c.rank(l, h)[i]]);
      }
    }
  }
  // Not degenerate: some FC disagrees with the head somewhere.
  EXPECT_LT(*std::min_element(c.mean_ca.begin(), c.mean_ca.end()), 1.0f);
}

TEST(Calibration, FileRoundTripAndBindings) {
  auto m = tiny("calib_c.gguf");
  const Calibration c = calibrate(m, text_tokens(200), small_opts(), nullptr);
  const std::string path = ::testing::TempDir() + "/calib_c.json";
  save_calibration(c, path);
  const Calibration back = load_calibration(path);
  EXPECT_EQ(back.mean_ca, c.mean_ca);
  EXPECT_EQ(back.ranked, c.ranked);
  EXPECT_EQ(back.model_sha256, c.model_sha256);
  EXPECT_NO_THROW(check_calibration(back, policy_context(m), path));
  // Same shape, other weights: refused by identity.
  auto other = tiny("calib_d.gguf", 2);
  EXPECT_THROW(check_calibration(back, policy_context(other), path), Error);
  // Other shape: refused by shape.
  auto wide = tiny("calib_e.gguf", 1, 2);
  EXPECT_THROW(check_calibration(back, policy_context(wide), path), Error);
}

TEST(Calibration, AdjacentLayoutIsRecordedAndChecked) {
  auto m = tiny("calib_f.gguf");
  CalibrateOptions o = small_opts();
  o.fc_layout = FcLayout::Adjacent;
  const Calibration c = calibrate(m, text_tokens(200), o, nullptr);
  EXPECT_EQ(c.fcs[1].a, 4);  // NORM model: authors' chunk 1 = GGUF dims (4, 6)
  const std::string path = ::testing::TempDir() + "/calib_f.json";
  save_calibration(c, path);
  EXPECT_EQ(load_calibration(path).fc_layout, FcLayout::Adjacent);
  // A file whose dims disagree with its declared layout is refused.
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  j["fc_layout"] = "rope";
  std::ofstream(path) << j.dump();
  EXPECT_THROW(load_calibration(path), Error);
}

TEST(Calibration, BadFilesAndOptions) {
  const std::string dir = ::testing::TempDir();
  EXPECT_THROW(load_calibration(dir + "/does_not_exist.json"), Error);
  std::ofstream(dir + "/junk.json") << "{not json";
  EXPECT_THROW(load_calibration(dir + "/junk.json"), Error);
  std::ofstream(dir + "/other.json") << R"({"format": "something-else"})";
  EXPECT_THROW(load_calibration(dir + "/other.json"), Error);
  std::ofstream(dir + "/v9.json") << R"({"format": "fasa-calibration", "version": 9})";
  EXPECT_THROW(load_calibration(dir + "/v9.json"), Error);
  std::ofstream(dir + "/partial.json") << R"({"format": "fasa-calibration", "version": 1})";
  EXPECT_THROW(load_calibration(dir + "/partial.json"), Error);

  auto m = tiny("calib_g.gguf");
  CalibrateOptions o = small_opts();
  EXPECT_THROW(calibrate(m, text_tokens(30), o, nullptr), Error);  // text too short
  o.k = 40;
  EXPECT_THROW(calibrate(m, text_tokens(200), o, nullptr), Error);  // tokens <= k
  o = small_opts();
  o.tokens = 1000;
  EXPECT_THROW(calibrate(m, text_tokens(2000), o, nullptr), Error);  // beyond context 256
  o = small_opts();
  o.samples = 0;
  EXPECT_THROW(calibrate(m, text_tokens(200), o, nullptr), Error);
}

// Four layers, gemma3-style: sliding (window 5), global, sliding, global.
std::shared_ptr<const Model> tiny_gemma3(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  test::TinySpec s;
  s.arch = "gemma3";
  s.n_layers = 4;
  s.sliding_window = 5;
  s.window_pattern = 2;
  s.rope_base_local = 100.0f;
  s.wtype = DType::Q8_0;
  test::write_tiny_model(path, s);
  return Model::load(path);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Calibration, HybridModelCalibratesItsGlobalLayersOnly) {
  auto m = tiny_gemma3("calib_gemma3_a.gguf");
  const Calibration c = calibrate(m, text_tokens(200), small_opts(), nullptr);
  EXPECT_EQ(c.n_layers, 4);
  EXPECT_EQ(c.layers, (std::vector<int>{1, 3}));
  EXPECT_FALSE(c.covers(0));
  EXPECT_TRUE(c.covers(1));
  EXPECT_FALSE(c.covers(2));
  ASSERT_EQ(c.mean_ca.size(), 2u * 4 * 8);  // 2 global layers x 4 heads x 8 FCs
  for (int l : c.layers) {
    for (int h = 0; h < 4; ++h) {
      float sum = 0.0f;
      for (int i = 0; i < c.n_fc(); ++i) sum += c.ca(l, h)[i];
      EXPECT_GT(sum, 0.0f) << "layer " << l << " head " << h;  // measured, not left empty
    }
  }
  const std::string path = ::testing::TempDir() + "/calib_gemma3_a.json";
  save_calibration(c, path);
  const nlohmann::json j = read_json(path);
  EXPECT_EQ(j["version"], kCalibrationVersion);
  EXPECT_EQ(j["layers"], nlohmann::json({1, 3}));
  ASSERT_EQ(j["heads"].size(), 8u);
  for (const auto& e : j["heads"]) EXPECT_TRUE(e["layer"] == 1 || e["layer"] == 3);
  const Calibration back = load_calibration(path);
  EXPECT_EQ(back.layers, c.layers);
  EXPECT_EQ(back.mean_ca, c.mean_ca);
  EXPECT_EQ(back.ranked, c.ranked);
  EXPECT_NO_THROW(check_calibration(back, policy_context(m), path));

  // `calib show`: only the covered layers, said so; JSON null for the others.
  const auto show = test::run_cli({"calib", "show", path, "--n-tip", "2"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("1, 3 of 4 (the global layers"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("layer  3 head  0"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("layer  0 head"), std::string::npos) << show.out;
  const auto js = test::run_cli({"calib", "show", path, "--n-tip", "2", "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto sj = nlohmann::json::parse(js.out);
  EXPECT_EQ(sj["covered_layers"], nlohmann::json({1, 3}));
  ASSERT_EQ(sj["layers"].size(), 4u);
  EXPECT_TRUE(sj["layers"][0].is_null());
  EXPECT_TRUE(sj["layers"][2].is_null());
  EXPECT_EQ(sj["layers"][3].size(), 4u);
}

TEST(Calibration, CoveredLayersMustBeTheModelsGlobalLayers) {
  auto m = tiny_gemma3("calib_gemma3_b.gguf");
  const std::string path = ::testing::TempDir() + "/calib_gemma3_b.json";
  save_calibration(calibrate(m, text_tokens(200), small_opts(), nullptr), path);
  const nlohmann::json good = read_json(path);

  // The file claims layers 1 and 2: it loads, but this model refuses it, naming both sets.
  nlohmann::json moved = good;
  moved["layers"] = {1, 2};
  for (const char* entries : {"heads", "groups"}) {
    for (auto& e : moved[entries]) {
      if (e["layer"] == 3) e["layer"] = 2;
    }
  }
  const std::string moved_path = ::testing::TempDir() + "/calib_gemma3_moved.json";
  std::ofstream(moved_path) << moved.dump();
  const Calibration mc = load_calibration(moved_path);
  EXPECT_EQ(mc.layers, (std::vector<int>{1, 2}));
  const std::string err = error_of([&] { check_calibration(mc, policy_context(m), moved_path); });
  EXPECT_NE(err.find("covers layers 1, 2"), std::string::npos) << err;
  EXPECT_NE(err.find("global-attention layers are 1, 3"), std::string::npos) << err;

  // A version-1 file (from before hybrid models: every layer calibrated) loads as covering every
  // layer; a hybrid model refuses it.
  nlohmann::json v1 = good;
  v1["version"] = 1;
  v1.erase("layers");
  for (int l : {0, 2}) {
    for (int h = 0; h < 4; ++h) {
      nlohmann::json e = good["heads"][h];
      e["layer"] = l;
      v1["heads"].push_back(e);
    }
  }
  const std::string v1_path = ::testing::TempDir() + "/calib_gemma3_v1.json";
  std::ofstream(v1_path) << v1.dump();
  const Calibration old = load_calibration(v1_path);
  EXPECT_EQ(old.layers, (std::vector<int>{0, 1, 2, 3}));
  const std::string err1 = error_of([&] { check_calibration(old, policy_context(m), v1_path); });
  EXPECT_NE(err1.find("covers layers 0-3"), std::string::npos) << err1;
  EXPECT_NE(err1.find("sliding-window"), std::string::npos) << err1;

  // Malformed layer lists are refused when loading.
  for (const nlohmann::json& bad : {nlohmann::json({3, 1}), nlohmann::json({1, 7}),
                                    nlohmann::json::array(), nlohmann::json({1, 1})}) {
    nlohmann::json b = good;
    b["layers"] = bad;
    const std::string bad_path = ::testing::TempDir() + "/calib_gemma3_bad.json";
    std::ofstream(bad_path) << b.dump();
    EXPECT_THROW(load_calibration(bad_path), Error) << bad.dump();
  }
  // Heads of a layer the file does not list are refused too.
  nlohmann::json stray = good;
  stray["heads"][0]["layer"] = 0;
  std::ofstream(path) << stray.dump();
  EXPECT_THROW(load_calibration(path), Error);
}

// Files of version 1 (no "layers": every layer) still work for models without sliding windows.
TEST(Calibration, VersionOneFilesStillLoad) {
  auto m = tiny("calib_v1.gguf");
  const Calibration c = calibrate(m, text_tokens(200), small_opts(), nullptr);
  EXPECT_EQ(c.layers, (std::vector<int>{0, 1}));
  const std::string path = ::testing::TempDir() + "/calib_v1.json";
  save_calibration(c, path);
  nlohmann::json j = read_json(path);
  j["version"] = 1;
  j.erase("layers");
  std::ofstream(path) << j.dump();
  const Calibration back = load_calibration(path);
  EXPECT_EQ(back.layers, c.layers);
  EXPECT_EQ(back.mean_ca, c.mean_ca);
  EXPECT_NO_THROW(check_calibration(back, policy_context(m), path));
  // A calibration of some layers only does not fit a model whose every layer is global.
  Calibration relabelled = c;
  relabelled.layers = {1};
  relabelled.mean_ca.resize(4 * 8);
  relabelled.rank_all();
  const std::string err = error_of([&] { check_calibration(relabelled, policy_context(m), path); });
  EXPECT_NE(err.find("covers layers 1, but this model's layers are 0, 1"), std::string::npos)
      << err;
}

// Records, at every decode step, |q_c * k_c| per (layer, head, key dim) with k the query's own key
// (the newest slot), attending densely: Double Sparsity's statistic, computed apart.
class OwnKeyRecorder final : public AttentionPolicy {
 public:
  explicit OwnKeyRecorder(const AttnShape& s)
      : shape_(s),
        sums_(size_t(s.n_layers) * s.n_heads * s.head_dim, 0.0),
        counts_(size_t(s.n_layers) * s.n_heads, 0) {}
  std::string_view name() const override { return "own-key-recorder"; }
  void select(const AttnQuery& q, Selection& out) override {  // rows of q's heads only
    out.set_all();
    const int hd = shape_.head_dim;
    const auto* own = static_cast<const float*>(q.cache->k_rows(q.layer, q.kv_head)) +
                      size_t(q.n_visible - 1) * hd;
    for (int g = 0; g < q.n_group; ++g) {
      const size_t row = size_t(q.layer) * shape_.n_heads + q.kv_head * q.n_group + g;
      for (int c = 0; c < hd; ++c)
        sums_[row * hd + c] += std::fabs(double(q.q[g * hd + c]) * own[c]);
      counts_[row] += 1;
    }
  }
  double mean(int layer, int head, int c) const {
    const size_t row = size_t(layer) * shape_.n_heads + head;
    return sums_[row * shape_.head_dim + c] / counts_[row];
  }

 private:
  AttnShape shape_;
  std::vector<double> sums_;
  std::vector<int64_t> counts_;
};

TEST(Calibration, ChannelImportanceIsMeanAbsQTimesOwnKey) {
  auto m = tiny("calib_ds.gguf");
  CalibrateOptions o = small_opts();
  o.samples = 1;  // one window, from the text's start
  const std::vector<int32_t> text = text_tokens(200);
  const Calibration c = calibrate(m, text, o, nullptr);
  ASSERT_TRUE(c.has_channel_importance());
  ASSERT_EQ(c.channel_importance.size(), 2u * 4 * 16);
  const ModelConfig& mc = m->config();
  OwnKeyRecorder rec(AttnShape{mc.n_layers, mc.n_heads, mc.n_kv_heads, mc.head_dim, {}});
  SessionOptions so;
  so.n_ctx = o.tokens + o.steps;
  so.kv_type = KvType::F32;
  so.external_policy = &rec;
  Session s(m, so);
  s.prefill(std::vector<int32_t>(text.begin(), text.begin() + o.tokens));
  for (int i = 0; i < o.steps; ++i) s.decode(text[o.tokens + i]);
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 4; ++h) {
      for (int d = 0; d < 16; ++d) {
        const double want = rec.mean(l, h, d);
        EXPECT_NEAR(c.channels(l, h)[d], want, 1e-5 * std::max(1.0, want)) << l << " " << h;
      }
      // heavy_channels: by importance, heaviest first.
      const std::vector<int> heavy = c.heavy_channels(l, h, 16);
      for (int i = 1; i < 16; ++i) {
        EXPECT_GE(c.channels(l, h)[heavy[i - 1]], c.channels(l, h)[heavy[i]]);
      }
    }
  }
  EXPECT_NE(*std::min_element(c.channel_importance.begin(), c.channel_importance.end()),
            *std::max_element(c.channel_importance.begin(), c.channel_importance.end()));
}

// Records every decode-step query of every (global layer, query head) with the keys it sees
// (attends densely).
class QueryRecorder final : public AttentionPolicy {
 public:
  struct Query {
    int layer, head;
    std::vector<float> q;     // [head_dim]
    std::vector<float> keys;  // [n, head_dim]
  };
  std::string_view name() const override { return "query-recorder"; }
  void select_layer(const AttnQuery* qs, int n, Selection* outs) override {  // in order
    for (int g = 0; g < n; ++g) select(qs[g], outs[g]);
  }
  void select(const AttnQuery& q, Selection& out) override {
    out.set_all();
    const int hd = q.cache->shape().head_dim;
    const auto* k = static_cast<const float*>(q.cache->k_rows(q.layer, q.kv_head));
    for (int g = 0; g < q.n_group; ++g) {
      queries.push_back(Query{q.layer, q.kv_head * q.n_group + g,
                              std::vector<float>(q.q + g * hd, q.q + (g + 1) * hd),
                              std::vector<float>(k, k + size_t(q.n_visible) * hd)});
    }
  }
  std::vector<Query> queries;
};

// Contextual Agreement (the paper, arXiv 2602.03152, §3; docs/CALIBRATION.md) recomputed here in double
// from the queries and keys a recording policy sees on the calibrator's windows: for FC i =
// RoPE plane (2i, 2i+1) of a NORM model, CA_i = |TopK(q·k_t) ∩ TopK(q_2i k_t,2i + q_2i+1 k_t,2i+1)|
// / K (ties: the lower slot), averaged over every decode-step query of the head. Two windows,
// evenly spaced: the text's start and its end.
TEST(Calibration, ContextualAgreementMatchesBruteForce) {
  auto m = tiny("calib_ca_brute.gguf");
  const ModelConfig& mc = m->config();
  ASSERT_EQ(mc.rope_layout, RopeLayout::Norm);
  CalibrateOptions o = small_opts();
  o.samples = 2;
  const std::vector<int32_t> text = text_tokens(200);
  const Calibration c = calibrate(m, text, o, nullptr);
  const int hd = mc.head_dim, n_fc = hd / 2;
  ASSERT_EQ(c.n_fc(), n_fc);
  QueryRecorder rec;
  SessionOptions so;
  so.n_ctx = o.tokens + o.steps;
  so.kv_type = KvType::F32;
  so.external_policy = &rec;
  Session s(m, so);
  for (const int begin : {0, static_cast<int>(text.size()) - o.tokens - o.steps}) {
    s.reset();
    s.prefill(std::vector<int32_t>(text.begin() + begin, text.begin() + begin + o.tokens));
    for (int i = 0; i < o.steps; ++i) s.decode(text[begin + o.tokens + i]);
  }
  ASSERT_EQ(rec.queries.size(), size_t(2) * o.steps * mc.n_layers * mc.n_heads);
  auto top = [&](const std::vector<double>& score) {
    std::vector<int32_t> idx(score.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return score[a] > score[b]; });
    idx.resize(o.k);
    std::sort(idx.begin(), idx.end());
    return idx;
  };
  std::vector<double> sum(size_t(mc.n_layers) * mc.n_heads * n_fc, 0.0);
  std::vector<int> count(size_t(mc.n_layers) * mc.n_heads, 0);
  for (const QueryRecorder::Query& q : rec.queries) {
    const int n = static_cast<int>(q.keys.size()) / hd;
    ASSERT_GT(n, o.k);
    std::vector<double> full(n, 0.0);
    for (int t = 0; t < n; ++t) {
      for (int d = 0; d < hd; ++d) full[t] += double(q.q[d]) * q.keys[t * hd + d];
    }
    const std::vector<int32_t> want = top(full);
    const size_t row = size_t(q.layer) * mc.n_heads + q.head;
    for (int i = 0; i < n_fc; ++i) {
      std::vector<double> alpha(n);
      for (int t = 0; t < n; ++t) {
        alpha[t] = double(q.q[2 * i]) * q.keys[t * hd + 2 * i] +
                   double(q.q[2 * i + 1]) * q.keys[t * hd + 2 * i + 1];
      }
      const std::vector<int32_t> got = top(alpha);
      int hit = 0;
      for (int32_t t : got) hit += std::binary_search(want.begin(), want.end(), t);
      sum[row * n_fc + i] += double(hit) / o.k;
    }
    count[row] += 1;
  }
  int inside = 0;
  for (int l = 0; l < mc.n_layers; ++l) {
    for (int h = 0; h < mc.n_heads; ++h) {
      const size_t row = size_t(l) * mc.n_heads + h;
      EXPECT_EQ(count[row], 2 * o.steps);
      for (int i = 0; i < n_fc; ++i) {
        const double want = sum[row * n_fc + i] / count[row];
        EXPECT_NEAR(c.ca(l, h)[i], want, 1e-6) << "layer " << l << " head " << h << " fc " << i;
        inside += want > 0.0 && want < 1.0;
      }
    }
  }
  EXPECT_GT(inside, mc.n_layers * mc.n_heads * n_fc / 2);  // not 0/1 cases
}

// Version 3 files carry the channel importance; version 2 files (without it) still load and
// serve fasa, and double-sparsity asks for a new calibration.
TEST(Calibration, VersionTwoFilesServeFasaButNotDoubleSparsity) {
  auto m = tiny("calib_v2.gguf");
  CalibrateOptions o = small_opts();
  o.compound = 0;  // no compound sets: a version 3 file
  const Calibration c = calibrate(m, text_tokens(200), o, nullptr);
  const std::string path = ::testing::TempDir() + "/calib_v3.json";
  save_calibration(c, path);
  nlohmann::json j = read_json(path);
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(load_calibration(path).channel_importance, c.channel_importance);
  const PolicyContext ctx = policy_context(m);
  EXPECT_NO_THROW(make_policy("double-sparsity", ctx, {{"calib", path}, {"budget", "8"}}));
  j["version"] = 2;
  for (auto& e : j["heads"]) e.erase("channel_importance");
  const std::string v2 = ::testing::TempDir() + "/calib_v2.json";
  std::ofstream(v2) << j.dump();
  const Calibration back = load_calibration(v2);
  EXPECT_FALSE(back.has_channel_importance());
  EXPECT_EQ(back.mean_ca, c.mean_ca);
  EXPECT_NO_THROW(make_policy("fasa", ctx, {{"calib", v2}, {"budget", "8"}, {"method", "paper"}}));
  const std::string err = error_of([&] {
    make_policy("double-sparsity", ctx, {{"calib", v2}, {"budget", "8"}});
  });
  EXPECT_NE(err.find("re-calibrate with `fasa calibrate`"), std::string::npos) << err;
  // A version 3 file must have them.
  j["version"] = 3;
  std::ofstream(v2) << j.dump();
  EXPECT_THROW(load_calibration(v2), Error);
  // `calib show` lists the heavy channels of a version 3 file.
  const auto show = test::run_cli({"calib", "show", path, "--n-tip", "2"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Double Sparsity's 4 heavy channels"), std::string::npos) << show.out;
  const auto js = test::run_cli({"calib", "show", path, "--n-tip", "2", "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  EXPECT_EQ(nlohmann::json::parse(js.out)["layers"][1][0]["heavy_channels"].size(), 4u);
}

// A hand-made calibration of the given shape, CA rising with the FC id.
Calibration synthetic_calibration(int n_layers, int n_fc) {
  Calibration c;
  c.model_name = "synthetic";
  c.n_layers = n_layers;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 2 * n_fc;
  c.fcs.resize(n_fc);
  for (int f = 0; f < n_fc; ++f) c.fcs[f] = {2 * f, 2 * f + 1};
  c.layers.resize(n_layers);
  std::iota(c.layers.begin(), c.layers.end(), 0);
  c.mean_ca.resize(size_t(n_layers) * c.n_heads * n_fc);
  for (size_t i = 0; i < c.mean_ca.size(); ++i) {
    c.mean_ca[i] = float(i % n_fc) / float(std::max(n_fc - 1, 1));
  }
  c.rank_all();
  return c;
}

// Well-formed XML: one cell per (layer, FC), the title, both axis labels, tick labels and the
// colour bar's labels as text; the picture grows by one cell per layer.
TEST(CalibrationHeatmap, SvgIsWellFormedWithOneCellPerLayerAndFc) {
  Calibration c = synthetic_calibration(12, 8);
  c.model_name = "tiny <model> & co";
  const auto root = test::parse_xml(calibration_heatmap_svg(c));
  EXPECT_EQ(root.name, "svg");
  const auto cells = root.find_all("rect", "cell");
  ASSERT_EQ(cells.size(), 12u * 8u);
  EXPECT_EQ(cells.back()->children.at(0).text, "layer 11 FC 7: 1.000");
  const auto title = root.texts("title");
  ASSERT_EQ(title.size(), 1u);
  EXPECT_EQ(title[0].rfind("tiny <model> & co — mean contextual agreement per FC", 0), 0u);
  EXPECT_EQ(root.texts("x-label"),
            std::vector<std::string>{"frequency chunk (FC; 0 = highest frequency)"});
  EXPECT_EQ(root.texts("y-label"), std::vector<std::string>{"calibrated layer"});
  EXPECT_EQ(root.texts("legend"), std::vector<std::string>{"mean CA"});
  const auto ticks = root.texts("tick");
  for (const char* t :
       {"layer 0", "layer 5", "layer 10", "layer 11", "0", "7", "0.0", "0.5", "1.0"}) {
    EXPECT_NE(std::find(ticks.begin(), ticks.end(), t), ticks.end()) << t;
  }
  EXPECT_EQ(std::find(ticks.begin(), ticks.end(), "layer 3"), ticks.end());  // every 5 layers
  EXPECT_EQ(root.find_all("g", "colour-bar")[0]->find_all("rect").size(), 100u);
  const auto height = [](int n_layers, int n_fc) {
    return std::stoi(test::parse_xml(calibration_heatmap_svg(synthetic_calibration(n_layers, n_fc)))
                         .attr("height"));
  };
  EXPECT_EQ(height(31, 8), height(30, 8) + 14);  // cells are 14 px high
  // Tiny shapes still draw a readable colour bar inside the picture.
  const auto tiny = test::parse_xml(calibration_heatmap_svg(synthetic_calibration(1, 1)));
  EXPECT_EQ(tiny.find_all("rect", "cell").size(), 1u);
  EXPECT_GE(std::stoi(tiny.attr("height")), 50 + 120);
}

// Bad input: one clear error each.
TEST(CalibrationHeatmap, RefusesWhatCannotBeDrawn) {
  Calibration none = synthetic_calibration(2, 4);
  none.layers.clear();
  test::expect_error([&] { calibration_heatmap_svg(none); },
                     "calibration heatmap: nothing to draw (0 calibrated layers, 4 FCs)");
  Calibration nan = synthetic_calibration(2, 4);
  nan.mean_ca[size_t(1) * nan.n_heads * 4 + 2] = NAN;  // layer 1, head 0, FC 2
  test::expect_error([&] { calibration_heatmap_svg(nan); }, "mean CA of layer 1 FC 2 is nan");
}

// A hybrid model's calibration draws its global layers only, each labelled, and says so.
TEST(CalibrationHeatmap, HybridShowsOnlyItsGlobalLayers) {
  Calibration c = synthetic_calibration(3, 4);
  const Calibration all = c;
  c.n_layers = 18;
  c.layers = {5, 11, 17};
  const std::string svg = calibration_heatmap_svg(c);
  EXPECT_EQ(test::parse_xml(svg).find_all("rect", "cell").size(), 3u * 4u);  // not eighteen rows
  EXPECT_NE(svg.find("layer 5 FC 0:"), std::string::npos);
  EXPECT_NE(svg.find("layer 17 FC 3:"), std::string::npos);
  EXPECT_EQ(svg.find("layer 0 FC"), std::string::npos);
  EXPECT_EQ(svg.find("layer 6 FC"), std::string::npos);
  EXPECT_NE(svg.find(">layer 11</text>"), std::string::npos);  // every row labelled
  EXPECT_NE(svg.find("global layers 5, 11, 17 of 18"), std::string::npos);
  EXPECT_EQ(calibration_heatmap_svg(all).find("global layers"), std::string::npos);
}

TEST(CalibrationCli, CalibrateAndShowOnRealModel) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const std::string out = ::testing::TempDir() + "/smollm2_calib.json";
  FASA_TEXT_OR_SKIP(text, "austen_emma.txt");
  const auto r = test::run_cli({"calibrate", "-m", path, "--text", text, "-o", out, "--tokens",
                                "80", "--steps", "3", "--samples", "2", "--k", "16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("fasa: 2/2 samples, "), std::string::npos) << r.err;
  const auto show = test::run_cli({"calib", "show", out, "--n-tip", "4", "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto j = nlohmann::json::parse(show.out);
  EXPECT_EQ(j["layers"].size(), 30u);
  EXPECT_EQ(j["layers"][0].size(), 9u);
  EXPECT_EQ(j["layers"][0][0]["dominant"].size(), 4u);
  // The policy flags, on the real model.
  const auto run = test::run_cli({"run", "-m", path, "-p", "It is a truth universally", "-n", "6",
                                  "--temp", "0", "--policy", "fasa", "--calib", out, "--budget",
                                  "4", "--dense-layers", "0,1", "--sink", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("policy fasa:calib="), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("dense_layers=0+1"), std::string::npos) << run.err;
  // Nothing stored (an empty FASA_HOME): FASA calibrates online on the prompt.
  const auto no_calib =
      test::run_cli({"run", "-m", path, "-p", "x", "--policy", "fasa", "--budget", "4"},
                    {{"FASA_HOME", test::fresh_dir("calib_cli_empty_home").string()}});
  EXPECT_EQ(no_calib.exit_code, 0) << no_calib.err;
  EXPECT_NE(no_calib.err.find("fasa: calibration: online"), std::string::npos) << no_calib.err;
  // A calibration made for SmolLM2 is refused for another model.
  const std::string tiny_path = ::testing::TempDir() + "/calib_cli_tiny.gguf";
  test::write_tiny_model(tiny_path, {});
  const auto other = test::run_cli({"bench", "-m", tiny_path, "-p", "8", "-n", "2", "--policy",
                                    "fasa", "--calib", out, "--budget", "4"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("different model shape"), std::string::npos) << other.err;

  const auto bad = test::run_cli(
      {"calibrate", "-m", path, "--text", text, "-o", out, "--fc-layout", "diagonal"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown FC layout"), std::string::npos);
  const std::string svg = ::testing::TempDir() + "/smollm2_calib.svg";
  const auto img = test::run_cli({"calib", "show", out, "--image", svg});
  ASSERT_EQ(img.exit_code, 0) << img.err;
  std::ifstream in(svg);
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(doc.rfind("<svg", 0), 0u);
  EXPECT_NE(doc.find("layer 29 FC 31:"), std::string::npos);  // every cell is drawn
  const auto root = test::parse_xml(doc);                     // well-formed, 30 layers x 32 FCs
  EXPECT_EQ(root.find_all("rect", "cell").size(), 30u * 32u);
  EXPECT_EQ(root.texts("y-label"), std::vector<std::string>{"calibrated layer"});
  // Any other extension (a PNG too) is refused, saying what to give, and nothing is written.
  for (const char* ext : {".png", ".jpg"}) {
    const std::string img_path = ::testing::TempDir() + "/smollm2_calib_heatmap_cli" + ext;
    std::remove(img_path.c_str());
    const auto refused = test::run_cli({"calib", "show", out, "--image", img_path});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("ending in .svg"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("rsvg-convert"), std::string::npos) << refused.err;
    EXPECT_FALSE(std::ifstream(img_path).good()) << ext;
  }
  const auto missing = test::run_cli({"calib", "show", "/nonexistent.json"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("cannot read calibration file"), std::string::npos);
}

// Gemma 3 (15 sliding-window layers, global layers 5, 11, 17): calibrate, recall and run
// report the global layers only, and say so.
TEST(CalibrationCli, HybridGemma3CoversItsGlobalLayers) {
  FASA_MODEL_OR_SKIP(path, test::gemma3_path);
  const std::string out = ::testing::TempDir() + "/gemma3_calib.json";
  FASA_TEXT_OR_SKIP(emma, "austen_emma.txt");
  FASA_TEXT_OR_SKIP(persuasion, "austen_persuasion.txt");
  const auto r = test::run_cli({"calibrate", "-m", path, "--text", emma, "-o", out, "--tokens",
                                "64", "--steps", "2", "--samples", "1", "--k", "16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("fasa: 1/1 samples, "), std::string::npos) << r.err;
  const nlohmann::json j = read_json(out);
  EXPECT_EQ(j["layers"], nlohmann::json({5, 11, 17}));
  EXPECT_EQ(j["heads"].size(), 3u * 4);
  const std::string spec = "fasa:calib=" + out + ",budget=16";
  const auto rj = test::run_cli({"eval", "recall", "-m", path, "--text", persuasion, "--ctx", "100",
                                 "--steps", "2", "--policy", spec, "--json"});
  ASSERT_EQ(rj.exit_code, 0) << rj.err;
  const auto rec = nlohmann::json::parse(rj.out);
  EXPECT_EQ(rec["layers"], nlohmann::json({5, 11, 17}));
  EXPECT_EQ(rec["sliding_window_layers"], 15);
  EXPECT_EQ(rec["layer_recall"].size(), 3u);
  EXPECT_EQ(rec["head_recall"].size(), 3u * 4);
  EXPECT_EQ(rec["dense_fraction"], 0.0);
  // Provenance: the build, and the hashes of the model, the text and the spec's calibration.
  EXPECT_EQ(rec["model_sha256"], sha256_file_hex(path));
  EXPECT_EQ(rec["text_sha256"], sha256_file_hex(persuasion));
  EXPECT_EQ(rec["calib"], out);
  EXPECT_EQ(rec["calib_sha256"], sha256_file_hex(out));
  EXPECT_EQ(rec["fasa_version"].get<std::string>().rfind("0.", 0), 0u) << rec["fasa_version"];
  const auto rt = test::run_cli({"eval", "recall", "-m", path, "--text", persuasion, "--ctx", "100",
                                 "--steps", "1", "--policy", spec});
  ASSERT_EQ(rt.exit_code, 0) << rt.err;
  EXPECT_NE(rt.out.find("evaluated: the 3 global layers 5, 11, 17 of 18"), std::string::npos)
      << rt.out;
  EXPECT_NE(rt.out.find("| 17 |"), std::string::npos) << rt.out;
  EXPECT_EQ(rt.out.find("| 4 |"), std::string::npos) << rt.out;
  const auto run = test::run_cli({"run", "-m", path, "-p", "It is a truth universally", "-n", "4",
                                  "--temp", "0", "--policy", spec});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("cached K/V rows of the 3 global layers"), std::string::npos) << run.err;
  // A calibration of another layer set is refused, naming both.
  nlohmann::json moved = j;
  moved["layers"] = {5, 11, 16};
  for (const char* entries : {"heads", "groups"}) {
    for (auto& e : moved[entries]) {
      if (e["layer"] == 17) e["layer"] = 16;
    }
  }
  const std::string moved_path = ::testing::TempDir() + "/gemma3_calib_moved.json";
  std::ofstream(moved_path) << moved.dump();
  const auto bad = test::run_cli({"run", "-m", path, "-p", "x", "-n", "1", "--policy",
                                  "fasa:calib=" + moved_path + ",budget=16"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("covers layers 5, 11, 16, but this model's global-attention layers are "
                         "5, 11, 17"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace fasa

namespace fasa {
namespace {

// A calibration records the frequency each FC really rotates at: with linear RoPE scaling by 4,
// every FC's frequency is the base power divided by 4, the file keeps them, `calib show` prints
// them, and the adjacent FC layout (chunks that mix two rotation pairs) records none.
TEST(Calibration, RecordsEachFcsEffectiveFrequency) {
  const std::string path = ::testing::TempDir() + "/calib_freq.gguf";
  test::TinySpec s;
  s.rope_scaling = "linear";
  s.rope_factor = 4.0f;
  test::write_tiny_model(path, s);
  const auto m = Model::load(path);
  const Calibration c = calibrate(m, text_tokens(200), small_opts(), nullptr);
  const int hd = m->config().head_dim;
  ASSERT_EQ(c.fc_freq.size(), static_cast<size_t>(hd / 2));
  for (int i = 0; i < hd / 2; ++i) {
    EXPECT_FLOAT_EQ(c.fc_freq[i], static_cast<float>(std::pow(10000.0, -2.0 * i / hd) / 4.0));
  }
  EXPECT_EQ(c.rope_n_ctx, small_opts().tokens + small_opts().steps);
  const std::string file = ::testing::TempDir() + "/calib_freq.json";
  save_calibration(c, file);
  EXPECT_EQ(load_calibration(file).fc_freq, c.fc_freq);
  const test::CliRun shown = test::run_cli({"calib", "show", file});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("FC freqs     rad/token at context 45: 0:0.25 1:"), std::string::npos)
      << shown.out;
  CalibrateOptions adjacent = small_opts();
  adjacent.fc_layout = FcLayout::Adjacent;
  EXPECT_TRUE(calibrate(m, text_tokens(200), adjacent, nullptr).fc_freq.empty());
}

}  // namespace
}  // namespace fasa
