// `fasa serve`'s ApiServer on the tiny byte model (token 0 ends a generation, byte b is token
// b + 1), greedy: vLLM's stop controls (min_tokens, ignore_eos, stop_token_ids) on whole and
// streamed answers with n > 1, their 400s; /v1/completions with several prompts (choices,
// indices, usage, limits); timings and X-Fasa-* headers. Chat on SmolLM2 (the tiny model has no
// chat format).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/server/server.h"
#include "support/http_client.h"
#include "support/model_path.h"
#include "support/tiny_byte_model.h"

namespace fasa::server {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using test::HttpClient;
using test::HttpResponse;

std::shared_ptr<const Model> tiny() {
  static std::shared_ptr<const Model> m = test::tiny_byte_model("api_gaps.gguf", false);
  return m;
}

ServerConfig config() {
  ServerConfig cfg;
  cfg.http.port = 0;
  cfg.model_id = "tiny";
  cfg.max_tokens = 8;
  cfg.scheduler.parallel = 2;
  cfg.scheduler.max_queue = 8;
  cfg.scheduler.session.n_ctx = 128;
  cfg.log_requests = false;
  return cfg;
}

HttpResponse post(int port, const std::string& path, const json& body) {
  HttpClient c(port, 60s);
  const std::string b = body.dump();
  c.send(
      fmt::format("POST {} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                  "Content-Length: {}\r\n\r\n{}",
                  path, b.size(), b));
  return c.read_response();
}

json ok(int port, const json& body, const std::string& path = "/v1/completions") {
  const HttpResponse r = post(port, path, body);
  EXPECT_EQ(r.status, 200) << body.dump() << " -> " << r.body;
  return r.status == 200 ? json::parse(r.body) : json();
}

// A 400 whose message holds `needle`.
void expect_400(int port, const json& body, const std::string& needle) {
  const HttpResponse r = post(port, "/v1/completions", body);
  EXPECT_EQ(r.status, 400) << body.dump() << " -> " << r.body;
  if (r.status != 400) return;
  const std::string message = json::parse(r.body)["error"]["message"];
  EXPECT_NE(message.find(needle), std::string::npos) << message;
}

// The data events of a stream, [DONE] left out.
std::vector<json> events(const std::string& body) {
  std::vector<json> out;
  for (size_t at = 0; at < body.size();) {
    const size_t end = body.find("\n\n", at);
    const std::string e = body.substr(at, end - at);
    at = end == std::string::npos ? body.size() : end + 2;
    if (e != "data: [DONE]") out.push_back(json::parse(e.substr(6)));
  }
  return out;
}

constexpr int kA = 'A' + 1;  // byte 'A' as a token

json greedy(json extra) {
  json b = {{"prompt", "hello"}, {"temperature", 0}, {"max_tokens", 6}};
  if (!extra.is_null()) b.update(extra);
  return b;
}

TEST(ApiStopControls, MinTokensIgnoreEosAndStopTokenIds) {
  ApiServer srv(tiny(), config());
  srv.start();
  const json end_now = {{"0", 100}};  // token 0, the end, always sampled
  const json plain = ok(srv.port(), greedy({{"logit_bias", end_now}}));
  EXPECT_EQ(plain["usage"]["completion_tokens"], 0);
  EXPECT_EQ(plain["choices"][0]["finish_reason"], "stop");
  const json held = ok(srv.port(), greedy({{"logit_bias", end_now}, {"min_tokens", 3}}));
  EXPECT_EQ(held["usage"]["completion_tokens"], 3);  // a short answer made longer
  EXPECT_EQ(held["choices"][0]["finish_reason"], "stop");
  const json past = ok(srv.port(), greedy({{"logit_bias", end_now}, {"ignore_eos", true}}));
  EXPECT_EQ(past["usage"]["completion_tokens"], 6);
  EXPECT_EQ(past["choices"][0]["finish_reason"], "length");
  // A stop token: not in the text, not counted; min_tokens holds it back too.
  const json always_a = {{std::to_string(kA), 100}};
  const json as = ok(srv.port(), greedy({{"logit_bias", always_a}}));
  EXPECT_EQ(as["choices"][0]["text"], "AAAAAA");
  const json stopped =
      ok(srv.port(), greedy({{"logit_bias", always_a}, {"stop_token_ids", json::array({kA, 5})}}));
  EXPECT_EQ(stopped["choices"][0]["text"], "");
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(stopped["usage"]["completion_tokens"], 0);
  const json later = ok(srv.port(), greedy({{"logit_bias", always_a},
                                            {"stop_token_ids", json::array({kA})},
                                            {"min_tokens", 2}}));
  EXPECT_EQ(later["usage"]["completion_tokens"], 2);
  const std::string text = later["choices"][0]["text"];
  EXPECT_EQ(text.find('A'), std::string::npos) << text;
  srv.stop();
}

TEST(ApiStopControls, StreamedWithSeveralChoices) {
  ApiServer srv(tiny(), config());
  srv.start();
  const HttpResponse r = post(srv.port(), "/v1/completions",
                              greedy({{"logit_bias", {{"0", 100}}},
                                      {"min_tokens", 2},
                                      {"n", 2},
                                      {"stream", true},
                                      {"stream_options", {{"include_usage", true}}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  std::map<int, std::string> finish;
  json usage;
  for (const json& e : events(r.body)) {
    if (e.contains("usage")) usage = e["usage"];
    for (const json& c : e["choices"]) {
      if (!c["finish_reason"].is_null()) finish[c["index"]] = c["finish_reason"];
    }
  }
  EXPECT_EQ(finish, (std::map<int, std::string>{{0, "stop"}, {1, "stop"}}));
  EXPECT_EQ(usage["completion_tokens"], 4);
  srv.stop();
}

TEST(ApiStopControls, MistakesAre400s) {
  ApiServer srv(tiny(), config());
  srv.start();
  const int n_vocab = tiny()->config().n_vocab;
  expect_400(srv.port(), greedy({{"stop_token_ids", json::array({1, n_vocab})}}),
             fmt::format("'stop_token_ids[1]' is token id {}, outside the vocabulary [0, {})",
                         n_vocab, n_vocab));
  expect_400(srv.port(), greedy({{"min_tokens", 7}}),
             "'min_tokens' is 7, above the answer's token limit of 6");
  json no_max = greedy({{"min_tokens", 9}});
  no_max.erase("max_tokens");
  expect_400(srv.port(), no_max, "above the answer's token limit of 8");
  expect_400(srv.port(), greedy({{"min_tokens", 1}, {"fasa", {{"lossless", 2}}}}),
             "'min_tokens' cannot be combined with 'fasa.lossless'");
  srv.stop();
}

TEST(ApiPromptArrays, OneChoicePerPromptTimesN) {
  ApiServer srv(tiny(), config());
  srv.start();
  const std::vector<std::string> prompts = {"ab", "hello there", "xyz"};
  std::vector<json> alone;
  for (const std::string& p : prompts) alone.push_back(ok(srv.port(), greedy({{"prompt", p}})));
  const json all = ok(srv.port(), greedy({{"prompt", prompts}, {"n", 2}}));
  ASSERT_EQ(all["choices"].size(), 6u);
  int prompt_tokens = 0, completion_tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    prompt_tokens += alone[i]["usage"]["prompt_tokens"].get<int>();
    for (int j = 0; j < 2; ++j) {
      const json& c = all["choices"][i * 2 + j];
      EXPECT_EQ(c["index"], i * 2 + j);  // prompt i's choice j, as OpenAI numbers them
      EXPECT_EQ(c["text"], alone[i]["choices"][0]["text"]) << i << " " << j;
      completion_tokens += alone[i]["usage"]["completion_tokens"].get<int>();
    }
  }
  EXPECT_EQ(all["usage"]["prompt_tokens"], prompt_tokens);  // each prompt once
  EXPECT_EQ(all["usage"]["completion_tokens"], completion_tokens);
  EXPECT_EQ(all["timings"]["predicted_n"], completion_tokens);
  // Streamed: the same texts by index, and the summed usage.
  const HttpResponse s = post(srv.port(), "/v1/completions",
                              greedy({{"prompt", prompts},
                                      {"n", 2},
                                      {"stream", true},
                                      {"stream_options", {{"include_usage", true}}}}));
  ASSERT_EQ(s.status, 200) << s.body;
  std::map<int, std::string> texts;
  json usage;
  for (const json& e : events(s.body)) {
    if (e.contains("usage")) usage = e["usage"];
    for (const json& c : e["choices"]) texts[c["index"]] += c["text"].get<std::string>();
  }
  ASSERT_EQ(texts.size(), 6u);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(texts[k], all["choices"][k]["text"]) << k;
  EXPECT_EQ(usage["prompt_tokens"], prompt_tokens);
  EXPECT_EQ(usage["completion_tokens"], completion_tokens);
  // Token-id prompts, and echo only (the prompts scored, nothing generated).
  const json ids = ok(srv.port(), greedy({{"prompt", json::parse("[[98, 99], [121]]")}}));
  EXPECT_EQ(ids["choices"][0]["text"], alone[0]["choices"][0]["text"]);
  const json echo =
      ok(srv.port(),
         {{"prompt", {"ab", "cd"}}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 1}, {"n", 2}});
  ASSERT_EQ(echo["choices"].size(), 4u);
  EXPECT_EQ(echo["choices"][3]["text"], "cd");
  EXPECT_EQ(echo["choices"][3]["index"], 3);
  EXPECT_EQ(echo["choices"][3]["logprobs"]["tokens"], json({"c", "d"}));
  EXPECT_EQ(echo["usage"]["prompt_tokens"], 4);
  srv.stop();
}

TEST(ApiPromptArrays, LimitsAndWhichPromptIsWrong) {
  ServerConfig cfg = config();
  cfg.scheduler.parallel = 1;
  cfg.scheduler.max_queue = 4;  // at most 5 sequences per request
  ApiServer srv(tiny(), cfg);
  srv.start();
  expect_400(srv.port(), greedy({{"prompt", {"a", "b", "c"}}, {"n", 2}}),
             "this request needs 6 sequences (3 prompts x n 2); this server takes at most 5");
  expect_400(srv.port(), greedy({{"n", 6}}), "this request needs 6 sequences (n 6)");
  expect_400(srv.port(), greedy({{"prompt", {"ab", std::string(200, 'q')}}}),
             "prompt[1]: the prompt is 200 tokens; this server's context is 128");
  expect_400(srv.port(), greedy({{"prompt", json::parse("[[5], [5, 100000]]")}}),
             "prompt[1]: 'prompt' holds token id 100000, outside the vocabulary");
  expect_400(srv.port(), greedy({{"prompt", {"ab", ""}}}), "prompt[1]: the prompt is empty");
  srv.stop();
}

TEST(ApiTimings, BodiesHeadersAndAStreamsLastChunk) {
  ApiServer srv(tiny(), config());
  srv.start();
  const HttpResponse r = post(srv.port(), "/v1/completions", greedy({}));
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(r.header("x-fasa-policy"), "full");
  EXPECT_EQ(r.header("x-fasa-kv-bytes-read"),
            std::to_string(j["fasa"]["kv_bytes_read"].get<uint64_t>()));
  EXPECT_FALSE(r.header("x-fasa-kv-bytes-read-per-token").empty());
  EXPECT_EQ(j["usage"]["fasa"], j["fasa"]);
  const json& t = j["timings"];
  EXPECT_EQ(t["predicted_n"], j["usage"]["completion_tokens"]);
  EXPECT_EQ(t["prompt_n"].get<int>() + t["cache_n"].get<int>(), j["usage"]["prompt_tokens"]);
  EXPECT_GT(t["prompt_ms"].get<double>(), 0.0);
  EXPECT_GT(t["predicted_ms"].get<double>(), 0.0);
  EXPECT_GT(t["predicted_per_second"].get<double>(), 0.0);
  for (const bool include_usage : {false, true}) {
    SCOPED_TRACE(include_usage);
    json body = greedy({{"stream", true}, {"n", 2}, {"ignore_eos", true}});
    if (include_usage) body["stream_options"] = {{"include_usage", true}};
    const HttpResponse s = post(srv.port(), "/v1/completions", body);
    ASSERT_EQ(s.status, 200) << s.body;
    EXPECT_EQ(s.header("x-fasa-policy"), "full");
    EXPECT_EQ(s.header("x-fasa-kv-bytes-read"), "");  // not known when the headers go
    const std::vector<json> es = events(s.body);
    ASSERT_GE(es.size(), 2u);
    for (size_t i = 0; i + 1 < es.size(); ++i) EXPECT_FALSE(es[i].contains("timings")) << i;
    const json& last = es.back();
    ASSERT_TRUE(last.contains("timings")) << last.dump();
    EXPECT_EQ(last["timings"]["predicted_n"], 12);
    EXPECT_EQ(last.contains("usage"), include_usage);
  }
  srv.stop();
}

// Chat, streamed with two choices: min_tokens lengthens SmolLM2's answer ended at once by a
// logit_bias on <|im_end|>, and ignore_eos runs to the limit.
TEST(ApiStopControls, ChatOnSmolLM2) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  static std::shared_ptr<const Model> model = Model::load(path);
  ServerConfig cfg = config();
  cfg.scheduler.session.n_ctx = 256;
  ApiServer srv(model, cfg);
  srv.start();
  const int32_t im_end = model->require_tokenizer().find_token("<|im_end|>");
  ASSERT_GE(im_end, 0);
  const json base = {{"messages", {{{"role", "user"}, {"content", "Say hi."}}}},
                     {"temperature", 0},
                     {"max_tokens", 6},
                     {"logit_bias", {{std::to_string(im_end), 100}}}};
  const json plain = ok(srv.port(), base, "/v1/chat/completions");
  EXPECT_EQ(plain["usage"]["completion_tokens"], 0);
  json held = base;
  held["min_tokens"] = 4;
  held["n"] = 2;
  const json h = ok(srv.port(), held, "/v1/chat/completions");
  EXPECT_EQ(h["usage"]["completion_tokens"], 8);
  EXPECT_EQ(h["choices"][1]["finish_reason"], "stop");
  EXPECT_FALSE(h["choices"][1]["message"]["content"].get<std::string>().empty());
  held["stream"] = true;
  held.erase("min_tokens");
  held["ignore_eos"] = true;
  const HttpResponse s = post(srv.port(), "/v1/chat/completions", held);
  ASSERT_EQ(s.status, 200) << s.body;
  std::map<int, std::string> finish;
  for (const json& e : events(s.body)) {
    for (const json& c : e["choices"]) {
      if (!c["finish_reason"].is_null()) finish[c["index"]] = c["finish_reason"];
    }
  }
  EXPECT_EQ(finish, (std::map<int, std::string>{{0, "length"}, {1, "length"}}));
  srv.stop();
}

}  // namespace
}  // namespace fasa::server
