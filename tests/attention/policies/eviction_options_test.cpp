// the eviction policies' bad options: against brute-force references (tests/attention/policies/eviction_fixture.h).
#include "attention/policies/eviction_fixture.h"

namespace fasa {
namespace {

TEST(EvictionPolicyOptions, BadOptionsAreErrors) {
  auto message = [](const std::string& spec) -> std::string {
    try {
      policy_from(spec);
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(message("snapkv").find("needs a budget"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=0").find("budget"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,window=0").find("window must be"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,kernel=4").find("kernel must be odd"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,kernel=x").find("kernel must be"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,gqa=some").find("gqa must be"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,recompress=-1").find("recompress must be"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=8,beta=20").find("no option 'beta'"), std::string::npos);
  EXPECT_NE(message("pyramidkv:beta=4").find("needs a budget"), std::string::npos);
  EXPECT_NE(message("pyramidkv:budget=8,beta=0").find("beta must be"), std::string::npos);
  EXPECT_NE(message("pyramidkv:budget=8,beta=x").find("beta must be"), std::string::npos);
  EXPECT_NE(message("pyramidkv:budget=8,kernel=2").find("kernel must be odd"), std::string::npos);
  EXPECT_NE(message("pyramidkv:budget=8,sinks=2").find("no option 'sinks'"), std::string::npos);
  EXPECT_NE(message("h2o").find("needs a budget"), std::string::npos);
  EXPECT_NE(message("h2o:budget=8,recent=1.5").find("recent must be"), std::string::npos);
  EXPECT_NE(message("h2o:budget=8,recent=x").find("recent must be"), std::string::npos);
  EXPECT_NE(message("h2o:budget=8,gqa=x").find("gqa must be"), std::string::npos);
  EXPECT_NE(message("h2o:budget=8,window=3").find("no option 'window'"), std::string::npos);
  const std::string pf =
      "pyramidkv+fasa:fcs=calibrated,fc_sets=head,calib=" + shape_calib() + ",budget=4";
  EXPECT_NE(message(pf).find("needs keep=K"), std::string::npos);
  EXPECT_NE(message(pf + ",keep=abc").find("'pyramidkv': budget"), std::string::npos);
  EXPECT_NE(message(pf + ",keep=16,variant=m").find("FASA-C only"), std::string::npos);
  EXPECT_NE(message(pf + ",keep=16,beta=0").find("beta must be"), std::string::npos);
  EXPECT_NE(message(pf + ",keep=16,speed=2").find("policy 'fasa' has no option 'speed'"),
            std::string::npos);
  EXPECT_NE(message("pyramidkv+fasa:budget=4,keep=16,calib=/nonexistent.json").find("nonexistent"),
            std::string::npos);
  EXPECT_NE(message("pyramidkv+fasa:budget=4,keep=16,calib=online,variant=m").find("FASA-C only"),
            std::string::npos);
  EXPECT_NE(message("snapkv+fasa:budget=4")
                .find("combination 'snapkv+fasa' is not supported "
                      "(supported: pyramidkv+fasa)"),
            std::string::npos);
}

}  // namespace
}  // namespace fasa
