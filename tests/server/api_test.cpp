// The OpenAI-compatible request parsing and response rendering (server/api).
#include <gtest/gtest.h>

#include <algorithm>

#include <functional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fasa/engine/sampler.h"
#include "fasa/server/api.h"

namespace fasa::server {
namespace {

using json = nlohmann::json;

// Expects `fn` to throw ApiError 400 with exactly `param` and a message containing `needle`.
void expect_api_error(const std::function<void()>& fn, const std::string& param,
                      const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; wanted '" << needle << "' for param '" << param << "'";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << e.what();
    EXPECT_EQ(e.param, param) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// A minimal valid body of the endpoint with `extra` (a JSON object text) merged over it.
std::string with(Endpoint ep, const std::string& extra) {
  json body = ep == Endpoint::Chat ? json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}}
                                   : json{{"prompt", "hi"}};
  body.update(json::parse(extra));
  return body.dump();
}

GenRequest parse(Endpoint ep, const std::string& body) {
  return ep == Endpoint::Chat ? parse_chat_request(body) : parse_completion_request(body);
}

// Both endpoints reject `extra` the same way.
void expect_bad(const std::string& extra, const std::string& param, const std::string& needle) {
  for (Endpoint ep : {Endpoint::Completions, Endpoint::Chat}) {
    SCOPED_TRACE(ep == Endpoint::Chat ? "chat: " + extra : "completions: " + extra);
    expect_api_error([&] { parse(ep, with(ep, extra)); }, param, needle);
  }
}

// --- parsing: accepted requests ---

TEST(ApiParse, CompletionWithEveryFieldIsParsed) {
  const GenRequest r = parse_completion_request(R"({
    "model": "smollm2", "prompt": "Once upon", "max_tokens": 32, "temperature": 0.5,
    "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 7, "stop": ["\n", "END"],
    "stream": true, "stream_options": {"include_usage": true}, "n": 1, "user": "u1",
    "presence_penalty": 0, "frequency_penalty": 0.0, "logprobs": 0, "echo": false,
    "logit_bias": {}, "suffix": null, "best_of": 1,
    "fasa": {"policy": "fasa", "budget": 256}})");
  EXPECT_EQ(r.endpoint, Endpoint::Completions);
  EXPECT_EQ(r.model, "smollm2");
  EXPECT_EQ(r.prompt, "Once upon");
  EXPECT_TRUE(r.messages.empty());
  EXPECT_EQ(r.max_tokens, 32);
  EXPECT_FLOAT_EQ(r.sampler.temp, 0.5f);
  EXPECT_FLOAT_EQ(r.sampler.top_p, 0.9f);
  EXPECT_EQ(r.sampler.top_k, 40);
  EXPECT_FLOAT_EQ(r.sampler.min_p, 0.05f);
  ASSERT_TRUE(r.seed.has_value());
  EXPECT_EQ(*r.seed, 7u);
  EXPECT_EQ(r.sampler.seed, 7u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.fasa.policy, "fasa");
  EXPECT_EQ(r.fasa.options, (PolicyOptions{{"budget", "256"}}));
}

TEST(ApiParse, ChatWithEveryFieldIsParsed) {
  const GenRequest r = parse_chat_request(R"({
    "model": "m", "messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}], "name": "ann"},
      {"role": "assistant", "content": "Hi."},
      {"role": "system", "content": ""}],
    "max_tokens": 16, "max_completion_tokens": 16, "temperature": 0, "top_p": 1, "top_k": 0,
    "min_p": 0, "seed": -1, "stop": "###", "stream": false, "n": 1, "user": "u",
    "presence_penalty": 0, "frequency_penalty": 0, "logprobs": false, "top_logprobs": null,
    "logit_bias": null, "tools": null, "tool_choice": null, "response_format": null,
    "parallel_tool_calls": null, "stream_options": null, "fasa": {"policy": "quest:page=16"}})");
  EXPECT_EQ(r.endpoint, Endpoint::Chat);
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");  // developer is taken as system
  EXPECT_EQ(r.messages[0].content, "Be brief.");
  EXPECT_EQ(r.messages[1].role, "user");
  EXPECT_EQ(r.messages[1].content, "Hello, world");  // text parts concatenated
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[3].content, "");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_FLOAT_EQ(r.sampler.temp, 0.0f);
  ASSERT_TRUE(r.seed.has_value());
  EXPECT_EQ(*r.seed, ~uint64_t{0});  // -1 as 64 bits
  EXPECT_EQ(r.stop, std::vector<std::string>{"###"});
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_EQ(r.fasa.policy, "quest:page=16");
  EXPECT_TRUE(r.fasa.options.empty());
}

