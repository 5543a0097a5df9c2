// Tools in chat requests (server/api_tools.h): tools, tool_choice and parallel_tool_calls are
// parsed (each function's parameters compiled, the tool's keys in the body's order), the tool
// history is taken (tool messages, assistant calls with null content), every mistake is a 400
// naming its field; and answers with calls render as OpenAI's message and stream deltas
// (server/tool_answer.h) that join into the same calls.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "fasa/server/api.h"
#include "fasa/server/tool_answer.h"

namespace fasa::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const char* kWeather = R"({"type": "function", "function": {"name": "get_weather",
    "description": "Weather now.", "parameters": {"type": "object", "properties":
    {"unit": {"enum": ["c", "f"]}, "city": {"type": "string"}}, "required": ["city"]}}})";

std::string body(const std::string& extra,
                 const std::string& messages = R"([{"role": "user", "content": "hi"}])") {
  return R"({"messages": )" + messages + (extra.empty() ? "" : ", " + extra) + "}";
}

void expect_refused(const std::string& b, const std::string& param, const std::string& needle) {
  SCOPED_TRACE(b);
  try {
    parse_chat_request(b);
    ADD_FAILURE() << "accepted; wanted '" << needle << "'";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << e.what();
    EXPECT_EQ(e.param, param) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ApiTools, ToolsAndToolChoiceAreParsed) {
  const GenRequest r = parse_chat_request(body(std::string(R"("tools": [)") + kWeather +
                                               R"(, {"type": "function", "cache_control": {},
      "function": {"name": "now", "x-extra": 1}}], "parallel_tool_calls": false)"));
  ASSERT_EQ(r.tools.tools.size(), 2u);
  EXPECT_EQ(r.tools.tools[0].name, "get_weather");
  EXPECT_EQ(r.tools.tools[1].name, "now");
  EXPECT_EQ(r.tools.choice, ToolChoice::Auto);  // the default with tools
  EXPECT_FALSE(r.tools.parallel);
  EXPECT_TRUE(r.tools.offered());
  // The tool as given, keys in the body's order ("unit" before "city").
  EXPECT_EQ(r.tools.tools[0].spec["function"]["parameters"]["properties"].begin().key(), "unit");
  ASSERT_EQ(r.tool_functions.size(), 2u);
  const GrammarNode& root = r.tool_functions[0].params->nodes[r.tool_functions[0].params->root];
  ASSERT_EQ(root.kind, GrammarNode::Kind::Object);
  EXPECT_EQ(root.props[0].key, "\"unit\"");
  // No parameters: an object with no properties, {}.
  const GrammarNode& none = r.tool_functions[1].params->nodes[r.tool_functions[1].params->root];
  EXPECT_EQ(none.kind, GrammarNode::Kind::Object);
  EXPECT_TRUE(none.props.empty());
  EXPECT_EQ(r.ignored,
            (std::vector<std::string>{"tools[1].cache_control", "tools[1].function.x-extra"}));

  const std::string tools = std::string(R"("tools": [)") + kWeather + "]";
  EXPECT_EQ(parse_chat_request(body(tools + R"(, "tool_choice": "none")")).tools.choice,
            ToolChoice::None);
  EXPECT_FALSE(parse_chat_request(body(tools + R"(, "tool_choice": "none")")).tools.offered());
  EXPECT_EQ(parse_chat_request(body(tools + R"(, "tool_choice": "required")")).tools.choice,
            ToolChoice::Required);
  const GenRequest named = parse_chat_request(body(
      tools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})"));
  EXPECT_EQ(named.tools.choice, ToolChoice::Named);
  EXPECT_EQ(named.tools.named, "get_weather");
  // Null is absent; no tools with "auto" or "none" is a plain chat; empty functions are nothing.
  const GenRequest plain = parse_chat_request(
      body(R"("tools": null, "tool_choice": "auto", "functions": [], "function_call": "none")"));
  EXPECT_FALSE(plain.tools.offered());
  EXPECT_TRUE(plain.ignored.empty());
  // tool_choice none leaves response_format free.
  EXPECT_TRUE(parse_chat_request(body(tools + R"(, "tool_choice": "none", "response_format":
      {"type": "json_object"})"))
                  .json_object);
}

TEST(ApiTools, ToolHistoryIsTaken) {
  const GenRequest r = parse_chat_request(body("", R"([
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "22"},
       {"type": "text", "text": " C"}]},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "function":
       {"name": "f", "arguments": {"a": 1}}, "index": 0}]},
      {"role": "tool", "tool_call_id": "c2", "content": "ok", "name": "f"},
      {"role": "assistant", "content": "It is 22 C.", "tool_calls": []}])"));
  ASSERT_EQ(r.messages.size(), 6u);
  EXPECT_EQ(r.messages[1].content, "");
  ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].tool_calls[0].id, "call_1");
  EXPECT_EQ(r.messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
  EXPECT_EQ(r.messages[2].content, "22 C");
  EXPECT_EQ(r.messages[3].tool_calls[0].arguments, "{\"a\":1}");  // an object, taken as its text
  EXPECT_TRUE(r.messages[5].tool_calls.empty());
  EXPECT_EQ(r.ignored, (std::vector<std::string>{"messages[3].tool_calls[0].index"}));
}

