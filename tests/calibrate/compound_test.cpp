// Compound Contextual Agreement: the greedy against a brute-force reference, and the version 4
// calibration file that carries the sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/attention/calibration.h"
#include "fasa/attention/compound_greedy.h"
#include "fasa/attention/frequency_chunks.h"
#include "fasa/calibrate/calibrator.h"
#include "fasa/core/error.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "support/cli_runner.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

struct Data {
  std::vector<std::vector<float>> q, keys;  // per query: [head_dim], [n, head_dim]
  std::vector<CaQuery> queries;
};

// integer: small whole numbers, so many slots tie on a score (the top-K's tie rule matters).
Data random_queries(int n_queries, int head_dim, uint32_t seed, bool integer = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  auto normal = [&](std::mt19937& r) { return integer ? std::round(gauss(r) * 1.5f) : gauss(r); };
  Data d;
  for (int j = 0; j < n_queries; ++j) {
    const int n = 20 + 5 * j;
    d.q.emplace_back(head_dim);
    d.keys.emplace_back(static_cast<size_t>(n) * head_dim);
    for (auto& x : d.q.back()) x = normal(rng);
    // FC i's scale grows with i, so the FCs differ in weight and agreement.
    for (int t = 0; t < n; ++t) {
      for (int c = 0; c < head_dim; ++c) {
        d.keys.back()[t * head_dim + c] =
            normal(rng) * (integer ? 1.0f : 1.0f + 0.3f * static_cast<float>(c / 2));
      }
    }
  }
  for (int j = 0; j < n_queries; ++j) {
    d.queries.push_back(
        {d.q[j].data(), d.keys[j].data(), static_cast<int>(d.keys[j].size() / head_dim)});
  }
  return d;
}

// The definition, computed plainly: at each step every unchosen FC's mean over the queries of
// compound_agreement(S then i), the best kept (ties within 1e-9: the lower FC id).
CompoundSet brute_force(const Data& d, int head_dim, const std::vector<FcDims>& fcs, int k,
                        int n_max) {
  CompoundSet out;
  std::vector<int> set;
  for (int step = 0; step < n_max; ++step) {
    int best = -1;
    double best_mean = -1.0;
    for (int i = 0; i < static_cast<int>(fcs.size()); ++i) {
      if (std::find(set.begin(), set.end(), i) != set.end()) continue;
      std::vector<int> with = set;
      with.push_back(i);
      double sum = 0.0;
      for (const CaQuery& cq : d.queries) {
        sum += compound_agreement(cq.q, cq.keys, cq.n, head_dim, fcs, with, k);
      }
      const double mean = sum / static_cast<double>(d.queries.size());
      if (mean > best_mean + 1e-9) {
        best = i;
        best_mean = mean;
      }
    }
    set.push_back(best);
    out.fcs.push_back(best);
    out.ca.push_back(static_cast<float>(best_mean));
  }
  return out;
}