TEST(ApiParse, AbsentFieldsGetOpenAiDefaults) {
  for (Endpoint ep : {Endpoint::Completions, Endpoint::Chat}) {
    const GenRequest r = parse(ep, with(ep, "{}"));
    EXPECT_EQ(r.model, "");
    EXPECT_EQ(r.max_tokens, -1);
    EXPECT_FLOAT_EQ(r.sampler.temp, 1.0f);
    EXPECT_FLOAT_EQ(r.sampler.top_p, 1.0f);
    EXPECT_EQ(r.sampler.top_k, 0);
    EXPECT_FLOAT_EQ(r.sampler.min_p, 0.0f);
    EXPECT_FALSE(r.seed.has_value());
    EXPECT_TRUE(r.stop.empty());
    EXPECT_FALSE(r.stream);
    EXPECT_FALSE(r.include_usage);
    EXPECT_FALSE(r.fasa.given());
  }
}

TEST(ApiParse, AcceptedSamplerValuesBuildASampler) {
  for (const char* extra :
       {"{}", R"({"temperature": 2, "top_p": 1e-30, "min_p": 0.999, "top_k": 2147483647})",
        R"({"temperature": 0, "top_p": 1, "min_p": 0, "top_k": 0})"}) {
    SCOPED_TRACE(extra);
    const GenRequest r = parse_completion_request(with(Endpoint::Completions, extra));
    EXPECT_NO_THROW(r.sampler.validate());
  }
}

TEST(ApiParse, NullIsAbsent) {
  const char* nulls = R"({"model": null, "max_tokens": null, "temperature": null,
    "top_p": null, "top_k": null, "min_p": null, "seed": null, "stop": null, "stream": null,
    "stream_options": null, "n": null, "user": null, "presence_penalty": null,
    "frequency_penalty": null, "logprobs": null, "logit_bias": null, "fasa": null})";
  for (Endpoint ep : {Endpoint::Completions, Endpoint::Chat}) {
    const GenRequest r = parse(ep, with(ep, nulls));
    EXPECT_EQ(r.max_tokens, -1);
    EXPECT_FLOAT_EQ(r.sampler.temp, 1.0f);
    EXPECT_FALSE(r.seed.has_value());
    EXPECT_FALSE(r.fasa.given());
  }
  const GenRequest c =
      parse_completion_request(R"({"prompt": "p", "echo": null, "suffix": null, "best_of": null})");
  EXPECT_EQ(c.prompt, "p");
  const GenRequest s = parse_chat_request(
      with(Endpoint::Chat,
           R"({"max_completion_tokens": null, "top_logprobs": null, "tools": null,
          "tool_choice": null, "response_format": null, "parallel_tool_calls": null,
          "fasa": {"policy": null, "budget": 64}})"));
  EXPECT_EQ(s.fasa.policy, "");
  EXPECT_EQ(s.fasa.options, (PolicyOptions{{"budget", "64"}}));
  // A message's optional name may be null too.
  EXPECT_EQ(parse_chat_request(R"({"messages": [{"role": "user", "content": "x", "name": null}]})")
                .messages[0]
                .content,
            "x");
}

