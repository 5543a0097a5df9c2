// eval/bench.h from the library (what `fasa bench` and Python's fasa.bench call): the rows in
// depth, test, policy order, the events in order, the byte counts, the settings refused before
// any model work, and the report's JSON row with the caller's provenance.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fasa/eval/bench.h"
#include "fasa/eval/bench_report.h"
#include "support/expect_error.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

std::shared_ptr<const Model> tiny() {
  const std::string path = ::testing::TempDir() + "/eval_bench.gguf";
  test::write_tiny_model(path, {});
  return Model::load(path);
}

TEST(BenchLibrary, RowsComeInDepthTestPolicyOrderWithEvents) {
  auto model = tiny();
  BenchSettings s;
  s.tests = bench_tests({8}, {2}, {1, 2});
  s.depths = {0, 16};
  s.reps = 2;
  s.policies = {"full", "oracle:budget=8"};
  std::vector<std::string> events;
  BenchEvents ev;
  ev.probing = [&] { events.push_back("probing"); };
  ev.ready = [&](const BandwidthResult&) { events.push_back("ready"); };
  ev.rows = [&](const std::vector<BenchMeasure>& g) {
    events.push_back(std::to_string(g.size()) + " rows");
  };
  const BenchResult r = run_bench(model, s, ev);
  // No probe; ready once; one group per (depth, test).
  EXPECT_EQ(events, (std::vector<std::string>{"ready", "2 rows", "2 rows", "2 rows", "2 rows",
                                              "2 rows", "2 rows"}));
  ASSERT_EQ(r.rows.size(), 12u);  // 2 depths x (pp8, tg2, tg2x2) x 2 policies
  size_t i = 0;
  for (int d : {0, 16}) {
    for (const char* name : {"pp8", "tg2", "tg2x2"}) {
      for (const char* policy : {"full", "oracle:budget=8"}) {
        const BenchMeasure& m = r.rows[i++];
        EXPECT_EQ(m.depth, d);
        EXPECT_EQ(m.test.name(), name);
        EXPECT_EQ(m.policy, policy);
        EXPECT_EQ(m.tps.size(), 2u);
        EXPECT_GT(m.mean(), 0.0);
      }
    }
  }
  // tg2 at depth 16: full reads every row of the 16 + 1, 16 + 2 token cache (2 layers, 2 kv
  // heads, K and V, 16 dims of 2 bytes); the oracle at most its budget and selection.
  const BenchMeasure& full = r.rows[8];
  ASSERT_EQ(full.test.name(), "tg2");
  EXPECT_DOUBLE_EQ(full.dense_read_per_token, 17.5 * 256);
  EXPECT_DOUBLE_EQ(full.kv_read_per_token, full.dense_read_per_token);
  EXPECT_LT(r.rows[9].kv_read_per_token, full.kv_read_per_token);
}

TEST(BenchLibrary, SettingsAreCheckedBeforeAnyModelWork) {
  BenchSettings s;
  test::expect_error([&] { check_bench_settings(s); }, "nothing to measure");
  s.tests = bench_tests({8}, {}, {1});
  s.reps = 0;
  test::expect_error([&] { check_bench_settings(s); }, "-r must be >= 1 (got 0)");
  s.reps = 1;
  s.depth_fill = "random";
  test::expect_error([&] { check_bench_settings(s); }, "--depth-fill 'random'");
  s.depth_fill = "prefill";
  s.tests = bench_tests({}, {4}, {0});
  test::expect_error([&] { check_bench_settings(s); }, "--batch values must be >= 1 (got 0)");
  s.tests = bench_tests({}, {4}, {2});
  s.lossless = "2";
  s.depths = {4};
  test::expect_error([&] { check_bench_settings(s); }, "--lossless measures one sequence");
  s.tests = bench_tests({}, {4}, {1});
  s.depths = {0};
  test::expect_error([&] { check_bench_settings(s); },
                     "--lossless generates from a prefilled context");
  s.depths = {4};
  check_bench_settings(s);
}

TEST(BenchLibrary, JsonRowCarriesTheCallersProvenance) {
  auto model = tiny();
  BenchSettings s;
  s.tests = bench_tests({}, {2}, {1});
  s.depths = {8};
  s.reps = 1;
  s.warmup = false;
  const BenchResult r = run_bench(model, s);
  ASSERT_EQ(r.rows.size(), 1u);
  std::vector<std::string> asked;
  const BenchReport report(RowFormat::JsonLines, *model, s, r.bandwidth,
                           [&](nlohmann::ordered_json& j, const std::string& policy) {
                             asked.push_back(policy);
                             j["origin"] = "test";
                           });
  const nlohmann::ordered_json j = report.json_row(r.rows[0]);
  EXPECT_EQ(asked, std::vector<std::string>{"full"});
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  // The provenance right after the policy, then the test.
  const auto at = std::find(keys.begin(), keys.end(), "policy");
  ASSERT_NE(at, keys.end());
  EXPECT_EQ(*(at + 1), "origin");
  EXPECT_EQ(*(at + 2), "test");
  EXPECT_EQ(j["test"], "tg2");
  EXPECT_EQ(j["depth"], 8);
  EXPECT_EQ(j["warmup"], false);
  EXPECT_EQ(j["lossless"], "off");
  EXPECT_FALSE(j.contains("read_bandwidth_gb_s"));
}

}  // namespace
}  // namespace fasa
