// Sampler filters and determinism; stop-string scanning.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "fasa/core/error.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/sampler.h"

namespace fasa {
namespace {

TEST(SamplerTest, GreedyPicksArgmaxLowestIdOnTies) {
  SamplerParams p;
  p.temp = 0.0f;
  Sampler s(p);
  const std::vector<float> logits = {0.1f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(s.sample(logits.data(), 4), 1);
}

TEST(SamplerTest, TopKOneIsGreedy) {
  SamplerParams p;
  p.temp = 1.5f;
  p.top_k = 1;
  p.seed = 42;
  Sampler s(p);
  const std::vector<float> logits = {0.1f, 0.2f, 0.9f, 0.3f};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(logits.data(), 4), 2);
}

TEST(SamplerTest, SeedReproducibleAndFiltersRespected) {
  SamplerParams p;
  p.temp = 1.0f;
  p.top_k = 3;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 5;
  const std::vector<float> logits = {5.0f, 4.9f, 4.8f, 4.7f, -10.0f};
  Sampler a(p), b(p);
  std::map<int, int> counts;
  for (int i = 0; i < 300; ++i) {
    const int x = a.sample(logits.data(), 5);
    EXPECT_EQ(x, b.sample(logits.data(), 5));
    counts[x]++;
  }
  EXPECT_EQ(counts.count(3), 0u);  // outside top-3
  EXPECT_EQ(counts.count(4), 0u);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[2], 0);
}

TEST(SamplerTest, MinPDropsUnlikelyTokens) {
  SamplerParams p;
  p.temp = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.5f;
  p.seed = 1;
  Sampler s(p);
  const std::vector<float> logits = {2.0f, 1.9f, 0.0f};  // p(2)/p(0) = e^-2 < 0.5
  for (int i = 0; i < 200; ++i) EXPECT_NE(s.sample(logits.data(), 3), 2);
}

TEST(SamplerTest, TopPKeepsSmallestNucleus) {
  SamplerParams p;
  p.temp = 1.0f;
  p.top_k = 0;
  p.top_p = 0.5f;
  p.min_p = 0.0f;
  Sampler s(p);
  const std::vector<float> logits = {3.0f, 0.0f, 0.0f};  // p0 ~ 0.91 >= 0.5
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.sample(logits.data(), 3), 0);
}

TEST(SamplerTest, BadParamsAreErrors) {
  SamplerParams p;
  p.temp = -1.0f;
  EXPECT_THROW(p.validate(), Error);
  p = SamplerParams{};
  p.top_p = 0.0f;
  EXPECT_THROW(p.validate(), Error);
  p = SamplerParams{};
  p.min_p = 1.0f;
  EXPECT_THROW(p.validate(), Error);
  p = SamplerParams{};
  p.top_k = -2;
  EXPECT_THROW(p.validate(), Error);
}

TEST(StopStringTest, HoldsBackPrefixAndCutsAtMatch) {
  const std::vector<std::string> stop = {"\nUser:"};
  std::string pending = "Hello\nUs", ready;
  EXPECT_FALSE(scan_stop_strings(pending, stop, &ready));
  EXPECT_EQ(ready, "Hello");
  EXPECT_EQ(pending, "\nUs");
  pending += "er: more";
  EXPECT_TRUE(scan_stop_strings(pending, stop, &ready));
  EXPECT_EQ(ready, "");
  pending = "abc";
  EXPECT_FALSE(scan_stop_strings(pending, stop, &ready));
  EXPECT_EQ(ready, "abc");
  EXPECT_EQ(pending, "");
}

}  // namespace
}  // namespace fasa