TEST(ApiParse, PromptIsStringsOrTokenIds) {
  EXPECT_EQ(parse_completion_request(R"({"prompt": ["only one"]})").prompt, "only one");
  EXPECT_EQ(parse_completion_request(R"({"prompt": ""})").prompt, "");  // the server decides
  EXPECT_EQ(parse_completion_request(R"({"prompt": [1, 2, 3]})").prompt_ids,
            (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_completion_request(R"({"prompt": [[1, 2]]})").prompt_ids,
            (std::vector<int32_t>{1, 2}));
  // Several prompts: api_fields_test.cpp.
  EXPECT_EQ(parse_completion_request(R"({"prompt": ["a", "b"]})").prompts.size(), 2u);
  for (const char* p : {R"([])", R"([1, "a"])", R"([1.5])", R"([-1])", R"([2147483648])", R"(5)",
                        R"({"text": "x"})", R"([null])"}) {
    SCOPED_TRACE(p);
    expect_api_error([&] { parse_completion_request(std::string(R"({"prompt": )") + p + "}"); },
                     "prompt", "must be a string, an array of token ids");
  }
  expect_api_error([] { parse_completion_request(R"({"prompt": [[]]})"); }, "prompt[0]",
                   "must be a non-empty array of token ids");
  expect_api_error([] { parse_completion_request(R"({"model": "m"})"); }, "prompt",
                   "'prompt' is required");
  expect_api_error([] { parse_completion_request(R"({"prompt": null})"); }, "prompt",
                   "'prompt' is required");
}

// --- parsing: rejected requests ---

TEST(ApiParse, BodyMustBeAJsonObject) {
  expect_api_error([] { parse_completion_request(R"({"prompt": "x",})"); }, "",
                   "not valid JSON (at byte 16)");  // the 1-based offset of the "}"
  expect_api_error([] { parse_chat_request(""); }, "", "not valid JSON (at byte 1)");
  expect_api_error([] { parse_completion_request(R"(["prompt"])"); }, "", "must be a JSON object");
  expect_api_error([] { parse_chat_request(R"("hi")"); }, "", "must be a JSON object");
  expect_api_error([] { parse_completion_request("null"); }, "", "must be a JSON object");
  expect_api_error([] { parse_completion_request(R"({"prompt": "x"} trailing)"); }, "",
                   "not valid JSON");
  expect_api_error([] { parse_completion_request(R"({"prompt": "x", "temperature": 1e999})"); }, "",
                   "not valid JSON: number overflow parsing '1e999'");
  // Invalid UTF-8 inside a string is a parse error, and the message quoting it is valid UTF-8.
  try {
    parse_completion_request("{\"prompt\": \"a\xff\"}");
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(std::string(e.what()).find("not valid JSON (at byte"), std::string::npos);
    EXPECT_NO_THROW((void)json(e.what()).dump()) << "message is not valid UTF-8";
  }
}

TEST(ApiParse, DeeplyNestedBodiesAreRefusedWithoutCrashing) {
  const int depth = 200000;
  const std::string arrays = std::string(depth, '[') + std::string(depth, ']');
  expect_api_error([&] { parse_completion_request(arrays); }, "", "must be a JSON object");
  expect_api_error([&] { parse_completion_request(R"({"prompt": )" + arrays + "}"); }, "prompt[0]",
                   "must be a non-empty array of token ids");
  expect_api_error(
      [&] { parse_completion_request(R"({"prompt": "x", "fasa": {"k": )" + arrays + "}}"); },
      "fasa.k", "got an array");
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ApiParse, UnknownFieldsAreIgnoredAndListed) {
  const GenRequest r = parse_completion_request(
      with(Endpoint::Completions,
           R"({"foo": 1, "Temperature": 1, "functions": [], "messages": [], "tools": [1],
          "max_completion_tokens": 5, "stream": true,
          "stream_options": {"include_usage": true, "continuous_usage": true}})"));
  EXPECT_EQ(sorted(r.ignored),
            sorted({"foo", "Temperature", "functions", "messages", "tools", "max_completion_tokens",
                    "stream_options.continuous_usage"}));
  EXPECT_EQ(r.max_tokens, -1);  // another endpoint's field changes nothing here
  EXPECT_TRUE(r.include_usage);
  // Chat: the completions fields and unknown keys in messages and content parts ("echo" is
  // vLLM's chat field: api_fields_test.cpp; tools and tool_calls: null are known:
  // api_tools_test.cpp).
  const GenRequest c = parse_chat_request(R"({"messages": [
      {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {}}],
       "tool_calls": null, "refusal": null}],
      "prompt": 1, "suffix": 1, "best_of": 1, "tools": [], "tool_choice": "none",
      "parallel_tool_calls": false, "metadata": {"a": 1}})");
  EXPECT_EQ(sorted(c.ignored),
            sorted({"messages[0].content[0].cache_control", "messages[0].refusal", "prompt",
                    "suffix", "best_of", "metadata"}));
  EXPECT_EQ(c.messages[0].content, "hi");
  EXPECT_TRUE(parse_chat_request(with(Endpoint::Chat, "{}")).ignored.empty());
}

