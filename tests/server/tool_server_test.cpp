// `fasa serve` with tools, end to end over HTTP. On SmolLM2 (the generic format): tool_choice
// "required" and a named function answer with calls whose arguments validate against the
// function's schema, streamed the same as whole, and a history with the call and its result is
// answered. On random-weight files of Qwen 2.5, Llama 3.1/3.2 and Mistral v0.3 (their real
// templates and special tokens, tests/support/family_model.h): the constrained answer in each
// format's own call syntax is read back as a valid call, and sending it back is accepted.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fasa/model/model.h"
#include "fasa/server/server.h"
#include "support/family_model.h"
#include "support/http_client.h"
#include "support/model_path.h"
#include "support/schema_check.h"

namespace fasa::server {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const char* kWeatherParams = R"({"type": "object", "properties": {"city": {"type": "string"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]})";
// Values of bounded length only (random weights never end a string on purpose).
const char* kForecastParams = R"({"type": "object", "properties": {"days": {"type": "integer"},
    "unit": {"enum": ["c", "f"]}, "alerts": {"type": "boolean"}},
    "required": ["days", "unit", "alerts"]})";

std::string tool(const std::string& name, const std::string& params) {
  return R"({"type": "function", "function": {"name": ")" + name +
         R"(", "description": "A tool.", "parameters": )" + params + "}}";
}

ServerConfig config(const std::string& id, int max_tokens, int n_ctx = 1024) {
  ServerConfig cfg;
  cfg.http.port = 0;
  cfg.model_id = id;
  cfg.max_tokens = max_tokens;
  cfg.scheduler.parallel = 1;
  cfg.scheduler.session.n_ctx = n_ctx;
  cfg.log_requests = false;
  return cfg;
}

json post(ApiServer& srv, const std::string& body, int* status = nullptr) {
  test::HttpClient c(srv.port(), 300s);
  c.send(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  const test::HttpResponse r = c.read_response();
  if (status) *status = r.status;
  if (r.body.rfind("data: ", 0) == 0) return json(r.body);  // a stream: its text
  return json::parse(r.body);
}

// The calls of a non-streamed answer, each checked against `schemas` (by function name).
json checked_calls(const json& answer, const std::map<std::string, ojson>& schemas) {
  const json& choice = answer["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << answer.dump();
  EXPECT_TRUE(choice["message"]["content"].is_null()) << answer.dump();
  const json calls = choice["message"].value("tool_calls", json::array());
  EXPECT_FALSE(calls.empty()) << answer.dump();
  for (const json& c : calls) {
    EXPECT_EQ(c["type"], "function");
    const std::string name = c["function"]["name"];
    EXPECT_TRUE(schemas.count(name)) << name;
    if (schemas.count(name)) {
      EXPECT_EQ(test::text_violation(c["function"]["arguments"], schemas.at(name)), "") << c.dump();
    }
  }
  return calls;
}

// The calls of a streamed answer, joined from the deltas.
json streamed_calls(const std::string& sse, std::string* finish) {
  json calls = json::array();
  for (size_t at = 0; (at = sse.find("data: {", at)) != std::string::npos;) {
    const size_t end = sse.find("\n\n", at);
    const json chunk = json::parse(sse.substr(at + 6, end - at - 6));
    at = end;
    if (chunk["choices"].empty()) continue;
    const json& c = chunk["choices"][0];
    if (!c["finish_reason"].is_null()) *finish = c["finish_reason"];
    EXPECT_FALSE(c["delta"].contains("content") && c["delta"]["content"] != "") << sse;
    for (const json& d : c["delta"].value("tool_calls", json::array())) {
      const size_t i = d["index"];
      if (i == calls.size()) calls.push_back({{"name", d["function"]["name"]}, {"arguments", ""}});
      calls[i]["arguments"] =
          calls[i]["arguments"].get<std::string>() + d["function"]["arguments"].get<std::string>();
    }
  }
  return calls;
}

TEST(ApiServerTools, SmolLM2CallsStreamsAndTakesTheResultBack) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  ApiServer srv(Model::load(path), config("smollm2", 120));
  srv.start();
  const std::map<std::string, ojson> schemas = {{"get_weather", ojson::parse(kWeatherParams)},
                                                {"forecast", ojson::parse(kForecastParams)}};
  const std::string tools =
      "[" + tool("get_weather", kWeatherParams) + ", " + tool("forecast", kForecastParams) + "]";
  const std::string ask = R"({"messages": [{"role": "user", "content":
      "What is the weather in Paris?"}], "temperature": 0, "tools": )" +
                          tools;

  const json required = post(srv, ask + R"(, "tool_choice": "required"})");
  const json calls = checked_calls(required, schemas);
  ASSERT_FALSE(calls.empty());
  const json named = post(srv, ask + R"(, "tool_choice": {"type": "function", "function":
      {"name": "forecast"}}})");
  for (const json& c : checked_calls(named, schemas)) EXPECT_EQ(c["function"]["name"], "forecast");

  std::string finish;
  const json streamed =
      streamed_calls(post(srv, ask + R"(, "tool_choice": "required", "stream": true})")
                         .get<std::string>(),
                     &finish);
  EXPECT_EQ(finish, "tool_calls");
  ASSERT_EQ(streamed.size(), calls.size());
  EXPECT_EQ(streamed[0]["name"], calls[0]["function"]["name"]);
  EXPECT_EQ(streamed[0]["arguments"], calls[0]["function"]["arguments"]);  // greedy: the same

  // The call and its result sent back: a history with role "tool" and content null.
  json back = json::parse(ask + "}");
  back["messages"].push_back(required["choices"][0]["message"]);
  back["messages"].push_back(
      {{"role", "tool"}, {"tool_call_id", calls[0]["id"]}, {"content", "22 degrees, sunny"}});
  int status = 0;
  const json answer = post(srv, back.dump(), &status);
  ASSERT_EQ(status, 200) << answer.dump();
  const json& choice = answer["choices"][0];
  EXPECT_TRUE(choice["finish_reason"] == "stop" || choice["finish_reason"] == "tool_calls")
      << answer.dump();

  const json unknown = post(srv, ask + R"(, "tool_choice": {"type": "function", "function":
      {"name": "nope"}}})",
                            &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("'nope'"), std::string::npos);
  post(srv, ask + R"(, "tool_choice": "required", "fasa": {"lossless": 2}})", &status);
  EXPECT_EQ(status, 400);
  srv.stop();
}

