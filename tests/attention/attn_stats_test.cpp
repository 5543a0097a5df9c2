// AttnStats: one field list (FASA_ATTN_STATS) gives the fields, += and -; these check that every
// counter is in the list and that the operators cover each one.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fasa/attention/attention.h"

namespace fasa {
namespace {

// Field i set to (i + 1) * scale.
AttnStats distinct(uint64_t scale) {
  AttnStats s;
  const auto& f = AttnStats::fields();
  for (size_t i = 0; i < f.size(); ++i) s.*f[i].member = (i + 1) * scale;
  return s;
}

TEST(AttnStats, TheListIsEveryField) {
  // A counter declared outside FASA_ATTN_STATS would make the struct larger than the list.
  EXPECT_EQ(sizeof(AttnStats), AttnStats::fields().size() * sizeof(uint64_t));
  std::set<std::string> names;
  for (const auto& f : AttnStats::fields()) {
    names.insert(f.name);
    EXPECT_NE(std::string(f.what), "") << f.name;
  }
  EXPECT_EQ(names.size(), AttnStats::fields().size());
  // Each entry is its own member: values written through the list read back unchanged.
  const AttnStats s = distinct(1);
  const auto& f = AttnStats::fields();
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(s.*f[i].member, i + 1) << f[i].name;
  EXPECT_EQ(s.decode_tokens, 1u);
  EXPECT_EQ(s.tier_cache_hits, f.size());  // the list's last entry
  EXPECT_TRUE(names.count("tier_prefetch_hits"));
  EXPECT_TRUE(names.count("tier_cache_hits"));
  EXPECT_TRUE(names.count("dense_fallbacks"));
}

TEST(AttnStats, SumAndDifferenceCoverEveryField) {
  AttnStats sum = distinct(1);
  sum += distinct(100);
  const AttnStats diff = distinct(100) - distinct(1);
  const auto& f = AttnStats::fields();
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_EQ(sum.*f[i].member, (i + 1) * 101) << f[i].name;
    EXPECT_EQ(diff.*f[i].member, (i + 1) * 99) << f[i].name;
  }
}

}  // namespace
}  // namespace fasa