struct BadCase {
  const char* extra;  // merged over a valid body
  const char* param;
  const char* needle;  // in the message
};

TEST(ApiParse, LosslessIsAFasaOption) {
  for (Endpoint ep : {Endpoint::Completions, Endpoint::Chat}) {
    EXPECT_EQ(parse(ep, with(ep, R"({"fasa": {"lossless": 4}})")).lossless.k, 4);
    const GenRequest a = parse(ep, with(ep, R"({"fasa": {"lossless": "auto", "budget": 64}})"));
    EXPECT_TRUE(a.lossless.adaptive);
    EXPECT_EQ(a.fasa.options, (PolicyOptions{{"budget", "64"}}));  // not a policy option
    EXPECT_EQ(parse(ep, with(ep, R"({"fasa": {"lossless": "off"}})")).lossless.k, 0);
    EXPECT_EQ(parse(ep, with(ep, R"({})")).lossless.k, 0);
  }
  for (const char* bad : {R"({"fasa": {"lossless": 15}})", R"({"fasa": {"lossless": 0.5}})",
                          R"({"fasa": {"lossless": true}})", R"({"fasa": {"lossless": "x"}})"}) {
    expect_bad(bad, "fasa.lossless", "'fasa.lossless' must be \"off\", \"auto\" or a number");
  }
}

TEST(ApiParse, BadValuesNameTheField) {
  const BadCase cases[] = {
      {R"({"model": 5})", "model", "'model' must be a string (got 5)"},
      {R"({"max_tokens": -1})", "max_tokens",
       "'max_tokens' must be an integer in [0, 1048576] (got -1)"},
      {R"({"max_tokens": 1048577})", "max_tokens", "in [0, 1048576]"},
      {R"({"max_tokens": 2.0})", "max_tokens", "must be an integer"},
      {R"({"max_tokens": "16"})", "max_tokens", "(got '16')"},
      {R"({"max_tokens": 18446744073709551615})", "max_tokens", "must be an integer"},
      {R"({"temperature": 3})", "temperature", "'temperature' must be a number in [0, 2] (got 3)"},
      {R"({"temperature": -0.1})", "temperature", "in [0, 2] (got -0.1)"},
      {R"({"temperature": "hot"})", "temperature", "must be a number in [0, 2] (got 'hot')"},
      {R"({"top_p": 0})", "top_p", "'top_p' must be a number in (0, 1] (got 0)"},
      {R"({"top_p": 1.5})", "top_p", "in (0, 1]"},
      {R"({"top_k": -1})", "top_k", "'top_k' must be an integer in [0, 2147483647] (got -1)"},
      {R"({"top_k": 4.5})", "top_k", "must be an integer"},
      {R"({"top_k": 3000000000})", "top_k", "in [0, 2147483647] (got 3000000000)"},
      {R"({"top_p": 1e-300})", "top_p", "in (0, 1] (got 1e-300)"},  // 0 as a float
      {R"({"min_p": 1.01})", "min_p", "'min_p' must be a number in [0, 1) (got 1.01)"},
      {R"({"min_p": 1})", "min_p", "in [0, 1) (got 1)"},  // the sampler refuses 1
      {R"({"min_p": -0.5})", "min_p", "in [0, 1)"},
      {R"({"seed": 1.5})", "seed", "'seed' must be an integer (got 1.5)"},
      {R"({"seed": "7"})", "seed", "must be an integer"},
      {R"({"stream": "yes"})", "stream", "'stream' must be a boolean (got 'yes')"},
      {R"({"stream": 1})", "stream", "must be a boolean"},
      {R"({"user": 1})", "user", "'user' must be a string"},
      {R"({"fasa": "quest"})", "fasa", "'fasa' must be an object"},
      {R"({"stream_options": true, "stream": true})", "stream_options", "must be an object"},
  };
  for (const BadCase& c : cases) expect_bad(c.extra, c.param, c.needle);
}