TEST(ApiTools, MistakesAre400sNamingTheField) {
  const std::string w = kWeather;
  const auto tools = [](const std::string& list) { return body(R"("tools": )" + list); };
  expect_refused(tools("{}"), "tools",
                 "'tools' must be an array of at most 128 tools (got an object)");
  std::string many = "[";
  for (int i = 0; i < 129; ++i) {
    many += (i ? "," : "") + std::string(R"({"type": "function", "function": {"name": "f)") +
            std::to_string(i) + R"("}})";
  }
  expect_refused(tools(many + "]"), "tools", "(got 129 tools)");
  expect_refused(tools("[3]"), "tools[0]", "'tools[0]' must be an object");
  expect_refused(tools(R"([{"function": {"name": "f"}}])"), "tools[0].type", "is required");
  expect_refused(tools(R"([{"type": "code_interpreter"}])"), "tools[0].type",
                 "must be 'function' (got 'code_interpreter'): only function tools");
  expect_refused(tools(R"([{"type": "function"}])"), "tools[0].function", "is required");
  expect_refused(tools(R"([{"type": "function", "function": "f"}])"), "tools[0].function",
                 "must be an object");
  expect_refused(tools(R"([{"type": "function", "function": {}}])"), "tools[0].function.name",
                 "is required");
  expect_refused(tools(R"([{"type": "function", "function": {"name": "get weather"}}])"),
                 "tools[0].function.name", "must be 1 to 64 of a-z, A-Z, 0-9, '_' and '-'");
  expect_refused(tools(R"([{"type": "function", "function": {"name": ")" + std::string(65, 'a') +
                       R"("}}])"),
                 "tools[0].function.name", "must be 1 to 64");
  expect_refused(tools("[" + w + ", " + w + "]"), "tools[1].function.name",
                 "function 'get_weather' is defined twice");
  expect_refused(tools(R"([{"type": "function", "function": {"name": "f", "description": 1}}])"),
                 "tools[0].function.description", "must be a string");
  expect_refused(tools(R"([{"type": "function", "function": {"name": "f", "strict": "yes"}}])"),
                 "tools[0].function.strict", "must be a boolean");
  expect_refused(tools(R"([{"type": "function", "function": {"name": "f", "parameters": []}}])"),
                 "tools[0].function.parameters", "must be a JSON schema object");
  expect_refused(tools(R"([{"type": "function", "function": {"name": "f", "parameters":
      {"type": "string"}}}])"),
                 "tools[0].function.parameters", "must describe an object");
  expect_refused(tools(R"([{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"code": {"type": "string", "pattern": "^a"}}}}}])"),
                 "tools[0].function.parameters",
                 "'pattern' at #/properties/code/pattern is not supported");
  std::string deep =
      R"({"type": "object", "default": )" + std::string(400, '[') + std::string(400, ']') + "}";
  expect_refused(tools(R"([{"type": "function", "function": {"name": "f", "parameters": )" + deep +
                       "}}]"),
                 "tools[0]", "deeper than 300 levels");

  const std::string t = R"("tools": [)" + w + "]";
  expect_refused(body(t + R"(, "tool_choice": "maybe")"), "tool_choice",
                 "'tool_choice' must be 'none', 'auto', 'required' or {\"type\": \"function\"");
  expect_refused(body(t + R"(, "tool_choice": 3)"), "tool_choice", "(got 3)");
  expect_refused(body(t + R"(, "tool_choice": {"type": "allowed_tools"})"), "tool_choice",
                 "(got type 'allowed_tools')");
  expect_refused(body(t + R"(, "tool_choice": {"type": "function"})"), "tool_choice.function",
                 "must be an object {\"name\": ...}");
  expect_refused(body(t + R"(, "tool_choice": {"type": "function", "function": {}})"),
                 "tool_choice.function.name", "is required");
  expect_refused(body(t + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}})"),
                 "tool_choice", "names function 'g', which 'tools' does not define");
  expect_refused(body(R"("tool_choice": "required")"), "tool_choice", "'required' needs 'tools'");
  expect_refused(body(t + R"(, "parallel_tool_calls": "yes")"), "parallel_tool_calls",
                 "must be a boolean");
  expect_refused(body(t + R"(, "response_format": {"type": "json_object"})"), "response_format",
                 "'tools' and 'response_format' both constrain the answer");
  expect_refused(body(R"("guided_choice": ["a"], )" + t), "guided_choice", "both constrain");
  expect_refused(body(R"("functions": [{"name": "f"}])"), "functions",
                 "'functions' (OpenAI's deprecated function calling) is not supported: send "
                 "'tools'");
  expect_refused(body(R"("function_call": {"name": "f"})"), "function_call", "send 'tools'");

  const auto msgs = [](const std::string& m) {
    return body("", R"([{"role": "user", "content": "hi"}, )" + m + "]");
  };
  expect_refused(msgs(R"({"role": "tool", "content": "22"})"), "messages[1].tool_call_id",
                 "is required in a tool message");
  expect_refused(msgs(R"({"role": "tool", "tool_call_id": 1, "content": "22"})"),
                 "messages[1].tool_call_id", "must be a string");
  expect_refused(msgs(R"({"role": "tool", "tool_call_id": "c"})"), "messages[1].content",
                 "is required");
  expect_refused(msgs(R"({"role": "user", "content": "x", "tool_calls": [{"id": "c",
      "function": {"name": "f", "arguments": "{}"}}]})"),
                 "messages[1].tool_calls", "only for assistant messages (got role 'user')");
  expect_refused(msgs(R"({"role": "assistant", "tool_calls": {}})"), "messages[1].tool_calls",
                 "must be an array of tool calls");
  expect_refused(msgs(R"({"role": "assistant", "tool_calls": [1]})"), "messages[1].tool_calls[0]",
                 "must be an object");
  expect_refused(msgs(R"({"role": "assistant", "tool_calls": [{"function": {"name": "f",
      "arguments": "{}"}}]})"),
                 "messages[1].tool_calls[0].id", "is required");
  expect_refused(msgs(R"({"role": "assistant", "tool_calls": [{"id": "c", "type": "web",
      "function": {"name": "f", "arguments": "{}"}}]})"),
                 "messages[1].tool_calls[0].type", "must be 'function'");
  expect_refused(msgs(R"({"role": "assistant", "tool_calls": [{"id": "c"}]})"),
                 "messages[1].tool_calls[0].function", "must be an object");
  expect_refused(msgs(R"({"role": "assistant", "tool_calls": [{"id": "c", "function":
      {"arguments": "{}"}}]})"),
                 "messages[1].tool_calls[0].function.name", "is required");
  expect_refused(msgs(R"({"role": "assistant", "tool_calls": [{"id": "c", "function":
      {"name": "f"}}]})"),
                 "messages[1].tool_calls[0].function.arguments", "is required");
  expect_refused(msgs(R"({"role": "assistant", "tool_calls": [{"id": "c", "function":
      {"name": "f", "arguments": "{city"}}]})"),
                 "messages[1].tool_calls[0].function.arguments", "is not valid JSON text");
  expect_refused(msgs(R"({"role": "assistant", "tool_calls": [{"id": "c", "function":
      {"name": "f", "arguments": 3}}]})"),
                 "messages[1].tool_calls[0].function.arguments", "must be a string of JSON");
  expect_refused(msgs(R"({"role": "assistant", "content": null})"), "messages[1].content",
                 "is required");
  expect_refused(msgs(R"({"role": "assistant", "content": null, "function_call": {"name": "f",
      "arguments": "{}"}})"),
                 "messages[1].function_call", "send 'tools'");
}

