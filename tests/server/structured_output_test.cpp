// Structured outputs in `fasa serve`: response_format json_schema and vLLM's guided_json /
// guided_choice are parsed and compiled per request (properties in the body's order), every
// mistake or unsupported keyword is a 400 naming the field (and the keyword with its JSON
// pointer), two constraints at once are refused; on the real SmolLM2 the answers parse and
// validate against the schema.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fasa/model/model.h"
#include "fasa/server/api.h"
#include "fasa/server/server.h"
#include "support/http_client.h"
#include "support/model_path.h"
#include "support/schema_check.h"

namespace fasa::server {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using ojson = nlohmann::ordered_json;

const char* kCitySchema = R"({"$defs": {"Kind": {"enum": ["capital", "town"], "title": "Kind",
    "type": "string"}}, "properties": {"name": {"type": "string"}, "country": {"type": "string"},
    "population": {"type": "integer"}, "is_capital": {"type": "boolean"},
    "kind": {"$ref": "#/$defs/Kind"},
    "motto": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}},
    "required": ["name", "country", "population", "is_capital", "kind"],
    "title": "City", "type": "object", "additionalProperties": false})";

std::string chat_body(const std::string& extra) {
  return R"({"messages": [{"role": "user", "content": "Describe Paris as JSON."}], )" + extra + "}";
}

void expect_refused(const std::string& body, const std::string& param, const std::string& needle) {
  SCOPED_TRACE(body);
  try {
    parse_chat_request(body);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, param) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ApiStructured, JsonSchemaIsCompiledWithPropertiesInTheBodysOrder) {
  const GenRequest r = parse_chat_request(chat_body(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "City",
      "strict": true, "description": "a city", "extra_key": 1, "schema": )" +
      std::string(kCitySchema) + "}}"));
  ASSERT_TRUE(r.grammar);
  EXPECT_FALSE(r.json_object);
  const GrammarNode& root = r.grammar->nodes[r.grammar->root];
  ASSERT_EQ(root.kind, GrammarNode::Kind::Object);
  ASSERT_EQ(root.props.size(), 6u);
  EXPECT_EQ(root.props[0].key, "\"name\"");  // not sorted: "country" would come first
  EXPECT_EQ(root.props[5].key, "\"motto\"");
  EXPECT_EQ(r.ignored, (std::vector<std::string>{"response_format.json_schema.extra_key"}));
  // strict false is enforced too; the completions endpoint takes it as well.
  EXPECT_TRUE(parse_completion_request(
                  R"({"prompt": "x", "response_format": {"type": "json_schema",
                  "json_schema": {"name": "n", "strict": false, "schema": {"type": "string"}}}})")
                  .grammar);
}

TEST(ApiStructured, GuidedJsonAndGuidedChoice) {
  const GenRequest obj = parse_chat_request(chat_body(
      R"("guided_json": {"type": "object", "properties": {"b": {"type": "null"},
      "a": {"type": "null"}}})"));
  ASSERT_TRUE(obj.grammar);
  EXPECT_EQ(obj.grammar->nodes[obj.grammar->root].props[0].key, "\"b\"");
  const GenRequest text = parse_completion_request(
      R"({"prompt": "x", "guided_json": "{\"type\": \"array\", \"items\": {\"type\": \"integer\"}}"})");
  ASSERT_TRUE(text.grammar);
  EXPECT_EQ(text.grammar->nodes[text.grammar->root].kind, GrammarNode::Kind::Array);
  const GenRequest choice = parse_chat_request(chat_body(R"("guided_choice": ["yes", "no"])"));
  ASSERT_TRUE(choice.grammar);
  EXPECT_FALSE(choice.grammar->json);
  EXPECT_EQ(choice.grammar->nodes[0].texts, (std::vector<std::string>{"no", "yes"}));
  // Null is absent; what the server does not know stays ignored and listed.
  const GenRequest none = parse_chat_request(
      chat_body(R"("guided_json": null, "guided_choice": null, "guided_decoding_backend": "x")"));
  EXPECT_FALSE(none.grammar);
  EXPECT_EQ(none.ignored, (std::vector<std::string>{"guided_decoding_backend"}));
}

