// Request fields beyond OpenAI's (api_fields.h): vLLM's stop controls parsed and checked, every
// answer-changing field of OpenAI, vLLM and llama-server refused unless its value changes
// nothing, and /v1/completions' prompt arrays.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/server/api.h"
#include "fasa/server/api_fields.h"

namespace fasa::server {
namespace {

using json = nlohmann::json;

std::string with(Endpoint ep, const json& extra) {
  json body = ep == Endpoint::Chat ? json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}}
                                   : json{{"prompt", "hi"}};
  body.update(extra);
  return body.dump();
}

GenRequest parse(Endpoint ep, const json& extra) {
  const std::string body = with(ep, extra);
  return ep == Endpoint::Chat ? parse_chat_request(body) : parse_completion_request(body);
}

// `extra` is refused on `ep` with 400, naming `param`, its message holding `needle`.
void expect_refused(Endpoint ep, const json& extra, const std::string& param,
                    const std::string& needle) {
  SCOPED_TRACE((ep == Endpoint::Chat ? "chat: " : "completions: ") + extra.dump());
  try {
    parse(ep, extra);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, param) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

constexpr Endpoint kBoth[] = {Endpoint::Completions, Endpoint::Chat};

TEST(ApiFields, StopControlsAreParsed) {
  for (Endpoint ep : kBoth) {
    const GenRequest r = parse(ep, json{{"min_tokens", 5},
                                        {"ignore_eos", true},
                                        {"stop_token_ids", json::array({7, 0, 2147483647})}});
    EXPECT_EQ(r.min_tokens, 5);
    EXPECT_TRUE(r.ignore_eos);
    EXPECT_EQ(r.stop_token_ids, (std::vector<int32_t>{7, 0, 2147483647}));
    EXPECT_TRUE(r.ignored.empty());
    // Null is absent (and not an ignored field); the defaults change nothing.
    const GenRequest n = parse(ep, {{"min_tokens", nullptr},
                                    {"ignore_eos", nullptr},
                                    {"stop_token_ids", nullptr},
                                    {"grammar", nullptr}});
    EXPECT_EQ(n.min_tokens, 0);
    EXPECT_FALSE(n.ignore_eos);
    EXPECT_TRUE(n.stop_token_ids.empty());
    EXPECT_TRUE(n.ignored.empty());
    EXPECT_TRUE(parse(ep, {{"stop_token_ids", json::array()}}).stop_token_ids.empty());
  }
}

TEST(ApiFields, BadStopControlsNameTheField) {
  struct Case {
    json extra;
    const char* param;
    const char* needle;
  };
  const Case cases[] = {
      {{{"min_tokens", -1}}, "min_tokens", "'min_tokens' must be an integer in [0, 1048576]"},
      {{{"min_tokens", 2.0}}, "min_tokens", "(got 2.0)"},
      {{{"min_tokens", "3"}}, "min_tokens", "(got '3')"},
      {{{"min_tokens", 1048577}}, "min_tokens", "in [0, 1048576]"},
      {{{"ignore_eos", 1}}, "ignore_eos", "'ignore_eos' must be a boolean (got 1)"},
      {{{"stop_token_ids", 5}}, "stop_token_ids", "must be an array of at most 64 token ids"},
      {{{"stop_token_ids", std::vector<int>(65, 1)}}, "stop_token_ids", "(got an array of 65)"},
      {{{"stop_token_ids", json::array({1, -2})}},
       "stop_token_ids[1]",
       "'stop_token_ids[1]' must be a token id"},
      {{{"stop_token_ids", json::array({1.5})}}, "stop_token_ids[0]", "(an integer >= 0; got 1.5)"},
      {{{"stop_token_ids", json::array({2147483648LL})}},
       "stop_token_ids[0]",
       "must be a token id"},
      {{{"stop_token_ids", json::array({"7"})}}, "stop_token_ids[0]", "got '7'"},
  };
  for (Endpoint ep : kBoth) {
    for (const Case& c : cases) expect_refused(ep, c.extra, c.param, c.needle);
  }
}

// One row per field that would change the answer: a value that changes nothing (accepted,
// silently: it is what the server does) and one that does not (refused, naming the field).
struct Row {
  const char* name;
  json neutral;  // null: no value is neutral
  json other;
  bool chat = true, completions = true;
};

const std::vector<Row>& rows() {
  static const std::vector<Row> kRows = {
      {"audio", nullptr, json{{"voice", "alloy"}, {"format", "wav"}}, true, false},
      {"modalities", json::array({"text"}), json::array({"text", "audio"}), true, false},
      {"web_search_options", nullptr, json::object(), true, false},
      {"reasoning_effort", "none", "high", true, false},
      {"reasoning", nullptr, json{{"effort", "low"}}, true, false},
      {"verbosity", "medium", "low", true, false},
      {"use_beam_search", false, true},
      {"length_penalty", 1.0, 0.5},
      {"include_stop_str_in_output", false, true},
      {"skip_special_tokens", true, false},
      {"truncate_prompt_tokens", nullptr, 100},
      {"prompt_logprobs", nullptr, 1},
      {"allowed_token_ids", nullptr, json::array({1, 2})},
      {"bad_words", json::array(), json::array({"no"})},
      {"logits_processors", json::array(), json::array({"x"})},
      {"return_tokens_as_token_ids", false, true},
      {"guided_whitespace_pattern", nullptr, " *"},
      {"structural_tag", nullptr, "{}"},
      {"structured_outputs", nullptr, json{{"regex", "a+"}}},
      {"echo", false, true, true, false},
      {"add_generation_prompt", true, false, true, false},
      {"continue_final_message", false, true, true, false},
      {"add_special_tokens", false, true, true, false},
      {"add_special_tokens", true, false, false, true},
      {"chat_template", nullptr, "{{ messages }}", true, false},
      {"documents", json::array(), json::array({json{{"title", "t"}}}), true, false},
      {"grammar", "", "root ::= \"yes\""},
      {"json_schema", nullptr, json{{"type", "object"}}},
      {"n_predict", -1, 16},
      {"n_probs", 0, 3},
      {"n_cmpl", 1, 2},
      {"repeat_penalty", 1.0, 1.1},
      {"typical_p", 1, 0.9},
      {"top_n_sigma", -1, 1.5},
      {"xtc_probability", 0, 0.5},
      {"dry_multiplier", 0.0, 0.8},
      {"mirostat", 0, 2},
      {"dynatemp_range", 0, 0.5},
      {"min_keep", 0, 5},
      {"t_max_predict_ms", 0, 500},
      {"n_indent", 0, 4},
      {"lora", json::array(), json::array({json{{"id", 0}, {"scale", 1.0}}})},
  };
  return kRows;
}

TEST(ApiFields, NeutralValuesOfAnswerChangingFieldsAreAccepted) {
  for (const Row& row : rows()) {
    for (Endpoint ep : kBoth) {
      if (row.neutral.is_null() || !(ep == Endpoint::Chat ? row.chat : row.completions)) continue;
      SCOPED_TRACE(std::string(row.name) + " " + row.neutral.dump());
      const GenRequest r = parse(ep, {{row.name, row.neutral}});
      EXPECT_TRUE(r.ignored.empty());
    }
  }
  // Either neutral value where there are two; 1 and 1.0 are one number.
  EXPECT_NO_THROW(parse(Endpoint::Chat, {{"t_max_predict_ms", -1}, {"typical_p", 1.0}}));
}

TEST(ApiFields, OtherValuesOfAnswerChangingFieldsAreRefused) {
  for (const Row& row : rows()) {
    for (Endpoint ep : kBoth) {
      if (!(ep == Endpoint::Chat ? row.chat : row.completions)) continue;
      expect_refused(ep, {{row.name, row.other}}, row.name,
                     std::string("'") + row.name + "' is not supported");
    }
  }
  // The message says why, and which value is accepted.
  expect_refused(Endpoint::Chat, {{"grammar", "root ::= x"}}, "grammar",
                 "GBNF grammars are not implemented; JSON output takes 'response_format', "
                 "'guided_json' or 'guided_choice' (got 'root ::= x'); only \"\", which changes "
                 "nothing, is accepted");
  expect_refused(Endpoint::Completions, {{"n_predict", 16}}, "n_predict", "use 'max_tokens'");
  expect_refused(Endpoint::Chat, json{{"audio", json{{"voice", "x"}}}}, "audio",
                 "text only (got an object)");
}

TEST(ApiFields, AnotherEndpointsFieldsAreIgnoredAndNamed) {
  // Chat-only fields on /v1/completions, and fields with no effect here, are ignored and named.
  const GenRequest c = parse(Endpoint::Completions, json{{"modalities", json::array({"audio"})},
                                                         {"chat_template", "x"},
                                                         {"cache_prompt", false},
                                                         {"samplers", "kt"},
                                                         {"priority", 3}});
  std::vector<std::string> ignored = c.ignored;
  std::sort(ignored.begin(), ignored.end());
  EXPECT_EQ(ignored, (std::vector<std::string>{"cache_prompt", "chat_template", "modalities",
                                               "priority", "samplers"}));
  EXPECT_TRUE(parse(Endpoint::Completions, {{"echo", true}}).echo);  // a completions field
}

TEST(ApiPrompts, OneOrSeveralPrompts) {
  const GenRequest one = parse_completion_request(R"({"prompt": ["only"]})");
  EXPECT_EQ(one.prompt, "only");
  EXPECT_TRUE(one.prompts.empty());
  const GenRequest texts = parse_completion_request(R"({"prompt": ["a", "", "c"], "n": 2})");
  ASSERT_EQ(texts.prompts.size(), 3u);
  EXPECT_EQ(texts.prompt, "a");
  EXPECT_EQ(texts.prompts[1].text, "");
  EXPECT_EQ(texts.prompts[2].text, "c");
  EXPECT_FALSE(texts.prompts[2].is_ids);
  const GenRequest ids = parse_completion_request(R"({"prompt": [[1, 2], [3]]})");
  ASSERT_EQ(ids.prompts.size(), 2u);
  EXPECT_TRUE(ids.prompt_is_ids);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(ids.prompts[1].ids, (std::vector<int32_t>{3}));
  EXPECT_TRUE(ids.prompts[1].is_ids);
  // Once per prompt, each with its own prompt and no list.
  const std::vector<GenRequest> each = one_request_per_prompt(ids);
  ASSERT_EQ(each.size(), 2u);
  EXPECT_EQ(each[1].prompt_ids, (std::vector<int32_t>{3}));
  EXPECT_TRUE(each[1].prompt_is_ids);
  EXPECT_TRUE(each[0].prompts.empty() && each[1].prompts.empty());
  EXPECT_EQ(one_request_per_prompt(one).size(), 1u);
  // The limit: 32 prompts, and 32 sequences (prompts x n).
  EXPECT_EQ(parse_completion_request(json{{"prompt", std::vector<std::string>(32, "x")}}.dump())
                .prompts.size(),
            32u);
  EXPECT_NO_THROW(parse_completion_request(R"({"prompt": ["a", "b", "c", "d"], "n": 8})"));
}

TEST(ApiPrompts, BadPromptArraysNameThePrompt) {
  struct Case {
    std::string prompt;  // JSON text
    const char* param;
    const char* needle;
  };
  const Case cases[] = {
      {"[]", "prompt", "(got an empty array)"},
      {R"(["a", [1, 2]])", "prompt[1]", "'prompt[1]' must be a string, as 'prompt[0]' is"},
      {R"([[1, 2], "a"])", "prompt[1]", "must be a token-id array, as 'prompt[0]' is"},
      {"[[1], []]", "prompt[1]", "'prompt[1]' must be a non-empty array of token ids"},
      {"[[1], [1, -2]]", "prompt[1]", "token ids (integers >= 0)"},
      {"[[1], [1.5]]", "prompt[1]", "token ids"},
      {R"(["a", null])", "prompt[1]", "must be a string"},
      {R"([["a"]])", "prompt[0]", "non-empty array of token ids"},
      {"7", "prompt", "(got 7)"},
      {R"({"k": 1})", "prompt", "(got an object)"},
      {json(std::vector<std::string>(33, "x")).dump(), "prompt",
       "'prompt' holds 33 prompts; at most 32"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.prompt);
    try {
      parse_completion_request(R"({"prompt": )" + c.prompt + "}");
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_EQ(e.param, c.param) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos) << e.what();
    }
  }
  try {
    parse_completion_request(R"({"prompt": ["a", "b", "c", "d", "e"], "n": 7})");
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param, "n");
    EXPECT_NE(std::string(e.what()).find("5 prompts times 'n' 7 is 35 sequences; at most 32"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fasa::server