TEST(CompoundGreedy, MatchesBruteForceReference) {
  const int hd = 16;
  const auto fcs = fc_dims(RopeLayout::Norm, FcLayout::Rope, hd, hd);
  int differs_from_individual = 0;
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    const Data d = random_queries(5, hd, seed, /*integer=*/seed > 4);
    for (int k : {4, 9}) {
      const CompoundSet got = greedy_compound_fcs(d.queries, hd, fcs, k, 8);
      const CompoundSet want = brute_force(d, hd, fcs, k, 8);
      EXPECT_EQ(got.fcs, want.fcs) << "seed " << seed << " k " << k;
      ASSERT_EQ(got.ca.size(), want.ca.size());
      for (size_t s = 0; s < got.ca.size(); ++s) EXPECT_NEAR(got.ca[s], want.ca[s], 1e-6);
      // Every FC once: the whole set agrees exactly with the full head.
      EXPECT_FLOAT_EQ(got.ca.back(), 1.0f);
      // The first pick is the best single FC; later ones need not follow the individual order.
      std::vector<float> ca(fcs.size()), sum(fcs.size(), 0.0f);
      for (const CaQuery& cq : d.queries) {
        fc_agreement(cq.q, cq.keys, cq.n, hd, fcs, k, ca.data());
        for (size_t i = 0; i < ca.size(); ++i) sum[i] += ca[i];
      }
      std::vector<int32_t> individual(fcs.size());
      std::iota(individual.begin(), individual.end(), 0);
      std::stable_sort(individual.begin(), individual.end(),
                       [&](int a, int b) { return sum[a] > sum[b]; });
      individual.resize(3);
      differs_from_individual +=
          std::vector<int32_t>(got.fcs.begin(), got.fcs.begin() + 3) != individual;
    }
  }
  EXPECT_GT(differs_from_individual, 0);  // compound is not the individual ranking
  // n_max is clamped; no queries give empty agreement.
  const Data d = random_queries(2, hd, 9);
  EXPECT_EQ(greedy_compound_fcs(d.queries, hd, fcs, 4, 99).fcs.size(), fcs.size());
  EXPECT_TRUE(greedy_compound_fcs(d.queries, hd, fcs, 4, 0).fcs.empty());
}

// Queries of a long context sharing one key array (as online calibration's window does): query
// j sees the first n - j keys, so K is small against n and the sampled threshold is used.
Data shared_keys(int n_queries, int n, int head_dim, uint32_t seed, bool integer) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  auto normal = [&] { return integer ? std::round(gauss(rng) * 1.5f) : gauss(rng); };
  Data d;
  d.keys.emplace_back(static_cast<size_t>(n) * head_dim);
  for (int t = 0; t < n; ++t) {
    for (int c = 0; c < head_dim; ++c) {
      d.keys[0][t * head_dim + c] = normal() * (integer ? 1.0f : 1.0f + 0.3f * (c / 2));
    }
  }
  for (int j = 0; j < n_queries; ++j) {
    d.q.emplace_back(head_dim);
    for (auto& x : d.q.back()) x = normal();
  }
  for (int j = 0; j < n_queries; ++j) d.queries.push_back({d.q[j].data(), d.keys[0].data(), n - j});
  return d;
}

TEST(CompoundGreedy, LongContextsMatchTheReferenceAndGiveEachFcsOwnAgreement) {
  const int hd = 16, n = 3000;
  const auto fcs = fc_dims(RopeLayout::Neox, FcLayout::Rope, hd, hd);
  for (uint32_t seed : {11u, 12u, 13u}) {
    const Data d = shared_keys(4, n, hd, seed, /*integer=*/seed == 13u);
    for (int k : {40, 1000}) {  // 40 <= n / 8: the sampled threshold; 1000: every slot
      std::vector<float> single;
      const CompoundSet got = greedy_compound_fcs(d.queries, hd, fcs, k, 3, &single);
      const CompoundSet want = brute_force(d, hd, fcs, k, 3);
      EXPECT_EQ(got.fcs, want.fcs) << "seed " << seed << " k " << k;
      ASSERT_EQ(got.ca.size(), want.ca.size());
      for (size_t s = 0; s < got.ca.size(); ++s) EXPECT_NEAR(got.ca[s], want.ca[s], 1e-6);
      ASSERT_EQ(single.size(), d.queries.size() * fcs.size());
      std::vector<float> ca(fcs.size());
      for (size_t j = 0; j < d.queries.size(); ++j) {
        const CaQuery& cq = d.queries[j];
        fc_agreement(cq.q, cq.keys, cq.n, hd, fcs, k, ca.data());
        for (size_t i = 0; i < fcs.size(); ++i) {
          EXPECT_FLOAT_EQ(single[j * fcs.size() + i], ca[i]) << "query " << j << " fc " << i;
        }
      }
    }
  }
  // single_ca alone (no set asked for) still measures every FC.
  const Data d = shared_keys(2, 1500, hd, 21, false);
  std::vector<float> single;
  EXPECT_TRUE(greedy_compound_fcs(d.queries, hd, fcs, 32, 0, &single).fcs.empty());
  EXPECT_EQ(single.size(), 2 * fcs.size());
  EXPECT_GT(*std::max_element(single.begin(), single.end()), 0.0f);
}