TEST(ApiParse, SamplingControlsOfOtherServers) {
  const GenRequest r = parse_completion_request(with(Endpoint::Completions, R"({
      "n": 3, "best_of": 3, "presence_penalty": 0.5, "frequency_penalty": -1,
      "repetition_penalty": 1.3, "logit_bias": {"50": -100, "7": 2.5}, "logprobs": 5,
      "echo": true, "suffix": "", "response_format": {"type": "json_object"}})"));
  EXPECT_EQ(r.n, 3);
  EXPECT_FLOAT_EQ(r.rules.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.rules.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(r.rules.repetition_penalty, 1.3f);
  EXPECT_EQ(r.rules.bias, (std::vector<std::pair<int32_t, float>>{{50, -100.0f}, {7, 2.5f}}));
  EXPECT_EQ(r.logprobs, 5);
  EXPECT_TRUE(r.echo);
  EXPECT_TRUE(r.json_object);
  EXPECT_TRUE(r.ignored.empty());
  // Chat: logprobs is a boolean, top_logprobs the count.
  EXPECT_EQ(parse_chat_request(with(Endpoint::Chat, R"({"logprobs": true, "top_logprobs": 4})"))
                .logprobs,
            4);
  EXPECT_EQ(parse_chat_request(with(Endpoint::Chat, R"({"logprobs": true})")).logprobs, 0);
  EXPECT_EQ(parse_chat_request(with(Endpoint::Chat, R"({"logprobs": false})")).logprobs, -1);
  EXPECT_FALSE(parse_chat_request(with(Endpoint::Chat, R"({"response_format": {"type": "text"}})"))
                   .json_object);
  // Prompts as token ids (lm-eval, vLLM clients).
  const GenRequest ids = parse_completion_request(R"({"prompt": [1, 2, 3]})");
  EXPECT_TRUE(ids.prompt_is_ids);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_completion_request(R"({"prompt": [[4, 5]]})").prompt_ids,
            (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(parse_completion_request(R"({"prompt": ["a"]})").prompt, "a");
  // Echo only: max_tokens 0 scores the prompt.
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "echo": true, "max_tokens": 0})")
                .max_tokens,
            0);
}

TEST(ApiParse, WhatCannotBeHonouredIsRefused) {
  const BadCase cases[] = {
      {R"({"n": 9})", "n", "'n' must be an integer in [1, 8] (got 9)"},
      {R"({"n": true})", "n", "must be an integer"},
      {R"({"presence_penalty": 2.5})", "presence_penalty", "in [-2, 2]"},
      {R"({"frequency_penalty": "0"})", "frequency_penalty", "must be a number"},
      {R"({"repetition_penalty": 0})", "repetition_penalty", "in (0, 10]"},
      {R"({"logit_bias": []})", "logit_bias", "must be an object"},
      {R"({"logit_bias": {"x": 1}})", "logit_bias.x", "must be token ids"},
      {R"({"logit_bias": {"5": 101}})", "logit_bias.5", "in [-100, 100]"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {}}})",
       "response_format.json_schema.schema", "is required"},
      {R"({"response_format": {"type": "yaml"}})", "response_format.type",
       "must be 'text', 'json_object' or 'json_schema'"},
      {R"({"response_format": "json"})", "response_format.type", "must be an object"},
  };
  for (const BadCase& c : cases) expect_bad(c.extra, c.param, c.needle);
  const BadCase completion_cases[] = {
      {R"({"logprobs": 21})", "logprobs", "in [0, 20]"},
      {R"({"echo": 1})", "echo", "must be a boolean"},
      {R"({"echo": true, "stream": true})", "echo", "not supported with 'stream'"},
      {R"({"suffix": "end"})", "suffix", "'suffix' is not supported"},
      {R"({"best_of": 2})", "best_of", "'best_of' above 'n' is not supported"},
      {R"({"max_tokens": 0})", "max_tokens", "0 only with 'echo'"},
      {R"({"prompt": [1, -2]})", "prompt", "an array of token ids"},
      {R"({"prompt": ["a", [1]]})", "prompt[1]", "prompts of one request are all strings"},
  };
  for (const BadCase& c : completion_cases) {
    SCOPED_TRACE(c.extra);
    expect_api_error([&] { parse_completion_request(with(Endpoint::Completions, c.extra)); },
                     c.param, c.needle);
  }
  const BadCase chat_cases[] = {
      {R"({"logprobs": 0})", "logprobs", "'logprobs' must be a boolean"},
      {R"({"top_logprobs": 2})", "top_logprobs", "needs 'logprobs': true"},
      {R"({"logprobs": true, "top_logprobs": 21})", "top_logprobs", "in [0, 20]"},
  };
  for (const BadCase& c : chat_cases) {
    SCOPED_TRACE(c.extra);
    expect_api_error([&] { parse_chat_request(with(Endpoint::Chat, c.extra)); }, c.param, c.needle);
  }
}

