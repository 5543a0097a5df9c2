// pyramidkv+fasa: against brute-force references (tests/attention/policies/eviction_fixture.h).
#include "attention/policies/eviction_fixture.h"

namespace fasa {
namespace {

// pyramidkv+fasa: FASA chooses among PyramidKV's kept slots only; TIP over a candidate list
// scores each slot as plain FASA does (every slot as candidates = plain FASA's selection).
TEST(PyramidKvFasaPolicy, ChoosesAmongTheKeptSlots) {
  const int P = 40;
  Data d(P + 2, 13);
  const std::string c = "calib=" + shape_calib() + ",dense_layers=none,fcs=calibrated,fc_sets=head";
  for (const char* gqa : {"shared", "per-head"}) {
    auto both = policy_from("pyramidkv+fasa:" + c + ",budget=6,keep=14,window=3,beta=4,gqa=" + gqa);
    auto pyramid = policy_from("pyramidkv:budget=14,window=3,beta=4");
    auto fasa = policy_from("fasa:" + c + ",mean_value=off,budget=6,gqa=" + gqa);
    d.prefill(*both, P, 16);
    d.prefill(*pyramid, P, 16);
    d.prefill(*fasa, P, 16);
    int narrowed = 0;
    for (int n = P + 1; n <= P + 2; ++n) {
      for (int l = 0; l < kShape.n_layers; ++l) {
        for (int g = 0; g < kShape.n_kv_heads; ++g) {
          Selection s, kept, plain, all_cand;
          const AttnQuery q = d.step(l, g, n);
          both->select(q, s);
          pyramid->select(q, kept);
          ASSERT_FALSE(s.all);
          ASSERT_FALSE(kept.all);
          for (int j = 0; j < kGroup; ++j) {
            const auto& chosen = s.slots_for(j);
            EXPECT_EQ(chosen.size(), 6u);
            EXPECT_TRUE(
                std::includes(kept.slots.begin(), kept.slots.end(), chosen.begin(), chosen.end()))
                << gqa << " layer " << l;
          }
          // Plain FASA would pick evicted slots somewhere.
          fasa->select(q, plain);
          for (int j = 0; j < kGroup; ++j) {
            const auto& p = plain.slots_for(j);
            narrowed += !std::includes(kept.slots.begin(), kept.slots.end(), p.begin(), p.end());
          }
          // Every visible slot as candidates: exactly plain FASA.
          std::vector<int32_t> every(n);
          std::iota(every.begin(), every.end(), 0);
          AttnQuery qa = q;
          qa.candidates = every.data();
          qa.n_candidates = n;
          fasa->select(qa, all_cand);
          EXPECT_EQ(all_cand.slots, plain.slots);
          EXPECT_EQ(all_cand.head_slots, plain.head_slots);
        }
      }
    }
    EXPECT_GT(narrowed, 0) << gqa;
  }
}

// keep covering the context: PyramidKV keeps everything and the pair is plain FASA, bit for bit.
TEST(PyramidKvFasaPolicy, KeepCoveringTheContextIsPlainFasa) {
  const std::string path = ::testing::TempDir() + "/eviction_pf_tiny.gguf";
  test::TinySpec spec;
  spec.wtype = DType::Q8_0;
  test::write_tiny_model(path, spec);
  auto model = Model::load(path);
  std::mt19937 rng(14);
  std::vector<int32_t> text(80), tokens(48);
  for (auto& t : text) t = static_cast<int32_t>(rng() % spec.n_vocab);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % spec.n_vocab);
  CalibrateOptions co;
  co.k = 8;
  co.samples = 2;
  co.tokens = 30;
  co.steps = 3;
  const std::string calib = ::testing::TempDir() + "/eviction_pf_calib.json";
  save_calibration(calibrate(model, text, co, nullptr), calib);
  SessionOptions so;
  so.n_ctx = 64;
  so.prefill_chunk = 16;
  auto run = [&](const std::string& policy) {
    so.policy = policy;
    Session s(model, so);
    std::vector<float> out = s.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + 30));
    for (size_t i = 30; i < tokens.size(); ++i) {
      const auto& l = s.decode(tokens[i]);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  };
  for (const std::string opts : {",budget=5", ",budget=0.2,gqa=per-head,sink=2,recent=2"}) {
    const auto plain = run("fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib + opts);
    EXPECT_EQ(run("pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + calib + opts + ",keep=64"),
              plain)
        << opts;
    EXPECT_NE(run("pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + calib + opts +
                  ",keep=12,window=4"),
              plain)
        << opts;
  }
}

}  // namespace
}  // namespace fasa
