// What answers tell about themselves (api.h): usage over several prompts and choices, the fasa
// stats inside usage too, llama-server's timings in bodies and a stream's last chunk, the
// X-Fasa-* headers, and the model object of GET /v1/models/{id}.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/server/api.h"

namespace fasa::server {
namespace {

using json = nlohmann::json;

GenOutcome choice(int prompt_index, int index, int prompt_tokens, int cached, int completion) {
  GenOutcome o;
  o.id = "cmpl-9";
  o.created = 1700000000;
  o.model = "m";
  o.text = "t";
  o.finish_reason = "stop";
  o.policy = "fasa:budget=64";
  o.prompt_index = prompt_index;
  o.index = index;
  o.prompt_tokens = prompt_tokens;
  o.cached_tokens = cached;
  o.completion_tokens = completion;
  o.kv_bytes_read = 1000;
  o.kv_bytes_read_per_token = completion ? 1000.0 / completion : 0.0;
  return o;
}

// Two prompts (5 and 7 tokens) with two choices each.
std::vector<GenOutcome> two_by_two() {
  std::vector<GenOutcome> cs = {choice(0, 0, 5, 2, 4), choice(0, 1, 5, 3, 2), choice(1, 2, 7, 0, 1),
                                choice(1, 3, 7, 1, 3)};
  const double prompt_ms[] = {10, 30, 20, 5}, predicted_ms[] = {40, 20, 8, 60};
  for (size_t i = 0; i < cs.size(); ++i) {
    cs[i].prompt_ms = prompt_ms[i];
    cs[i].predicted_ms = predicted_ms[i];
  }
  return cs;
}

json sse_json(const std::string& event) {
  EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
  return json::parse(event.substr(6));
}

TEST(ApiStats, UsageCountsEachPromptOnceAndCarriesTheFasaStats) {
  const json j = json::parse(render_completion(two_by_two()));
  ASSERT_EQ(j["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(j["choices"][i]["index"], i);
  const json& u = j.at("usage");
  EXPECT_EQ(u.at("prompt_tokens"), 12);      // 5 + 7, not per choice
  EXPECT_EQ(u.at("completion_tokens"), 10);  // every choice's
  EXPECT_EQ(u.at("total_tokens"), 22);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 4);  // per prompt, its best choice
  EXPECT_EQ(u.at("fasa"), j.at("fasa"));
  EXPECT_EQ(j["fasa"]["kv_bytes_read"], 4000);
  EXPECT_DOUBLE_EQ(j["fasa"]["kv_bytes_read_per_token"].get<double>(), 400.0);
  EXPECT_EQ(json::parse(render_chat_completion(two_by_two())).at("usage"), u);
}

TEST(ApiStats, TimingsAsLlamaServerGivesThem) {
  const json t = json::parse(render_chat_completion(two_by_two())).at("timings");
  const std::vector<std::string> keys = {"cache_n",
                                         "prompt_n",
                                         "prompt_ms",
                                         "prompt_per_token_ms",
                                         "prompt_per_second",
                                         "predicted_n",
                                         "predicted_ms",
                                         "predicted_per_token_ms",
                                         "predicted_per_second"};
  for (const std::string& k : keys) EXPECT_TRUE(t.contains(k)) << k;
  EXPECT_EQ(t.size(), keys.size());
  EXPECT_EQ(t["cache_n"], 6);       // 2 + 3 + 0 + 1
  EXPECT_EQ(t["prompt_n"], 18);     // (5 - 2) + (5 - 3) + 7 + (7 - 1): prefilled
  EXPECT_EQ(t["predicted_n"], 10);  // generated
  EXPECT_DOUBLE_EQ(t["prompt_ms"].get<double>(), 30.0);  // the choices run side by side
  EXPECT_DOUBLE_EQ(t["predicted_ms"].get<double>(), 60.0);
  EXPECT_DOUBLE_EQ(t["prompt_per_token_ms"].get<double>(), 30.0 / 18);
  EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 18 * 1000.0 / 30);
  EXPECT_DOUBLE_EQ(t["predicted_per_token_ms"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 10 * 1000.0 / 60);
  // Nothing timed: rates 0, not a division by zero.
  const json none = json::parse(render_completion(choice(0, 0, 3, 3, 0))).at("timings");
  EXPECT_EQ(none["prompt_n"], 0);
  EXPECT_EQ(none["prompt_per_second"], 0.0);
  EXPECT_EQ(none["predicted_per_token_ms"], 0.0);
}

TEST(ApiStats, AStreamsLastChunkCarriesTheTimings) {
  const std::vector<GenOutcome> cs = two_by_two();
  EXPECT_FALSE(sse_json(sse_completion_chunk(cs[1], "", "stop")).contains("timings"));
  EXPECT_FALSE(sse_json(sse_chat_chunk(cs[1], "x", "", false)).contains("timings"));
  const json last = sse_json(sse_completion_chunk(cs[3], "", "stop", {}, &cs));
  EXPECT_EQ(last.at("timings"), json::parse(render_completion(cs)).at("timings"));
  EXPECT_EQ(last["choices"][0]["index"], 3);
  const json chat = sse_json(sse_chat_chunk(cs[3], "", "stop", false, {}, &cs));
  EXPECT_EQ(chat.at("timings")["predicted_n"], 10);
  const json usage = sse_json(sse_usage_chunk(cs, Endpoint::Chat));
  EXPECT_EQ(usage.at("timings")["prompt_n"], 18);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 12);
  EXPECT_EQ(usage["usage"].at("fasa"), usage.at("fasa"));
}

std::map<std::string, std::string> as_map(
    const std::vector<std::pair<std::string, std::string>>& h) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : h) EXPECT_TRUE(m.emplace(k, v).second) << "twice: " << k;
  return m;
}