ChatTools weather_tools() {
  ChatTools t;
  t.tools.push_back({"get_weather", ojson::parse(kWeather)});
  return t;
}

GenOutcome outcome(const std::string& text) {
  GenOutcome o;
  o.id = "chatcmpl-1";
  o.model = "m";
  o.text = text;
  o.finish_reason = "stop";
  return o;
}

TEST(ApiTools, CallsRenderAsOpenAIsMessage) {
  const ChatTools tools = weather_tools();
  GenOutcome o = outcome(R"(<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris"}}
</tool_call>)");
  read_tool_calls(ToolFormat::Hermes, tools, o);
  const json j = json::parse(render_chat_completion(o));
  const json& choice = j["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["id"].get<std::string>().size(), 29u);
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(call["function"]["arguments"], R"({"city":"Paris"})");
  // Text before the call is the content; a malformed call leaves all of it text.
  GenOutcome before = outcome(
      "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Rome\"}}\n</tool_call>");
  read_tool_calls(ToolFormat::Hermes, tools, before);
  EXPECT_EQ(json::parse(render_chat_completion(before))["choices"][0]["message"]["content"],
            "Checking.\n");
  GenOutcome broken = outcome("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci");
  read_tool_calls(ToolFormat::Hermes, tools, broken);
  const json b = json::parse(render_chat_completion(broken))["choices"][0];
  EXPECT_EQ(b["message"]["content"], broken.text);
  EXPECT_FALSE(b["message"].contains("tool_calls"));
  EXPECT_EQ(b["finish_reason"], "stop");
  // Mistral's ids are 9 letters and digits (its template requires them).
  EXPECT_EQ(tool_call_id(ToolFormat::MistralV3).size(), 9u);
}