TEST(ApiServerTools, EachFormatsConstrainedCallRoundTrips) {
  const struct {
    const char* family;
    const char* format;
  } families[] = {{"qwen2.5-yarn", "hermes"},
                  {"llama3", "llama3"},
                  {"llama3.2", "llama3"},
                  {"mistral", "mistral-v3"}};
  const std::map<std::string, ojson> schemas = {{"forecast", ojson::parse(kForecastParams)}};
  for (const auto& f : families) {
    SCOPED_TRACE(f.family);
    const std::string path = ::testing::TempDir() + "/tools_" + f.family + ".gguf";
    write_family_model(f.family, 5, path);
    const auto model = Model::load(path);
    ASSERT_STREQ(tool_format_name(detect_tool_format(model->file())), f.format);
    // A byte-level vocabulary: long prompts; random weights write the most whitespace allowed.
    ApiServer srv(model, config(f.family, 800, 4096));
    srv.start();
    const std::string ask = R"({"messages": [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Forecast?"}], "temperature": 1, "seed": 3,
        "parallel_tool_calls": false, "tools": [)" +
                            tool("forecast", kForecastParams) + "]";
    const json required = post(srv, ask + R"(, "tool_choice": "required"})");
    const json calls = checked_calls(required, schemas);
    ASSERT_EQ(calls.size(), 1u) << required.dump();
    if (std::string(f.format) == "mistral-v3") {
      EXPECT_EQ(calls[0]["id"].get<std::string>().size(), 9u);
    }
    json back = json::parse(ask + "}");
    back["messages"].push_back(required["choices"][0]["message"]);
    back["messages"].push_back(
        {{"role", "tool"}, {"tool_call_id", calls[0]["id"]}, {"content", "rain"}});
    back["max_tokens"] = 4;
    int status = 0;
    const json answer = post(srv, back.dump(), &status);
    EXPECT_EQ(status, 200) << answer.dump();
    srv.stop();
  }
}

}  // namespace
}  // namespace fasa::server
