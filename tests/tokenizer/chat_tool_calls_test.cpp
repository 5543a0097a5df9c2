// Reading tool calls from answers (tokenizer/chat_tool_calls.h): each format's call syntax gives
// calls with compact JSON arguments; malformed or foreign output stays text content; and the
// streaming rule (tool_content_so_far) never releases a byte that the whole answer's reading
// would not put first in its content.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fasa/tokenizer/chat_tool_calls.h"

namespace fasa {
namespace {

ChatTools offered(bool parallel = true) {
  ChatTools t;
  t.tools = {{"get_weather", {}}, {"search", {}}};
  t.parallel = parallel;
  return t;
}

struct Want {
  ToolFormat tf;
  std::string text;
  std::vector<std::string> calls;  // "name arguments"
  const char* content;             // null: none
};

const std::string kW = R"({"name": "get_weather", "arguments": {"city": "Paris", "n": [1, 2]}})";
const std::string kS = R"({"name": "search", "arguments": {"q": "x"}})";
const std::string kBlockW = "<tool_call>\n" + kW + "\n</tool_call>";
const std::string kBlockS = "<tool_call>\n" + kS + "\n</tool_call>";

const std::vector<Want>& cases() {
  static const std::vector<Want> c = {
      {ToolFormat::Hermes, "The weather is fine.", {}, "The weather is fine."},
      {ToolFormat::Hermes, kBlockW, {R"(get_weather {"city":"Paris","n":[1,2]})"}, nullptr},
      {ToolFormat::Hermes,
       "\n" + kBlockW + "\n",
       {R"(get_weather {"city":"Paris","n":[1,2]})"},
       nullptr},
      {ToolFormat::Hermes, "Let me look.\n" + kBlockS, {R"(search {"q":"x"})"}, "Let me look.\n"},
      {ToolFormat::Hermes,
       kBlockW + "\n" + kBlockS,
       {R"(get_weather {"city":"Paris","n":[1,2]})", R"(search {"q":"x"})"},
       nullptr},
      {ToolFormat::Hermes, "<tool_call>\n" + kS, {R"(search {"q":"x"})"}, nullptr},  // no close
      {ToolFormat::Hermes,
       R"(<tool_call>{"name": "search", "arguments": "{\"q\": \"y\"}"}</tool_call>)",
       {R"(search {"q":"y"})"},
       nullptr},  // arguments as a string of JSON
      {ToolFormat::Hermes,
       "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": }\n"
       "</tool_call>",
       {},
       nullptr},  // malformed: all text
      {ToolFormat::Hermes,
       "<tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call>",
       {},
       nullptr},                                                 // not an offered function
      {ToolFormat::Hermes, kBlockS + " and more", {}, nullptr},  // text after the calls
      {ToolFormat::Hermes,
       "<tool_call>\n{\"name\": \"search\", \"arguments\": [1]}</tool_call>",
       {},
       nullptr},  // arguments not an object
      {ToolFormat::Hermes,
       "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": " + std::string(200, '[') +
           std::string(200, ']') + "}}</tool_call>",
       {},
       nullptr},  // nested too deep to be read
      {ToolFormat::Hermes, "I use <tool_call> tags", {}, nullptr},
      {ToolFormat::HermesCoder, kS, {R"(search {"q":"x"})"}, nullptr},  // bare: the whole answer
      {ToolFormat::HermesCoder, "```json\n" + kS + "\n```", {R"(search {"q":"x"})"}, nullptr},
      {ToolFormat::Hermes, "```\n" + kS + "\n```\n", {R"(search {"q":"x"})"}, nullptr},
      {ToolFormat::Hermes, "```json\n" + kS, {}, nullptr},  // the fence not closed
      {ToolFormat::HermesCoder, "{" + kS + "}", {R"(search {"q":"x"})"}, nullptr},
      {ToolFormat::HermesCoder,
       "<tool_call>\n{" + kS + "}\n</tool_call>",
       {R"(search {"q":"x"})"},
       nullptr},
      {ToolFormat::Hermes, "{" + kS + "}", {}, nullptr},  // only Qwen 2.5 Coder's doubles
      {ToolFormat::Hermes, "```python\nprint(1)\n```", {}, nullptr},
      {ToolFormat::Hermes, "Call: " + kS, {}, nullptr},
      {ToolFormat::Hermes,
       "{\"name\": \"search\"} then " + kBlockS,
       {R"(search {"q":"x"})"},
       "{\"name\": \"search\"} then "},
      {ToolFormat::Llama3,
       R"({"name": "search", "parameters": {"q": "x"}})",
       {R"(search {"q":"x"})"},
       nullptr},
      {ToolFormat::Llama3, " " + kS + "\n", {R"(search {"q":"x"})"}, nullptr},
      {ToolFormat::Llama3, R"({"answer": 42})", {}, nullptr},
      {ToolFormat::Llama3, "Sure: " + kS, {}, nullptr},
      {ToolFormat::MistralV3,
       " [" + kS + ", " + kW + "]",
       {R"(search {"q":"x"})", R"(get_weather {"city":"Paris","n":[1,2]})"},
       nullptr},
      {ToolFormat::MistralV3, "[TOOL_CALLS] [" + kS + "]", {R"(search {"q":"x"})"}, nullptr},
      {ToolFormat::MistralV3, "[1, 2, 3]", {}, nullptr},
      {ToolFormat::MistralV3, "No calls today.", {}, nullptr},
      {ToolFormat::Generic, R"({"tool_call": )" + kS + "}", {R"(search {"q":"x"})"}, nullptr},
      {ToolFormat::Generic, R"({"response": "Hello \"you\""})", {}, "Hello \"you\""},
      {ToolFormat::Generic, R"({"response": 3})", {}, nullptr},
      {ToolFormat::Generic,
       R"( { "response" :"a\n\"b\" \u00e9\u4e2d\/ end"})",
       {},
       "a\n\"b\" \xc3\xa9\xe4\xb8\xad/ end"},
      {ToolFormat::Generic, R"({"response": "cut sho)", {}, "cut sho"},  // by the token limit
      {ToolFormat::Generic, R"({"response": "\ud83d\ude00!"})", {}, "\xf0\x9f\x98\x80!"},
      {ToolFormat::Generic, R"({"response": "half \u00)", {}, "half "},
      {ToolFormat::Generic, R"({"tool_call": )" + kS + R"(, "response": "x"})", {}, nullptr},
      {ToolFormat::Generic, "{\"tool_call\": {\"name\": \"search\"", {}, nullptr},  // cut short
  };
  return c;
}