TEST(ApiStructured, MistakesAndUnsupportedKeywordsAre400s) {
  const std::string rf = R"("response_format": {"type": "json_schema", "json_schema": )";
  expect_refused(chat_body(rf + R"({"name": "x", "schema": {"type": "object", "properties":
      {"name": {"type": "string", "pattern": "^[A-Z]"}}}}})"),
                 "response_format.json_schema.schema",
                 "'pattern' at #/properties/name/pattern is not supported");
  expect_refused(chat_body(rf + R"({"name": "x", "schema": {"type": "string",
      "format": "email"}}})"),
                 "response_format.json_schema.schema", "'format' at #/format");
  expect_refused(chat_body(rf + R"({"name": "x", "schema": {"$ref": "other.json#/A"}}})"),
                 "response_format.json_schema.schema", "only local references");
  expect_refused(chat_body(rf + R"("City"})"), "response_format.json_schema", "must be an object");
  expect_refused(chat_body(rf + R"({"name": "x"}})"), "response_format.json_schema.schema",
                 "is required");
  expect_refused(chat_body(rf + R"({"schema": []}})"), "response_format.json_schema.schema",
                 "must be an object");
  expect_refused(chat_body(rf + R"({"schema": {}, "strict": "yes"}})"),
                 "response_format.json_schema.strict", "must be a boolean");
  expect_refused(chat_body(rf + R"({"schema": {}, "name": 3}})"),
                 "response_format.json_schema.name", "must be a string");
  expect_refused(chat_body(R"("response_format": {"type": "json_schema"})"),
                 "response_format.json_schema", "is required");
  expect_refused(chat_body(R"("guided_json": {"type": "integer", "minimum": 0})"), "guided_json",
                 "'minimum' at #/minimum");
  expect_refused(chat_body(R"("guided_json": "{not json")"), "guided_json", "not valid JSON");
  expect_refused(chat_body(R"("guided_json": "[1]")"), "guided_json", "must hold a JSON object");
  expect_refused(chat_body(R"("guided_json": 3)"), "guided_json", "as an object or a string");
  expect_refused(chat_body(R"("guided_choice": [])"), "guided_choice", "non-empty array");
  expect_refused(chat_body(R"("guided_choice": "yes")"), "guided_choice", "non-empty array");
  expect_refused(chat_body(R"("guided_choice": ["a", ""])"), "guided_choice[1]",
                 "must be a non-empty string");
  expect_refused(chat_body(R"("guided_choice": ["a", 1])"), "guided_choice[1]",
                 "must be a non-empty string");
  expect_refused(chat_body(R"("guided_regex": "[0-9]+")"), "guided_regex",
                 "'guided_regex' is not supported");
  expect_refused(chat_body(R"("guided_grammar": "root ::= x")"), "guided_grammar",
                 "'guided_grammar' is not supported");
  // Two constraints at once (fields are read in name order).
  expect_refused(chat_body(R"("guided_json": {}, "response_format": {"type": "json_object"})"),
                 "response_format", "'guided_json' and 'response_format' both constrain");
  expect_refused(chat_body(R"("guided_choice": ["a"], "guided_json": {})"), "guided_json",
                 "'guided_choice' and 'guided_json' both constrain");
  expect_refused(chat_body(rf + R"({"schema": {}}}, "guided_choice": ["a"])"), "response_format",
                 "both constrain");
  // response_format text constrains nothing.
  EXPECT_TRUE(parse_chat_request(
                  chat_body(R"("guided_choice": ["a"], "response_format": {"type": "text"})"))
                  .grammar);
}

// --- the server on SmolLM2 ---

std::shared_ptr<const Model> smollm2(const std::string& path) {
  static std::shared_ptr<const Model> model = Model::load(path);
  return model;
}

std::string post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

test::HttpResponse ask(ApiServer& srv, const std::string& path, const std::string& body) {
  test::HttpClient c(srv.port(), 120s);
  c.send(post(path, body));
  return c.read_response();
}

TEST(ApiServerStructured, AnswersValidateAndMistakesAre400s) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  ServerConfig cfg;
  cfg.http.port = 0;
  cfg.model_id = "smollm2";
  cfg.max_tokens = 160;
  cfg.scheduler.parallel = 2;
  cfg.scheduler.session.n_ctx = 512;
  cfg.log_requests = false;
  ApiServer srv(smollm2(path), cfg);
  srv.start();
  const ojson schema = ojson::parse(kCitySchema);

  const test::HttpResponse chat =
      ask(srv, "/v1/chat/completions",
          chat_body(
              R"("temperature": 0, "response_format": {"type": "json_schema", "json_schema":
      {"name": "City", "strict": true, "schema": )" +
              std::string(kCitySchema) + "}}"));
  ASSERT_EQ(chat.status, 200) << chat.body;
  const json answer = json::parse(chat.body);
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop") << chat.body;
  const std::string content = answer["choices"][0]["message"]["content"];
  EXPECT_EQ(test::text_violation(content, schema), "") << content;

  // Completions with guided_json as a string, sampled, two choices: each validates.
  const std::string completion_body =
      R"({"prompt": "A JSON list of three small prime numbers:", "n": 2, "seed": 3,)"
      R"( "temperature": 0.8, "guided_json": "{\"type\": \"array\", \"items\":)"
      R"( {\"type\": \"integer\"}, \"minItems\": 1, \"maxItems\": 3}"})";
  const test::HttpResponse completion = ask(srv, "/v1/completions", completion_body);
  ASSERT_EQ(completion.status, 200) << completion.body;
  const ojson list = ojson::parse(R"({"type": "array", "items": {"type": "integer"},
      "minItems": 1, "maxItems": 3})");
  for (const json& c : json::parse(completion.body)["choices"]) {
    EXPECT_EQ(c["finish_reason"], "stop") << completion.body;
    EXPECT_EQ(test::text_violation(c["text"], list), "") << c["text"];
  }

  const test::HttpResponse choice = ask(srv, "/v1/chat/completions",
                                        R"({"messages": [{"role": "user", "content":
      "Is the sky blue?"}], "temperature": 0, "guided_choice": ["yes", "no", "maybe"]})");
  ASSERT_EQ(choice.status, 200) << choice.body;
  const std::string picked = json::parse(choice.body)["choices"][0]["message"]["content"];
  EXPECT_TRUE(picked == "yes" || picked == "no" || picked == "maybe") << picked;

  // Streamed: the chunks join into the same valid JSON.
  const test::HttpResponse stream =
      ask(srv, "/v1/chat/completions",
          chat_body(R"("temperature": 0, "stream": true, "guided_json": )" +
                    std::string(kCitySchema)));
  ASSERT_EQ(stream.status, 200) << stream.body;
  std::string joined;
  for (size_t at = 0; (at = stream.body.find("data: {", at)) != std::string::npos;) {
    const size_t end = stream.body.find("\n\n", at);
    const json chunk = json::parse(stream.body.substr(at + 6, end - at - 6));
    if (!chunk["choices"].empty() && chunk["choices"][0]["delta"].contains("content")) {
      joined += chunk["choices"][0]["delta"]["content"].get<std::string>();
    }
    at = end;
  }
  EXPECT_EQ(joined, content);  // greedy: the same answer as the json_schema request

  const test::HttpResponse bad =
      ask(srv, "/v1/chat/completions",
          chat_body(
              R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema":
      {"type": "object", "properties": {"id": {"type": "string", "minLength": 3}}}}})"));
  ASSERT_EQ(bad.status, 400) << bad.body;
  const json err = json::parse(bad.body)["error"];
  EXPECT_NE(err["message"].get<std::string>().find("'minLength' at #/properties/id/minLength"),
            std::string::npos)
      << bad.body;

  const test::HttpResponse lossless =
      ask(srv, "/v1/chat/completions", chat_body(R"("guided_choice": ["a"], "fasa":
      {"lossless": 2})"));
  EXPECT_EQ(lossless.status, 400) << lossless.body;
  EXPECT_NE(lossless.body.find("guided_choice"), std::string::npos) << lossless.body;
  srv.stop();
}

}  // namespace
}  // namespace fasa::server
