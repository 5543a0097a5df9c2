// RoPE as the files define it (model/rope.h): each scaling against its formula, the LongRoPE
// switch, and the forward pass really using a file's rope_freqs.weight.
#include <cmath>

#include <gtest/gtest.h>

#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "fasa/model/rope.h"
#include "support/temp_files.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

float plain(double base, int i, int d) { return static_cast<float>(std::pow(base, -2.0 * i / d)); }

TEST(Rope, NoScalingIsTheBasePowers) {
  const RopeTable t = make_rope_table(10000.0f, 64, RopeScaling{}, {}, false);
  ASSERT_EQ(t.freqs.size(), 32u);
  for (int i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(t.freqs[i], plain(10000.0, i, 64));
  EXPECT_EQ(t.mscale, 1.0f);
  EXPECT_EQ(t.factors, "");
}

TEST(Rope, FrequencyFactorsDivide) {
  std::vector<float> ff(32);
  for (int i = 0; i < 32; ++i) ff[i] = 1.0f + i;
  RopeFactorTables tables;
  tables.freq_factors = ff.data();
  const RopeTable t = make_rope_table(500000.0f, 64, RopeScaling{}, tables, false);
  for (int i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(t.freqs[i], plain(500000.0, i, 64) / (1.0f + i));
  EXPECT_EQ(t.factors, "rope_freqs");
}

TEST(Rope, LinearScalesEveryPair) {
  RopeScaling s;
  s.type = RopeScalingType::Linear;
  s.freq_scale = 0.25f;
  const RopeTable t = make_rope_table(10000.0f, 64, s, {}, false);
  for (int i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(t.freqs[i], plain(10000.0, i, 64) * 0.25f);
  EXPECT_EQ(t.mscale, 1.0f);
}

// Qwen2.5-7B's YaRN block: factor 4, original 32768, base 1e6, 128 rotated dims. The ramp ends
// are floor(128 ln(32768 / (2 pi 32)) / (2 ln 1e6)) = 23 and ceil(128 ln(32768 / (2 pi)) /
// (2 ln 1e6)) = 40: pairs up to 23 keep their frequency, pairs from 40 are interpolated by 1/4.
TEST(Rope, YarnKeepsFastPairsInterpolatesSlowOnesAndScalesMagnitude) {
  RopeScaling s;
  s.type = RopeScalingType::Yarn;
  s.freq_scale = 0.25f;
  s.n_ctx_orig = 32768;
  const RopeTable t = make_rope_table(1e6f, 128, s, {}, false);
  for (int i = 0; i <= 23; ++i) EXPECT_FLOAT_EQ(t.freqs[i], plain(1e6, i, 128)) << i;
  for (int i = 40; i < 64; ++i) EXPECT_FLOAT_EQ(t.freqs[i], plain(1e6, i, 128) * 0.25f) << i;
  for (int i = 24; i < 40; ++i) {  // the ramp: strictly between the two
    const double r = 1.0 - (i - 23) / 17.0;
    EXPECT_NEAR(t.freqs[i], plain(1e6, i, 128) * (0.25 * (1 - r) + r), 1e-6 * plain(1e6, i, 128));
    EXPECT_LT(t.freqs[i], plain(1e6, i, 128));
    EXPECT_GT(t.freqs[i], plain(1e6, i, 128) * 0.25f);
  }
  EXPECT_NEAR(t.mscale, 1.0 + 0.1 * std::log(4.0), 1e-6);
}

TEST(Rope, LongRopeSwitchesTablesOnTheRunsContext) {
  std::vector<float> long_f(48, 4.0f), short_f(48, 1.5f);
  RopeFactorTables tables;
  tables.long_factors = long_f.data();
  tables.short_factors = short_f.data();
  RopeScaling s;
  s.type = RopeScalingType::LongRope;
  s.n_ctx_orig = 4096;
  s.attn_factor = 1.19f;
  const RopeTable at_orig = make_rope_table(10000.0f, 96, s, tables, long_rope_factors(s, 4096));
  const RopeTable beyond = make_rope_table(10000.0f, 96, s, tables, long_rope_factors(s, 4097));
  EXPECT_EQ(at_orig.factors, "short");
  EXPECT_EQ(beyond.factors, "long");
  for (int i = 0; i < 48; ++i) {
    EXPECT_FLOAT_EQ(at_orig.freqs[i], plain(10000.0, i, 96) / 1.5f);
    EXPECT_FLOAT_EQ(beyond.freqs[i], plain(10000.0, i, 96) / 4.0f);
  }
  EXPECT_FLOAT_EQ(at_orig.mscale, 1.19f);  // attn_factor applies to both tables
  EXPECT_FLOAT_EQ(beyond.mscale, 1.19f);
}

// The bug issue 20 opened with: a rope_freqs.weight tensor that changed nothing. A file whose
// factors are all 2 must run exactly like the same weights with linear scaling by 2 (every
// frequency halved either way), and differently from the same weights with neither.
TEST(Rope, ForwardUsesTheFilesFrequencyFactors) {
  const std::string dir = test::fresh_dir("rope_forward").string();
  test::TinySpec with_factors;
  with_factors.extra_tensor = "rope_freqs.weight";
  with_factors.extra_value = 2.0f;
  test::TinySpec linear;
  linear.rope_scaling = "linear";
  linear.rope_factor = 2.0f;
  test::TinySpec neither;
  test::write_tiny_model(dir + "/factors.gguf", with_factors);
  test::write_tiny_model(dir + "/linear.gguf", linear);
  test::write_tiny_model(dir + "/neither.gguf", neither);
  const std::vector<int32_t> tokens = test::random_tokens(96, with_factors.n_vocab, 7);
  auto logits = [&](const std::string& file) {
    SessionOptions so;
    so.n_ctx = 128;
    so.kv_type = KvType::F32;
    Session session(Model::load(dir + "/" + file), so);
    return session.prefill(tokens);  // logits of the last token
  };
  const std::vector<float> a = logits("factors.gguf");
  const std::vector<float> b = logits("linear.gguf");
  const std::vector<float> c = logits("neither.gguf");
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a, b);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(double(a[i]) - c[i]));
  EXPECT_GT(diff, 1e-3);
}

}  // namespace
}  // namespace fasa