TEST(ApiParse, StopIsAStringOrUpToFourNonEmptyStrings) {
  EXPECT_EQ(parse_completion_request(with(Endpoint::Completions, R"({"stop": "x"})")).stop,
            std::vector<std::string>{"x"});
  EXPECT_EQ(parse_completion_request(with(Endpoint::Completions, R"({"stop": ["a","b","c","d"]})"))
                .stop.size(),
            4u);
  EXPECT_TRUE(
      parse_completion_request(with(Endpoint::Completions, R"({"stop": []})")).stop.empty());
  expect_bad(R"({"stop": ["a","b","c","d","e"]})", "stop", "at most 4 strings (got an array of 5)");
  expect_bad(R"({"stop": ""})", "stop", "'stop' must not be empty");
  expect_bad(R"({"stop": ["a", ""]})", "stop[1]", "'stop[1]' must not be empty");
  expect_bad(R"({"stop": ["a", 3]})", "stop[1]", "'stop[1]' must be a string (got 3)");
  expect_bad(R"({"stop": 3})", "stop", "must be a string or an array");
}

TEST(ApiParse, StreamOptionsOnlyWithStream) {
  const GenRequest r = parse_completion_request(
      with(Endpoint::Completions,
           R"({"stream": true, "stream_options": {"include_usage": false}})"));
  EXPECT_TRUE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_TRUE(
      parse_chat_request(
          with(Endpoint::Chat, R"({"stream": true, "stream_options": {"include_usage": null}})"))
          .stream);
  expect_bad(R"({"stream_options": {"include_usage": true}})", "stream_options",
             "'stream_options' is only allowed when 'stream' is true");
  expect_bad(R"({"stream": false, "stream_options": {}})", "stream_options",
             "only allowed when 'stream' is true");
  expect_bad(R"({"stream": true, "stream_options": {"include_usage": "yes"}})",
             "stream_options.include_usage", "'stream_options.include_usage' must be a boolean");
}

TEST(ApiParse, SeedTakesAll64Bits) {
  auto seed = [](const char* v) {
    return *parse_completion_request(
                with(Endpoint::Completions, fmt::format(R"({{"seed": {}}})", v)))
                .seed;
  };
  EXPECT_EQ(seed("0"), 0u);
  EXPECT_EQ(seed("-2"), ~uint64_t{0} - 1);
  EXPECT_EQ(seed("18446744073709551615"), ~uint64_t{0});
  EXPECT_EQ(seed("9223372036854775808"), uint64_t{1} << 63);
}

// --- chat messages ---

TEST(ApiChat, MaxCompletionTokensIsAnAliasOfMaxTokens) {
  EXPECT_EQ(parse_chat_request(with(Endpoint::Chat, R"({"max_completion_tokens": 9})")).max_tokens,
            9);
  EXPECT_EQ(parse_chat_request(
                with(Endpoint::Chat, R"({"max_tokens": 9, "max_completion_tokens": 9})"))
                .max_tokens,
            9);
  expect_api_error(
      [] {
        parse_chat_request(
            with(Endpoint::Chat, R"({"max_tokens": 9, "max_completion_tokens": 8})"));
      },
      "max_tokens", "'max_tokens' and 'max_completion_tokens' differ");
  expect_api_error(
      [] { parse_chat_request(with(Endpoint::Chat, R"({"max_completion_tokens": 0})")); },
      "max_completion_tokens", "'max_completion_tokens' must be >= 1");
}