// Sampled greedy: with the whole key set (keys >= n) it is the exact greedy; with a sample it
// stays close to it on long contexts.
TEST(CompoundGreedySampled, EveryKeyIsTheExactGreedyAndASampleStaysClose) {
  const int hd = 16;
  const auto fcs = fc_dims(RopeLayout::Neox, FcLayout::Rope, hd, hd);
  for (uint32_t seed : {1u, 2u, 3u}) {
    const Data d = random_queries(5, hd, seed, /*integer=*/seed == 3u);
    for (int k : {4, 16}) {
      std::vector<float> single, want_single;
      const CompoundSet got =
          greedy_compound_fcs_sampled(d.queries, hd, fcs, k, 4, GreedySampling{1000}, &single);
      const CompoundSet want = greedy_compound_fcs(d.queries, hd, fcs, k, 4, &want_single);
      EXPECT_EQ(got.fcs, want.fcs) << "seed " << seed << " k " << k;
      EXPECT_EQ(got.ca, want.ca);
      EXPECT_EQ(single, want_single);
      // keys = 0 means exact too.
      EXPECT_EQ(greedy_compound_fcs_sampled(d.queries, hd, fcs, k, 4, GreedySampling{}).fcs,
                want.fcs);
    }
  }
  // Long contexts: 512 sampled keys of 6000.
  const Data d = shared_keys(6, 6000, hd, 31, false);
  std::vector<float> single, exact_single;
  const CompoundSet exact = greedy_compound_fcs(d.queries, hd, fcs, 256, 3, &exact_single);
  const CompoundSet got =
      greedy_compound_fcs_sampled(d.queries, hd, fcs, 256, 3, GreedySampling{512}, &single);
  ASSERT_EQ(got.fcs.size(), 3u);
  EXPECT_EQ(got.fcs[0], exact.fcs[0]);  // the clearly best FC alone
  double err = 0.0;
  for (size_t i = 0; i < single.size(); ++i) err += std::fabs(single[i] - exact_single[i]);
  EXPECT_LT(err / single.size(), 0.05) << "mean |estimated - exact| single-FC CA";
  for (size_t s = 0; s < got.ca.size(); ++s) EXPECT_NEAR(got.ca[s], exact.ca[s], 0.1) << s;
}

std::shared_ptr<const Model> tiny(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  test::TinySpec s;
  s.n_heads = 4;
  s.wtype = DType::Q8_0;
  test::write_tiny_model(path, s);
  return Model::load(path);
}