std::vector<std::string> shown(const ParsedAnswer& a) {
  std::vector<std::string> out;
  for (const ParsedToolCall& c : a.calls) out.push_back(c.name + " " + c.arguments);
  return out;
}

TEST(ToolCallParse, EachFormatsSyntaxAndMalformedOutput) {
  for (const Want& w : cases()) {
    SCOPED_TRACE(std::string(tool_format_name(w.tf)) + ": " + w.text);
    const ParsedAnswer a = parse_tool_calls(w.tf, w.text, offered());
    EXPECT_EQ(shown(a), w.calls);
    if (!w.calls.empty()) {
      EXPECT_EQ(a.content.has_value(), w.content != nullptr);
      if (w.content && a.content) {
        EXPECT_EQ(*a.content, w.content);
      }
    } else {  // no calls: the content is the answer's text (or the generic response's)
      ASSERT_TRUE(a.content.has_value());
      EXPECT_EQ(*a.content, w.content ? std::string(w.content) : w.text);
    }
  }
}

TEST(ToolCallParse, ParallelFalseKeepsTheFirstCall) {
  const ParsedAnswer a =
      parse_tool_calls(ToolFormat::Hermes, kBlockW + "\n" + kBlockS, offered(false));
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0].name, "get_weather");
}

// For every prefix of every answer: what the stream may release is a prefix of the final
// content (nothing at all when the answer is calls only), and it only grows.
TEST(ToolCallParse, StreamedContentIsAPrefixOfTheFinalContent) {
  int checked = 0;
  for (const Want& w : cases()) {
    SCOPED_TRACE(std::string(tool_format_name(w.tf)) + ": " + w.text);
    const ParsedAnswer a = parse_tool_calls(w.tf, w.text, offered());
    const std::string final_content = a.content.value_or("");
    size_t last = 0;
    for (size_t n = 0; n <= w.text.size(); ++n) {
      const std::string ready = tool_content_so_far(w.tf, std::string_view(w.text).substr(0, n));
      ASSERT_LE(ready.size(), n);
      ASSERT_GE(ready.size(), last) << "at " << n;
      ASSERT_EQ(final_content.compare(0, ready.size(), ready), 0) << "at " << n << ": " << ready;
      last = ready.size();
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace fasa