TEST(ApiChat, BadMessagesNameTheMessageAndKey) {
  auto bad = [](const std::string& messages, const std::string& param, const std::string& needle) {
    SCOPED_TRACE(messages);
    expect_api_error([&] { parse_chat_request(R"({"messages": )" + messages + "}"); }, param,
                     needle);
  };
  const std::string ok = R"({"role": "user", "content": "hi"})";
  expect_api_error([] { parse_chat_request(R"({"model": "m"})"); }, "messages",
                   "'messages' is required");
  expect_api_error([] { parse_chat_request(R"({"messages": null})"); }, "messages",
                   "'messages' is required");
  bad("[]", "messages", "'messages' must be a non-empty array of messages (got an empty array)");
  bad(R"("hi")", "messages", "must be a non-empty array");
  bad("[" + ok + R"(, "hi"])", "messages[1]", "'messages[1]' must be an object");
  bad("[" + ok + R"(, {"role": "function", "content": "x", "name": "f"}])", "messages[1].role",
      "'messages[1].role' must be one of system, developer, user, assistant, tool (got "
      "'function')");
  bad(R"([{"content": "x"}])", "messages[0].role",
      "must be one of system, developer, user, assistant, tool (got nothing)");
  bad(R"([{"role": "User", "content": "x"}])", "messages[0].role", "(got 'User')");
  bad(R"([{"role": 1, "content": "x"}])", "messages[0].role", "(got 1)");
  bad(R"([{"role": "user"}])", "messages[0].content", "'messages[0].content' is required");
  bad(R"([{"role": "assistant", "content": null}])", "messages[0].content", "is required");
  bad(R"([{"role": "user", "content": 5}])", "messages[0].content",
      "'messages[0].content' must be a string or an array of text parts (got 5)");
  bad(R"([{"role": "user", "content": "x", "name": 3}])", "messages[0].name",
      "'messages[0].name' must be a string");
  // Content parts: text only.
  bad(R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}]}])",
      "messages[0].content[1].type",
      "'messages[0].content[1].type' must be 'text' (got 'image_url')");
  bad(R"([{"role": "user", "content": [{"text": "a"}]}])", "messages[0].content[0].type",
      "'messages[0].content[0].type' is required");
  bad(R"([{"role": "user", "content": [{"type": "text"}]}])", "messages[0].content[0].text",
      "'messages[0].content[0].text' is required");
  bad(R"([{"role": "user", "content": [{"type": "text", "text": 1}]}])",
      "messages[0].content[0].text", "must be a string (got 1)");
  bad(R"([{"role": "user", "content": ["a"]}])", "messages[0].content[0]",
      "'messages[0].content[0]' must be an object");
}

TEST(ApiChat, EmptyPartsListIsEmptyContent) {
  const GenRequest r = parse_chat_request(R"({"messages": [{"role": "user", "content": []}]})");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].content, "");
}

// --- the fasa extension ---

TEST(ApiFasa, OptionValuesBecomeSpecStrings) {
  const GenRequest r = parse_completion_request(with(Endpoint::Completions, R"({"fasa": {
      "policy": "fasa", "budget": 256, "n_tip": 0.25, "ratio": 0.1, "tiny": 1e-05, "whole": 2.0,
      "neg": -3, "big": 18446744073709551615, "recent": true, "sink": false,
      "mode": "fast", "empty": "", "layers": [0, 1, 27], "one": [5]}})"));
  EXPECT_EQ(r.fasa.policy, "fasa");
  const PolicyOptions want = {{"budget", "256"},
                              {"n_tip", "0.25"},
                              {"ratio", "0.1"},
                              {"tiny", "1e-05"},
                              {"whole", "2"},
                              {"neg", "-3"},
                              {"big", "18446744073709551615"},
                              {"recent", "on"},
                              {"sink", "off"},
                              {"mode", "fast"},
                              {"empty", ""},
                              {"layers", "0+1+27"},
                              {"one", "5"}};
  EXPECT_EQ(r.fasa.options, want);
  EXPECT_TRUE(r.fasa.given());
  // Options without a policy: the server's default policy with these knobs.
  const GenRequest o = parse_chat_request(with(Endpoint::Chat, R"({"fasa": {"budget": 64}})"));
  EXPECT_EQ(o.fasa.policy, "");
  EXPECT_TRUE(o.fasa.given());
  EXPECT_FALSE(parse_chat_request(with(Endpoint::Chat, R"({"fasa": {}})")).fasa.given());
}