Calibration calibrate_tiny(std::shared_ptr<const Model> m, double compound) {
  std::mt19937 rng(3);
  std::vector<int32_t> text(200);
  for (auto& t : text) t = static_cast<int32_t>(rng() % 320);
  CalibrateOptions o;
  o.k = 8;
  o.samples = 3;
  o.tokens = 40;
  o.steps = 5;
  o.compound = compound;
  return calibrate(m, text, o, nullptr);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CompoundCalibration, SetsStartWithTheBestFcAndRoundTrip) {
  auto m = tiny("compound_a.gguf");
  const Calibration c = calibrate_tiny(m, 0.5);
  ASSERT_TRUE(c.has_compound());
  EXPECT_EQ(c.n_compound, 4);  // half of head_dim 16's 8 FCs
  EXPECT_EQ(calibrate_tiny(m, CalibrateOptions{}.compound).n_compound, 2);  // the default, 0.25
  const int ng = c.n_heads / c.n_kv_heads;
  for (int l : c.layers) {
    for (int h = 0; h < c.n_heads; ++h) {
      // One FC: compound CA is the individual CA, so the first pick is the top-ranked FC.
      EXPECT_EQ(c.compound_fcs(l, h)[0], c.rank(l, h)[0]) << l << " " << h;
      EXPECT_NEAR(c.compound_cas(l, h)[0], c.ca(l, h)[c.rank(l, h)[0]], 1e-6);
    }
    for (int g = 0; g < c.n_kv_heads; ++g) {  // the group's: the best mean over its heads
      std::vector<double> sum(c.n_fc(), 0.0);
      for (int h = g * ng; h < (g + 1) * ng; ++h) {
        for (int f = 0; f < c.n_fc(); ++f) sum[f] += c.ca(l, h)[f];
      }
      const int best = static_cast<int>(std::max_element(sum.begin(), sum.end()) - sum.begin());
      EXPECT_EQ(c.group_compound_fcs(l, g)[0], best);
      EXPECT_NEAR(c.group_compound_cas(l, g)[0], sum[best] / ng, 1e-5);
    }
  }
  const std::string path = ::testing::TempDir() + "/compound_a.json";
  save_calibration(c, path);
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(path))["version"], 4);
  const Calibration back = load_calibration(path);
  EXPECT_EQ(back.n_compound, c.n_compound);
  EXPECT_EQ(back.compound, c.compound);
  EXPECT_EQ(back.compound_ca, c.compound_ca);
  EXPECT_EQ(back.group_compound, c.group_compound);
  EXPECT_EQ(back.group_compound_ca, c.group_compound_ca);
  // `calib show --json` lists each head's compound set (its first n_tip FCs) and their CA.
  const auto show = test::run_cli({"calib", "show", path, "--n-tip", "3", "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto head = nlohmann::json::parse(show.out)["layers"][1][2];
  EXPECT_EQ(head["compound"], std::vector<int32_t>(c.compound_fcs(1, 2), c.compound_fcs(1, 2) + 3));
  EXPECT_FLOAT_EQ(head["compound_ca"].get<float>(), c.compound_cas(1, 2)[2]);
  // ... and the default selector's sets, one per kv-head group.
  const auto group = nlohmann::json::parse(show.out)["kv_groups"][1][1];
  EXPECT_EQ(group["compound"],
            std::vector<int32_t>(c.group_compound_fcs(1, 1), c.group_compound_fcs(1, 1) + 3));
  EXPECT_FLOAT_EQ(group["compound_ca"].get<float>(), c.group_compound_cas(1, 1)[2]);
  // As text: the sets per group, at most the file's n_compound (4), saying so past it.
  const auto text = test::run_cli({"calib", "show", path, "--n-tip", "3"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("the first 3 of 4 in greedy order, then their compound CA\n"),
            std::string::npos)
      << text.out;
  const int32_t* g11 = c.group_compound_fcs(1, 1);
  EXPECT_NE(text.out.find(fmt::format("layer  1 group  1 {:2} {:2} {:2}  CA {:.2f}\n", g11[0],
                                      g11[1], g11[2], c.group_compound_cas(1, 1)[2])),
            std::string::npos)
      << text.out;
  const auto wide = test::run_cli({"calib", "show", path, "--n-tip", "6"});
  EXPECT_NE(wide.out.find("the first 4 of 4 in greedy order, then their compound CA; the policy "
                          "takes the other FCs by mean CA"),
            std::string::npos)
      << wide.out;
  // --compound 0: no sets, a version 3 file.
  const Calibration none = calibrate_tiny(m, 0.0);
  EXPECT_FALSE(none.has_compound());
  EXPECT_NE(calibration_json(none).find("\"version\": 3"), std::string::npos);
  EXPECT_EQ(calibrate_tiny(m, 2.0).n_compound, 2);  // a count
  EXPECT_NE(error_of([&] { calibrate_tiny(m, 2.5); }).find("--compound must be"),
            std::string::npos);
}

TEST(CompoundCalibration, BadOrOldFilesAreClearErrors) {
  auto m = tiny("compound_b.gguf");
  const std::string path = ::testing::TempDir() + "/compound_b.json";
  save_calibration(calibrate_tiny(m, 0.5), path);
  const nlohmann::json good = nlohmann::json::parse(std::ifstream(path));
  auto load = [&](const nlohmann::json& j) {
    const std::string p = ::testing::TempDir() + "/compound_bad.json";
    std::ofstream(p) << j.dump();
    return error_of([&] { load_calibration(p); });
  };
  nlohmann::json j = good;
  j["heads"][1]["compound_fcs"][1] = j["heads"][1]["compound_fcs"][0];
  EXPECT_NE(load(j).find("\"heads[1].compound_fcs\" must list distinct FCs"), std::string::npos)
      << load(j);
  j = good;
  j["groups"][0]["compound_ca"][0] = 1.5;
  EXPECT_NE(load(j).find("groups[0].compound_ca[0]"), std::string::npos) << load(j);
  j = good;
  j["groups"].erase(0);
  EXPECT_NE(load(j).find("\"groups\" has"), std::string::npos) << load(j);
  j = good;
  j["n_compound"] = 9;  // more than the 8 FCs
  EXPECT_NE(load(j).find("n_compound"), std::string::npos) << load(j);
  // A version 3 file (no sets) still loads and serves the paper's selector; the default
  // (fcs=compound), fcs=compound and layer_budget=calibrated ask for a new calibration.
  j = good;
  j["version"] = 3;
  j.erase("n_compound");
  j.erase("groups");
  for (auto& e : j["heads"]) {
    e.erase("compound_fcs");
    e.erase("compound_ca");
  }
  EXPECT_EQ(load(j), "(no error)");
  const std::string v3 = ::testing::TempDir() + "/compound_v3.json";
  std::ofstream(v3) << j.dump();
  const PolicyContext ctx = policy_context(m);
  EXPECT_NO_THROW(make_policy("fasa", ctx, {{"calib", v3}, {"budget", "8"}, {"method", "paper"}}));
  const std::string dflt = error_of([&] {
    make_policy("fasa", ctx, {{"calib", v3}, {"budget", "8"}});
  });
  EXPECT_NE(dflt.find(
                "fcs=compound (the default selector) needs a calibration with compound CA sets"),
            std::string::npos)
      << dflt;
  EXPECT_NE(dflt.find("re-run `fasa calibrate`, or add fcs=calibrated"), std::string::npos) << dflt;
  for (const char* opt : {"fcs=compound", "layer_budget=calibrated"}) {
    const std::string key = std::string(opt).substr(0, std::string(opt).find('='));
    const std::string val = std::string(opt).substr(key.size() + 1);
    const std::string err = error_of([&] {
      PolicyOptions o{{"calib", v3}, {"budget", "8"}, {"fcs", "calibrated"}};
      o[key] = val;
      make_policy("fasa", ctx, o);
    });
    EXPECT_NE(err.find(std::string(opt) + " needs a calibration with compound CA sets"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("re-run `fasa calibrate`"), std::string::npos) << err;
  }
  // More FCs than the sets hold: fcs=compound takes the other FCs by CA (fasa_selector_test);
  // layer_budget=calibrated needs the compound CA at n_tip.
  EXPECT_NO_THROW(
      make_policy("fasa", ctx,
                  {{"calib", path}, {"budget", "8"}, {"fcs", "compound"}, {"n_tip", "5"}}));
  const std::string err = error_of([&] {
    make_policy("fasa", ctx,
                {{"calib", path}, {"budget", "8"}, {"layer_budget", "calibrated"}, {"n_tip", "5"}});
  });
  EXPECT_NE(err.find("re-run `fasa calibrate --compound 5`"), std::string::npos) << err;
  EXPECT_NO_THROW(
      make_policy("fasa", ctx,
                  {{"calib", path}, {"budget", "8"}, {"fcs", "compound"}, {"n_tip", "4"}}));
}

}  // namespace
}  // namespace fasa
