// Which facets (policy_facets.h) each policy has: the table of what every registered policy does
// beyond the core, with the options that decide a facet (fasa's variant m asks for a tiered cache,
// calib=online learns from the prefill and reports its calibration), and the wrappers that pass
// on the facets of what they wrap.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "attention/policies/policy_fixture.h"
#include "fasa/attention/policy_facets.h"
#include "fasa/attention/prefill_observers.h"

namespace fasa {
namespace {

using test::calib_path;
using test::ds_calib_path;
using test::policy_from;

// "probs prefill eviction tiering rewind online": the facets f holds, in Facet order ("" none).
std::string facet_list(const PolicyFacets& f) {
  std::string s;
  auto add = [&](bool has, const char* name) {
    if (!has) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.probs, "probs");
  add(f.prefill, "prefill");
  add(f.eviction, "eviction");
  add(f.tiered, "tiering");
  add(f.rewind, "rewind");
  add(f.online, "online");
  return s;
}

struct FacetRow {
  std::string spec;
  std::string facets;  // facet_list's answer
  bool needs_prefill;  // PrefillObserver::needs_prefill_queries (false without the facet)
};

// Every registered policy at least once (a new policy adds its rows here).
std::vector<FacetRow> facet_table() {
  const std::string c = "fasa:fcs=calibrated,fc_sets=head,mean_value=off,calib=" + calib_path();
  const std::string m = ",variant=m,offload_dir=" + ::testing::TempDir();
  return {
      {"full", "", false},
      {"oracle:budget=8", "", false},
      {c + ",budget=8", "rewind", false},
      {"fasa:calib=" + calib_path() + ",budget=8,fcs=calibrated,fc_sets=head", "rewind", false},
      {c + ",budget=8" + m, "tiering rewind", false},
      {"fasa:calib=online,budget=8", "prefill rewind online", false},
      {"streaming:budget=8", "eviction", false},
      {"quest:budget=8", "rewind", false},
      {"sparq:budget=8", "rewind", false},
      {"double-sparsity:calib=" + ds_calib_path() + ",budget=8", "rewind", false},
      {"double-sparsity:calib=online,budget=8", "prefill rewind online", false},
      {"snapkv:budget=8", "prefill eviction rewind", true},
      {"pyramidkv:budget=8", "prefill eviction rewind", true},
      {"h2o:budget=8", "probs prefill eviction rewind", true},
      {"pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + calib_path() + ",budget=5,keep=12",
       "prefill eviction rewind", true},
      {"pyramidkv+fasa:calib=online,budget=5,keep=12", "prefill eviction rewind online", true},
  };
}

TEST(PolicyFacets, EveryRegisteredPolicyIsInTheTable) {
  std::set<std::string> covered;
  for (const FacetRow& r : facet_table()) covered.insert(r.spec.substr(0, r.spec.find(':')));
  for (const std::string& name : policy_names()) EXPECT_TRUE(covered.count(name)) << name;
}

TEST(PolicyFacets, EachPolicyHasItsFacetsAndNoOther) {
  for (const FacetRow& r : facet_table()) {
    auto p = policy_from(r.spec);
    const PolicyFacets f(*p);
    EXPECT_EQ(f.core, p.get());
    EXPECT_EQ(facet_list(f), r.facets) << r.spec;
    EXPECT_EQ(f.needs_prefill_queries(), r.needs_prefill) << r.spec;
    // The accessors answer for a missing facet as policy.h's Facet says.
    EXPECT_EQ(f.tiering() != nullptr, f.tiered != nullptr) << r.spec;
    EXPECT_EQ(f.online_calibration() != nullptr, f.online != nullptr) << r.spec;
    EXPECT_EQ(f.evicted_rows(), 0u) << r.spec;  // nothing decoded yet
    // A const policy has the same facets.
    const AttentionPolicy& cp = *p;
    EXPECT_EQ(facet<ProbabilityObserver>(cp) != nullptr, f.probs != nullptr) << r.spec;
    EXPECT_EQ(facet<TieredPolicy>(cp), f.tiered) << r.spec;
  }
}

// A member of prefill observers must learn from the prefill and keep the plain cache; the
// observers take its prefill queries and rewind, and are the source of its statistics.
TEST(PolicyFacets, PrefillObserversLearnFromThePrefillAndRewind) {
  std::vector<std::unique_ptr<AttentionPolicy>> members;
  members.push_back(policy_from("h2o:budget=8"));
  members.push_back(policy_from("snapkv:budget=8"));
  const AttentionPolicy* h2o = members[0].get();
  PrefillObservers observers(std::move(members));
  const PolicyFacets f(observers);
  EXPECT_EQ(facet_list(f), "prefill rewind");
  EXPECT_TRUE(f.needs_prefill_queries());
  EXPECT_EQ(prefill_state_source(observers, "h2o"), h2o);
  EXPECT_EQ(prefill_state_source(observers, "quest"), nullptr);
  EXPECT_EQ(prefill_state_source(observers, "prefill-observers"), nullptr);
  // Any other policy is the source of its own name only.
  auto quest = policy_from("quest:budget=8");
  EXPECT_EQ(prefill_state_source(*quest, "quest"), quest.get());
  EXPECT_EQ(prefill_state_source(*quest, "h2o"), nullptr);
}

}  // namespace
}  // namespace fasa
