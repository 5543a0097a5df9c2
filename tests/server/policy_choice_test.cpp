// Which policy a request runs (server/policy_choice), the registry's calibration flag, the
// constant-time key comparison and the Prometheus rendering.
#include <gtest/gtest.h>

#include <string>

#include "fasa/core/error.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "fasa/server/metrics.h"
#include "fasa/server/policy_choice.h"
#include "fasa/server/server.h"
#include "support/tiny_model.h"

namespace fasa::server {
namespace {

PolicyContext tiny_context() {
  const std::string path = ::testing::TempDir() + "/tiny_policy_choice.gguf";
  test::write_tiny_model(path, test::TinySpec{});
  return fasa::policy_context(Model::load(path));
}

// The ApiError's message, or "" when none is thrown.
std::string error_of(const PolicyDefaults& d, const PolicyRequest& r, const PolicyContext& ctx) {
  try {
    choose_policy(d, r, ctx);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.what();
  }
  return "";
}

TEST(PolicyChoiceTest, DefaultsAndRequestOptionsMerge) {
  const PolicyContext ctx = tiny_context();
  PolicyDefaults d;
  d.spec = "streaming:budget=32,sinks=4";
  EXPECT_EQ(choose_policy(d, {}, ctx), "streaming:budget=32,sinks=4");
  // The same policy: the default's options, the request's on top.
  EXPECT_EQ(choose_policy(d, {"", {{"budget", "8"}}}, ctx), "streaming:budget=8,sinks=4");
  EXPECT_EQ(choose_policy(d, {"streaming:budget=16", {}}, ctx), "streaming:budget=16,sinks=4");
  // Another policy: only its own options.
  EXPECT_EQ(choose_policy(d, {"oracle", {{"budget", "6"}}}, ctx), "oracle:budget=6");
  EXPECT_EQ(choose_policy(d, {"full", {}}, ctx), "full");
}

TEST(PolicyChoiceTest, TheServersCalibrationGoesToCalibratedPoliciesOnly) {
  const PolicyContext ctx = tiny_context();
  PolicyDefaults d;
  d.calib = "/nonexistent/calib.json";
  // fasa gets the server's file (and fails on it here, naming it) ...
  EXPECT_NE(error_of(d, {"fasa", {{"budget", "8"}}}, ctx).find("/nonexistent/calib.json"),
            std::string::npos);
  // ... streaming does not (it has no calib option, which would be an error).
  EXPECT_EQ(choose_policy(d, {"streaming", {{"budget", "8"}}}, ctx), "streaming:budget=8");
  // Without a server calibration (and none stored for the model), fasa calibrates online, and
  // the spec says so.
  EXPECT_EQ(choose_policy({}, {"fasa", {{"budget", "8"}}}, ctx), "fasa:budget=8,calib=online");
}

TEST(PolicyChoiceTest, BadChoicesAreClientErrors) {
  const PolicyContext ctx = tiny_context();
  EXPECT_NE(error_of({}, {"nope", {}}, ctx).find("unknown attention policy 'nope'"),
            std::string::npos);
  EXPECT_NE(error_of({}, {"streaming", {{"budget", "-1"}}}, ctx).find("budget"), std::string::npos);
  EXPECT_NE(error_of({}, {"streaming", {{"colour", "red"}}}, ctx).find("colour"),
            std::string::npos);
  EXPECT_NE(error_of({}, {"streaming:budget", {}}, ctx).find("key=value"), std::string::npos);
  EXPECT_NE(error_of({}, {"fasa:calib=/etc/passwd", {}}, ctx).find("--calib"), std::string::npos);
  EXPECT_NE(error_of({}, {"fasa:offload_dir=/tmp", {}}, ctx).find("--offload-dir"),
            std::string::npos);
}

// policy_takes_calibration agrees with what each policy accepts: given calib=, a calibrated
// policy complains about the file, the others about the option.
TEST(PolicyChoiceTest, RegistryCalibrationFlagMatchesThePolicies) {
  const PolicyContext ctx = tiny_context();
  for (const std::string& name : policy_names()) {
    std::string msg;
    try {
      make_policy(name, ctx, {{"calib", "/nonexistent/c.json"}, {"budget", "8"}});
    } catch (const Error& e) {
      msg = e.what();
    }
    const bool refused_option = msg.find("no option 'calib'") != std::string::npos ||
                                msg.find("takes no options") != std::string::npos;
    EXPECT_EQ(policy_takes_calibration(name), !refused_option) << name << ": " << msg;
  }
  EXPECT_FALSE(policy_takes_calibration("nope"));
}

TEST(ServerTest, ConstantTimeCompare) {
  EXPECT_TRUE(equal_constant_time("s3cret", "s3cret"));
  EXPECT_TRUE(equal_constant_time("", ""));
  EXPECT_FALSE(equal_constant_time("s3cret", "s3creT"));
  EXPECT_FALSE(equal_constant_time("s3cret", "s3cre"));
  EXPECT_FALSE(equal_constant_time("", "x"));
  EXPECT_FALSE(equal_constant_time(std::string("a\0b", 3), "a"));
}

TEST(ServerTest, MetricsAreValidPrometheusText) {
  SchedulerStats s;
  s.active = 2;
  s.queued = 1;
  s.kv_bytes_ram = 1000;
  s.per_policy["fasa"] = PolicyCounters{3, 10, 5000};
  RequestCounters rc;
  rc.add("/v1/completions", 200);
  rc.add("/v1/completions", 200);
  rc.add("/v1/completions", 400);
  rc.add_cut("/v1/chat/completions", "client");
  const std::string text = render_metrics(s, 4, rc, {123, 456});
  EXPECT_NE(text.find(
                "fasa_streams_cut_total{endpoint=\"/v1/chat/completions\",by=\"client\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("fasa_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("fasa_requests_total{endpoint=\"/v1/completions\",status=\"400\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("fasa_policy_kv_bytes_read_per_token{policy=\"fasa\"} 500\n"),
            std::string::npos);
  EXPECT_NE(text.find("fasa_kv_bytes_resident{tier=\"ram\"} 1000\n"), std::string::npos);
  EXPECT_NE(text.find("fasa_queue_depth 1\n"), std::string::npos);
  EXPECT_NE(text.find("fasa_slots 4\n"), std::string::npos);
  // Every sample line belongs to a family declared above it with HELP and TYPE.
  std::string family;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    ASSERT_NE(end, std::string::npos) << "the text must end with a newline";
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
    } else if (line[0] != '#') {
      EXPECT_EQ(line.rfind(family, 0), 0u) << line << " outside family " << family;
    }
  }
}

}  // namespace
}  // namespace fasa::server
