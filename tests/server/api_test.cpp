// The OpenAI-compatible request parsing and response rendering (server/api).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "fasa/server/api.h"

namespace fasa::server {
namespace {

using json = nlohmann::json;

// --- rendering ---

GenOutcome outcome() {
  GenOutcome o;
  o.id = "cmpl-42";
  o.created = 1700000000;
  o.model = "smollm2";
  o.text = "Hello \"world\"\n";
  o.finish_reason = "length";
  o.prompt_tokens = 5;
  o.completion_tokens = 3;
  o.policy = "fasa:budget=256";
  o.kv_bytes_read = 123456789012ull;
  o.kv_bytes_read_per_token = 1024.5;
  return o;
}

void expect_head(const json& j, const GenOutcome& o, const char* object) {
  EXPECT_EQ(j.at("id"), o.id);
  EXPECT_EQ(j.at("object"), object);
  EXPECT_TRUE(j.at("created").is_number_integer());
  EXPECT_EQ(j.at("created").get<int64_t>(), o.created);
  EXPECT_EQ(j.at("model"), o.model);
}

void expect_usage_and_fasa(const json& j) {
  const json& u = j.at("usage");
  EXPECT_EQ(u.at("prompt_tokens").get<int>(), 5);
  EXPECT_EQ(u.at("completion_tokens").get<int>(), 3);
  EXPECT_EQ(u.at("total_tokens").get<int>(), 8);
  const json& f = j.at("fasa");
  EXPECT_EQ(f.at("policy"), "fasa:budget=256");
  EXPECT_TRUE(f.at("kv_bytes_read").is_number_unsigned());
  EXPECT_EQ(f.at("kv_bytes_read").get<uint64_t>(), 123456789012ull);
  EXPECT_TRUE(f.at("kv_bytes_read_per_token").is_number_float());
  EXPECT_DOUBLE_EQ(f.at("kv_bytes_read_per_token").get<double>(), 1024.5);
}

// The JSON of one server-sent event, checking its framing.
json sse_json(const std::string& event) {
  EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
  EXPECT_GE(event.size(), 8u);
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n") << event;
  const std::string body = event.substr(6, event.size() - 8);
  EXPECT_EQ(body.find('\n'), std::string::npos) << "an event's data is one line: " << event;
  return json::parse(body);
}

TEST(ApiRender, CompletionBody) {
  const GenOutcome o = outcome();
  const std::string body = render_completion(o);
  EXPECT_EQ(body.find('\n'), std::string::npos) << "compact JSON";
  const json j = json::parse(body);
  expect_head(j, o, "text_completion");
  ASSERT_EQ(j.at("choices").size(), 1u);
  const json& c = j["choices"][0];
  EXPECT_EQ(c.at("index"), 0);
  EXPECT_EQ(c.at("text"), "Hello \"world\"\n");
  EXPECT_EQ(c.at("finish_reason"), "length");
  EXPECT_TRUE(c.at("logprobs").is_null());
  expect_usage_and_fasa(j);
  EXPECT_EQ(body.rfind(R"({"id":"cmpl-42","object":"text_completion",)", 0), 0u)
      << "OpenAI's key order: " << body;
}

TEST(ApiRender, ChatBody) {
  GenOutcome o = outcome();
  o.id = "chatcmpl-1";
  o.finish_reason = "stop";
  const json j = json::parse(render_chat_completion(o));
  expect_head(j, o, "chat.completion");
  ASSERT_EQ(j.at("choices").size(), 1u);
  const json& c = j["choices"][0];
  EXPECT_EQ(c.at("index"), 0);
  EXPECT_EQ(c.at("message"), (json{{"role", "assistant"}, {"content", "Hello \"world\"\n"}}));
  EXPECT_EQ(c.at("finish_reason"), "stop");
  EXPECT_TRUE(c.at("logprobs").is_null());
  EXPECT_FALSE(c.contains("text"));
  expect_usage_and_fasa(j);
}

TEST(ApiRender, CompletionChunks) {
  const GenOutcome o = outcome();
  const json mid = sse_json(sse_completion_chunk(o, "Hel", ""));
  expect_head(mid, o, "text_completion");
  ASSERT_EQ(mid.at("choices").size(), 1u);
  EXPECT_EQ(mid["choices"][0].at("index"), 0);
  EXPECT_EQ(mid["choices"][0].at("text"), "Hel");
  EXPECT_TRUE(mid["choices"][0].at("finish_reason").is_null());
  EXPECT_TRUE(mid["choices"][0].at("logprobs").is_null());
  EXPECT_FALSE(mid.contains("usage"));
  const json last = sse_json(sse_completion_chunk(o, "", "stop"));
  EXPECT_EQ(last["choices"][0].at("text"), "");
  EXPECT_EQ(last["choices"][0].at("finish_reason"), "stop");
}

TEST(ApiRender, ChatChunks) {
  GenOutcome o = outcome();
  o.id = "chatcmpl-7";
  const json first = sse_json(sse_chat_chunk(o, "", "", true));
  expect_head(first, o, "chat.completion.chunk");
  ASSERT_EQ(first.at("choices").size(), 1u);
  EXPECT_EQ(first["choices"][0].at("index"), 0);
  EXPECT_EQ(first["choices"][0].at("delta"), (json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0].at("finish_reason").is_null());
  EXPECT_TRUE(first["choices"][0].at("logprobs").is_null());
  const json mid = sse_json(sse_chat_chunk(o, "lo", "", false));
  EXPECT_EQ(mid["choices"][0].at("delta"), (json{{"content", "lo"}}));
  EXPECT_TRUE(mid["choices"][0].at("finish_reason").is_null());
  const json last = sse_json(sse_chat_chunk(o, "", "length", false));
  EXPECT_TRUE(last["choices"][0].at("delta").is_object());
  EXPECT_TRUE(last["choices"][0].at("delta").empty());
  EXPECT_EQ(last["choices"][0].at("finish_reason"), "length");
  // A first chunk that already carries text.
  const json both = sse_json(sse_chat_chunk(o, "Hi", "", true));
  EXPECT_EQ(both["choices"][0].at("delta"), (json{{"role", "assistant"}, {"content", "Hi"}}));
}

TEST(ApiRender, UsageChunkAndDone) {
  const GenOutcome o = outcome();
  for (Endpoint ep : {Endpoint::Completions, Endpoint::Chat}) {
    const json j = sse_json(sse_usage_chunk(o, ep));
    expect_head(j, o, ep == Endpoint::Chat ? "chat.completion.chunk" : "text_completion");
    EXPECT_TRUE(j.at("choices").is_array());
    EXPECT_TRUE(j.at("choices").empty());
    expect_usage_and_fasa(j);
  }
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

TEST(ApiRender, Models) {
  const json j = json::parse(render_models({"smollm2", "gemma3"}, 1700000001));
  EXPECT_EQ(j.at("object"), "list");
  ASSERT_EQ(j.at("data").size(), 2u);
  const json& m = j["data"][1];
  EXPECT_EQ(m.at("id"), "gemma3");
  EXPECT_EQ(m.at("object"), "model");
  EXPECT_EQ(m.at("created").get<int64_t>(), 1700000001);
  EXPECT_EQ(m.at("owned_by"), "fasa");
  EXPECT_EQ(j["data"][0].at("id"), "smollm2");
  const json none = json::parse(render_models({}, 0));
  EXPECT_TRUE(none.at("data").is_array());
  EXPECT_TRUE(none.at("data").empty());
}

TEST(ApiRender, InvalidUtf8TextIsReplacedNotThrown) {
  GenOutcome o = outcome();
  o.text = "ok \xe2\x82 and \xff end";  // a cut 3-byte sequence and a byte that never starts one
  o.model = "m\xc3";
  std::string body;
  ASSERT_NO_THROW(body = render_completion(o));
  const json j = json::parse(body);  // valid JSON, valid UTF-8
  const std::string text = j["choices"][0]["text"];
  EXPECT_EQ(text.rfind("ok ", 0), 0u);
  EXPECT_NE(text.find("\xef\xbf\xbd"), std::string::npos) << "U+FFFD replaces the bad bytes";
  EXPECT_NE(text.find(" end"), std::string::npos);
  ASSERT_NO_THROW(body = render_chat_completion(o));
  EXPECT_NO_THROW(json::parse(body));
  ASSERT_NO_THROW(body = sse_completion_chunk(o, "\xe2\x82", ""));
  EXPECT_EQ(sse_json(body)["choices"][0]["text"], "\xef\xbf\xbd");
  ASSERT_NO_THROW(body = sse_chat_chunk(o, "\xf0\x9f", "", false));
  EXPECT_NO_THROW(sse_json(body));
  EXPECT_NO_THROW(json::parse(render_models({"bad\xff"}, 0)));
}

TEST(ApiRender, TextEscapingRoundTrips) {
  GenOutcome o = outcome();
  o.text = std::string("tab\tnul") + '\0' + "\x01 quote\" backslash\\ </script> é 日本 🙂";
  const json j = json::parse(render_completion(o));
  EXPECT_EQ(j["choices"][0]["text"].get<std::string>(), o.text);
}

}  // namespace
}  // namespace fasa::server