TEST(ApiStats, FasaHeaders) {
  std::vector<GenOutcome> cs = two_by_two();
  const auto early = as_map(fasa_headers(cs, false));  // a stream's: no counts yet
  EXPECT_EQ(early, (std::map<std::string, std::string>{{"X-Fasa-Policy", "fasa:budget=64"}}));
  const auto whole = as_map(fasa_headers(cs, true));
  EXPECT_EQ(whole.at("X-Fasa-Policy"), "fasa:budget=64");
  EXPECT_EQ(whole.at("X-Fasa-Kv-Bytes-Read"), "4000");
  EXPECT_EQ(whole.at("X-Fasa-Kv-Bytes-Read-Per-Token"), "400.0");
  EXPECT_EQ(whole.size(), 3u);
  // A calibrated policy by file and hash, lossless decoding's counts; header-safe values.
  cs[0].calibration_kind = "file";
  cs[0].calibration_file = "my calib\r\n.json";
  cs[0].calibration_sha256 = "ab12";
  cs[0].lossless = "4";
  cs[0].lossless_stats.verifications = 2;
  cs[0].lossless_stats.drafted = 8;
  cs[0].lossless_stats.accepted = 6;
  cs[0].policy = "fasa:x=a\tb";
  const auto all = as_map(fasa_headers(cs, true));
  EXPECT_EQ(all.at("X-Fasa-Calibration"), "file; file=my%20calib%0D%0A.json; sha256=ab12");
  EXPECT_EQ(all.at("X-Fasa-Lossless").rfind("4; acceptance=0.7500; tokens_per_verification=", 0),
            0u)
      << all.at("X-Fasa-Lossless");
  EXPECT_EQ(all.at("X-Fasa-Policy"), "fasa:x=a%09b");
}

TEST(ApiStats, OneModel) {
  const json m = json::parse(render_model("smollm2", 1700000001));
  EXPECT_EQ(m, json::parse(render_models({"smollm2"}, 1700000001))["data"][0]);
  EXPECT_EQ(m.at("object"), "model");
  EXPECT_EQ(m.at("id"), "smollm2");
}

}  // namespace
}  // namespace fasa::server