// "parse_special" is the tokenization opt-in, not a policy option: both endpoints, off by default.
TEST(ApiFasa, ParseSpecialIsAnOptInNotAPolicyOption) {
  for (Endpoint ep : {Endpoint::Completions, Endpoint::Chat}) {
    EXPECT_FALSE(parse(ep, with(ep, "{}")).parse_special);
    EXPECT_FALSE(parse(ep, with(ep, R"({"fasa": {"parse_special": false}})")).parse_special);
    EXPECT_FALSE(parse(ep, with(ep, R"({"fasa": {"parse_special": null}})")).parse_special);
    const GenRequest r = parse(ep, with(ep, R"({"fasa": {"parse_special": true, "budget": 8}})"));
    EXPECT_TRUE(r.parse_special);
    EXPECT_EQ(r.fasa.options, (PolicyOptions{{"budget", "8"}}));
    EXPECT_FALSE(parse(ep, with(ep, R"({"fasa": {"parse_special": true}})")).fasa.given());
  }
}

TEST(ApiFasa, BadKeysAndValuesNameTheOption) {
  const BadCase cases[] = {
      {R"({"fasa": {"parse_special": "yes"}})", "fasa.parse_special",
       "'fasa.parse_special' must be a boolean (got 'yes')"},
      {R"({"fasa": {"parse_special": 1}})", "fasa.parse_special", "must be a boolean"},
      {R"({"fasa": {"policy": ""}})", "fasa.policy", "'fasa.policy' must be a non-empty string"},
      {R"({"fasa": {"policy": 3}})", "fasa.policy", "must be a non-empty string"},
      {R"({"fasa": {"Budget": 1}})", "fasa.Budget", "'fasa.Budget' is not a valid option name"},
      {R"({"fasa": {"1x": 1}})", "fasa.1x", "not a valid option name"},
      {R"({"fasa": {"a-b": 1}})", "fasa.a-b", "not a valid option name"},
      {R"({"fasa": {"": 1}})", "fasa.", "not a valid option name"},
      {R"({"fasa": {"budget": null}})", "fasa.budget",
       "'fasa.budget' must be a number, a boolean, a string or a non-empty array of integers (got "
       "null)"},
      {R"({"fasa": {"budget": {"v": 1}}})", "fasa.budget", "(got an object)"},
      {R"({"fasa": {"layers": [[0, 1]]}})", "fasa.layers", "array of integers"},
      {R"({"fasa": {"layers": [0, 1.5]}})", "fasa.layers", "array of integers"},
      {R"({"fasa": {"layers": [true]}})", "fasa.layers", "array of integers"},
      {R"({"fasa": {"layers": []}})", "fasa.layers", "non-empty array of integers"},
      {R"({"fasa": {"mode": "a,b"}})", "fasa.mode",
       "'fasa.mode' must not contain ',', ':' or '=' (got 'a,b')"},
      {R"({"fasa": {"mode": "x:y"}})", "fasa.mode", "must not contain"},
      {R"({"fasa": {"mode": "k=v"}})", "fasa.mode", "must not contain"},
      {R"({"fasa": {"calib": "/etc/passwd"}})", "fasa.calib",
       "'fasa.calib' cannot be set per request: it names a file on the server (start the server "
       "with --calib)"},
      {R"({"fasa": {"offload_dir": "/tmp"}})", "fasa.offload_dir",
       "'fasa.offload_dir' cannot be set per request: it names a directory on the server (start "
       "the server with --offload-dir)"},
      // A spec must not smuggle them in either.
      {R"({"fasa": {"policy": "fasa:budget=64,calib=/etc/passwd"}})", "fasa.policy",
       "'fasa.policy' option 'calib' cannot be set per request: it names a file on the server"},
      {R"({"fasa": {"policy": "fasa:offload_dir=/"}})", "fasa.policy",
       "option 'offload_dir' cannot be set per request"},
      {R"({"fasa": {"policy": "fasa:budget"}})", "fasa.policy",
       "'fasa.policy' must be a policy name or spec name:key=value,... (got 'fasa:budget')"},
  };
  for (const BadCase& c : cases) expect_bad(c.extra, c.param, c.needle);
}

TEST(ApiParse, LongValuesAreShortenedInMessages) {
  const std::string long_value(5000, 'x');
  try {
    parse_completion_request(
        with(Endpoint::Completions, R"({"temperature": ")" + long_value + R"("})"));
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_LT(std::string(e.what()).size(), 200u) << e.what();
    EXPECT_NE(std::string(e.what()).find("xxx...'"), std::string::npos) << e.what();
  }
}

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