// The deltas of a streamed answer, fed in pieces of `step` bytes, joined: content and calls.
struct Joined {
  std::string content;
  json calls = json::array();
  std::string finish;
};

Joined stream(ToolFormat tf, const ChatTools& tools, const std::string& text, size_t step) {
  ToolCallStream s(tf, tools);
  GenOutcome o = outcome("");
  Joined j;
  std::string sse;
  for (size_t at = 0; at < text.size(); at += step) {
    const std::string c = s.push(text.substr(at, step));
    if (!c.empty())
      sse += "data: " + json{{"choices", {{{"delta", {{"content", c}}}}}}}.dump() + "\n\n";
  }
  sse += s.finish(o);
  j.finish = o.finish_reason;
  for (size_t at = 0; (at = sse.find("data: ", at)) != std::string::npos;) {
    const size_t end = sse.find("\n\n", at);
    const json d = json::parse(sse.substr(at + 6, end - at - 6))["choices"][0]["delta"];
    if (d.contains("content")) j.content += d["content"].get<std::string>();
    for (const json& c : d.value("tool_calls", json::array())) {
      const size_t i = c["index"];
      if (i == j.calls.size()) {  // the first chunk of a call: id, type, name, arguments ""
        EXPECT_EQ(c["function"]["arguments"], "");
        j.calls.push_back({{"id", c["id"]}, {"name", c["function"]["name"]}, {"arguments", ""}});
      } else {
        EXPECT_FALSE(c.contains("id"));
        j.calls[i]["arguments"] = j.calls[i]["arguments"].get<std::string>() +
                                  c["function"]["arguments"].get<std::string>();
      }
    }
    at = end;
  }
  return j;
}

TEST(ApiTools, StreamedDeltasJoinIntoTheSameAnswer) {
  ChatTools tools = weather_tools();
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  for (const std::string& text :
       {call, "Let me check.\n" + call + "\n" + call, std::string("Sunny <tool_ today."),
        std::string("<tool_call>\n{\"name\": \"nope\"}"), std::string("plain text")}) {
    for (size_t step : {1u, 3u, 1000u}) {
      SCOPED_TRACE(text + " step " + std::to_string(step));
      GenOutcome whole = outcome(text);
      read_tool_calls(ToolFormat::Hermes, tools, whole);
      const Joined j = stream(ToolFormat::Hermes, tools, text, step);
      EXPECT_EQ(j.content, whole.text);
      ASSERT_EQ(j.calls.size(), whole.tool_calls.size());
      for (size_t i = 0; i < j.calls.size(); ++i) {
        EXPECT_EQ(j.calls[i]["name"], whole.tool_calls[i].name);
        EXPECT_EQ(j.calls[i]["arguments"], whole.tool_calls[i].arguments);
      }
      EXPECT_EQ(j.finish, whole.finish_reason);
      if (!whole.tool_calls.empty()) {
        EXPECT_EQ(j.content.find("<tool"), std::string::npos);
      }
    }
  }
  // The generic format's response text is the content, sent as it comes; its JSON never shows.
  ToolCallStream live(ToolFormat::Generic, tools);
  EXPECT_EQ(live.push("{\"respon"), "");
  EXPECT_EQ(live.push("se\": \"Hel"), "Hel");
  EXPECT_EQ(live.push("lo\\"), "lo");  // an escape not yet whole waits
  EXPECT_EQ(live.push("n!"), "\n!");
  const Joined g = stream(ToolFormat::Generic, tools, R"({"response": "Hi \"there\""})", 2);
  EXPECT_EQ(g.content, "Hi \"there\"");
  EXPECT_TRUE(g.calls.empty());
  EXPECT_EQ(g.finish, "stop");
}

}  // namespace
}  // namespace fasa::server
