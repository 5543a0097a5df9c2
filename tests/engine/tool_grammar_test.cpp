// Tool-call grammars (engine/tool_grammar.h on grammar_compose.h's Sequence and raw texts):
// the constraint's mask equals a brute-force one over a vocabulary with the formats' markup;
// whole texts are accepted or refused as the call syntax says (no whitespace before a raw text,
// the keys in order, the named function only, at most kMaxParallelCalls blocks); and sampling
// from random logits under each format's grammar always ends in an answer that the format's
// parser (tokenizer/chat_tool_calls.h, written apart from the grammar) reads as calls of the
// offered functions whose arguments validate against their schemas.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fasa/core/splitmix.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/grammar_compose.h"
#include "fasa/engine/grammar_constraint.h"
#include "fasa/engine/tool_grammar.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/chat_tool_calls.h"
#include "support/schema_check.h"
#include "support/tiny_model.h"

namespace fasa {
namespace {

using ojson = nlohmann::ordered_json;

const char* kWeather = R"({"type": "object", "properties": {"city": {"type": "string"},
    "unit": {"enum": ["c", "f"]}, "days": {"type": "integer"}}, "required": ["city"]})";
const char* kSearch = R"({"type": "object", "properties": {"q": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}}, "required": ["q"]})";

struct Fixture {
  std::vector<ToolFunction> fns;
  std::vector<ojson> schemas;
  ChatTools tools;
};

Fixture fixture(ToolChoice choice, bool parallel = true) {
  Fixture f;
  for (const auto& [name, text] : {std::pair{"get_weather", kWeather}, {"search", kSearch}}) {
    const ojson schema = ojson::parse(text);
    f.schemas.push_back(schema);
    f.fns.push_back({name, std::make_shared<const Grammar>(compile_json_schema(schema))});
    f.tools.tools.push_back({name, ojson::object()});
  }
  f.tools.choice = choice;
  f.tools.parallel = parallel;
  if (choice == ToolChoice::Named) f.tools.named = "search";
  return f;
}

bool whole(const Grammar& g, const std::string& text) {
  GrammarPrefix p(g);
  return p.feed(text) && p.complete();
}

TEST(ToolGrammar, NoGrammarWhereTheAnswerIsFree) {
  for (ToolFormat tf : {ToolFormat::Hermes, ToolFormat::Llama3, ToolFormat::MistralV3}) {
    EXPECT_FALSE(
        tool_call_grammar(tf, fixture(ToolChoice::Auto).fns, fixture(ToolChoice::Auto).tools));
  }
  const Fixture none = fixture(ToolChoice::None);
  EXPECT_FALSE(tool_call_grammar(ToolFormat::Generic, none.fns, none.tools));
  EXPECT_TRUE(tool_call_grammar(ToolFormat::Generic, fixture(ToolChoice::Auto).fns,
                                fixture(ToolChoice::Auto).tools));
}

TEST(ToolGrammar, WholeTextsFollowTheCallSyntax) {
  const Fixture req = fixture(ToolChoice::Required);
  const auto hermes = tool_call_grammar(ToolFormat::Hermes, req.fns, req.tools);
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  EXPECT_TRUE(whole(*hermes, call));
  EXPECT_TRUE(whole(*hermes, call + "\n" + call));
  EXPECT_TRUE(whole(*hermes,
                    "<tool_call>\n {\"name\":\"search\",\"arguments\":{\"q\":\"x\","
                    "\"tags\":[]}}\n</tool_call>"));
  EXPECT_FALSE(whole(*hermes, " " + call));                       // no whitespace before a raw text
  EXPECT_FALSE(whole(*hermes, call + "\n"));                      // nor a separator with no block
  EXPECT_FALSE(whole(*hermes, call.substr(0, call.size() - 1)));  // an unfinished block
  EXPECT_FALSE(whole(*hermes,
                     "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}"
                     "\n</tool_call>"));  // the newline after the tag
  EXPECT_FALSE(whole(*hermes,
                     "<tool_call>\n{\"arguments\": {\"q\": \"x\"}, \"name\": "
                     "\"search\"}\n</tool_call>"));  // name first
  EXPECT_FALSE(whole(*hermes,
                     "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n"
                     "</tool_call>"));
  std::string eight = call, nine;
  for (int i = 1; i < kMaxParallelCalls; ++i) eight += "\n" + call;
  nine = eight + "\n" + call;
  EXPECT_TRUE(whole(*hermes, eight));
  EXPECT_FALSE(whole(*hermes, nine));
  const Fixture one = fixture(ToolChoice::Required, /*parallel=*/false);
  EXPECT_FALSE(
      whole(*tool_call_grammar(ToolFormat::Hermes, one.fns, one.tools), call + "\n" + call));

  const Fixture named = fixture(ToolChoice::Named);
  const auto llama = tool_call_grammar(ToolFormat::Llama3, named.fns, named.tools);
  EXPECT_TRUE(whole(*llama, "{\"name\": \"search\", \"parameters\": {\"q\": \"fasa\"}}"));
  EXPECT_FALSE(whole(*llama, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"x\"}}"));
  EXPECT_FALSE(whole(*llama, "{\"name\": \"search\", \"arguments\": {\"q\": \"fasa\"}}"));

  const auto mistral = tool_call_grammar(ToolFormat::MistralV3, req.fns, req.tools);
  EXPECT_TRUE(whole(*mistral,
                    " [{\"name\": \"search\", \"arguments\": {\"q\": \"a\"}}, "
                    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"b\"}}]"));
  EXPECT_FALSE(whole(*mistral, "[]"));
  EXPECT_FALSE(whole(*tool_call_grammar(ToolFormat::MistralV3, one.fns, one.tools),
                     "[{\"name\": \"search\", \"arguments\": {\"q\": \"a\"}}, "
                     "{\"name\": \"search\", \"arguments\": {\"q\": \"b\"}}]"));

  const Fixture aut = fixture(ToolChoice::Auto);
  const auto generic = tool_call_grammar(ToolFormat::Generic, aut.fns, aut.tools);
  EXPECT_TRUE(whole(*generic, "{\"response\": \"Hi!\"}"));
  EXPECT_TRUE(whole(*generic,
                    "{\"tool_call\": {\"name\": \"search\", \"arguments\": "
                    "{\"q\": \"x\"}}}"));
  EXPECT_FALSE(whole(*generic, "{\"response\": \"Hi!\", \"tool_call\": {}}"));
  EXPECT_FALSE(whole(*tool_call_grammar(ToolFormat::Generic, req.fns, req.tools),
                     "{\"response\": \"Hi!\"}"));
}

// A vocabulary of byte strings: id 0 ends generation, id 1 is a control token, then every byte,
// then multi-byte pieces of the formats' markup and of JSON.
class ToolTokenizer : public Tokenizer {
 public:
  ToolTokenizer() {
    texts_ = {"<eos>", "<ctl>"};
    for (int b = 1; b < 256; ++b) texts_.push_back(std::string(1, static_cast<char>(b)));
    for (const char* s : {"<tool_call>",
                          "</tool_call>",
                          "<tool",
                          "_call>\n",
                          "\n<",
                          "\n</tool_call>",
                          "{\"",
                          "\": ",
                          "\"name\"",
                          "\"arguments\"",
                          "\"parameters\"",
                          "get_weather",
                          "search",
                          "\"search\", ",
                          "{\"q\": \"",
                          "\"}}",
                          "}}\n",
                          "tool_call",
                          "response",
                          "[{",
                          "}]",
                          "\"c\"",
                          "12",
                          " ",
                          "  ",
                          "\n"}) {
      texts_.push_back(s);
    }
  }
  std::vector<int32_t> encode(std::string_view, bool, bool) const override { return {}; }
  std::vector<int32_t> encode_with_literals(std::string_view, bool, const std::vector<TextRange>&,
                                            const std::vector<std::string>&) const override {
    return {};
  }
  std::string token_to_bytes(int32_t id, bool = false) const override {
    return id < 2 ? "" : texts_[id];
  }
  const std::string& token_text(int32_t id) const override { return texts_[id]; }
  TokenType token_type(int32_t id) const override {
    return id < 2 ? TokenType::Control : id == 257 ? TokenType::UserDefined : TokenType::Normal;
  }
  int32_t n_vocab() const override { return static_cast<int32_t>(texts_.size()); }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return 0; }
  bool adds_bos() const override { return false; }
  bool is_eog(int32_t id) const override { return id == 0; }
  int32_t find_token(std::string_view) const override { return -1; }

 private:
  std::vector<std::string> texts_;
};

void random_logits(const Tokenizer& tok, uint64_t& state, std::vector<float>* logits) {
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    float x = static_cast<float>(splitmix64(state) % 8000) / 1000.0f - 4.0f;
    const std::string b = tok.token_to_bytes(id);
    if (b.find_first_of("\"]}>") != std::string::npos) x += 3.0f;  // values end in time
    (*logits)[id] = x;
  }
}

struct Case {
  ToolFormat tf;
  ToolChoice choice;
};
const Case kCases[] = {
    {ToolFormat::Hermes, ToolChoice::Required}, {ToolFormat::Hermes, ToolChoice::Named},
    {ToolFormat::Llama3, ToolChoice::Required}, {ToolFormat::MistralV3, ToolChoice::Required},
    {ToolFormat::Generic, ToolChoice::Auto},    {ToolFormat::Generic, ToolChoice::Named},
};

TEST(ToolGrammar, MaskEqualsBruteForce) {
  const ToolTokenizer tok;
  int steps = 0;
  for (const Case& c : kCases) {
    const Fixture f = fixture(c.choice);
    const auto g = tool_call_grammar(c.tf, f.fns, f.tools);
    ASSERT_TRUE(g);
    GrammarConstraint con(tok, g);
    GrammarPrefix state(*g);
    uint64_t rng = 7 + static_cast<uint64_t>(c.tf);
    std::vector<float> logits(tok.n_vocab());
    for (int step = 0; step < 150; ++step, ++steps) {
      random_logits(tok, rng, &logits);
      std::vector<float> masked = logits;
      con.mask(masked.data(), tok.n_vocab());
      int32_t best = -1;
      for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        GrammarPrefix p = state;
        const std::string b = tok.token_to_bytes(id);
        const bool want = id == 0 ? state.complete() : !b.empty() && p.feed(b);
        ASSERT_EQ(!std::isinf(masked[id]), want) << "step " << step << " token " << id;
        if (want && (best < 0 || masked[id] > masked[best])) best = id;
      }
      ASSERT_GE(best, 0) << "nothing allowed at step " << step;
      if (best == 0) break;
      con.accept(best);
      ASSERT_TRUE(state.feed(tok.token_to_bytes(best)));
    }
  }
  EXPECT_GT(steps, 200);
}

// The schema of `name`'s arguments.
const ojson& schema_of(const Fixture& f, const std::string& name) {
  return f.schemas[name == "get_weather" ? 0 : 1];
}

TEST(ToolGrammar, SampledAnswersParseAsValidCalls) {
  test::TinySpec spec;
  spec.byte_tokenizer = true;  // one token per byte; token 0 is EOS
  const std::string path = ::testing::TempDir() + "/tool_grammar_bytes.gguf";
  test::write_tiny_model(path, spec);
  const auto m = Model::load(path);
  const Tokenizer& tok = m->require_tokenizer();
  for (const Case& c : kCases) {
    const Fixture f = fixture(c.choice);
    const auto g = tool_call_grammar(c.tf, f.fns, f.tools);
    int calls = 0, ended = 0;
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      GenerateOptions o;
      o.n_predict = 700;
      o.grammar = g;
      o.sampler.temp = 1.0f;
      o.sampler.top_k = 0;
      o.sampler.top_p = 1.0f;
      o.sampler.min_p = 0.0f;
      o.sampler.seed = seed;
      Generation gen(tok, o);
      std::vector<float> logits(tok.n_vocab());
      uint64_t state = seed * 31;
      while (!gen.done()) {
        random_logits(tok, state, &logits);
        gen.step(logits.data(), tok.n_vocab(), true);
      }
      if (gen.stop_reason() != StopReason::Eos) continue;  // cut by the limit: a prefix
      ++ended;
      SCOPED_TRACE(gen.text());
      const ParsedAnswer a = parse_tool_calls(c.tf, gen.text(), f.tools);
      if (a.calls.empty()) {  // only the generic format's "auto" may answer in text
        EXPECT_EQ(c.tf, ToolFormat::Generic);
        EXPECT_EQ(c.choice, ToolChoice::Auto);
        EXPECT_TRUE(a.content.has_value());
        continue;
      }
      EXPECT_FALSE(a.content.has_value());
      for (const ParsedToolCall& call : a.calls) {
        if (c.choice == ToolChoice::Named) {
          EXPECT_EQ(call.name, "search");
        }
        EXPECT_EQ(test::text_violation(call.arguments, schema_of(f, call.name)), "");
        ++calls;
      }
    }
    EXPECT_GE(ended, 4) << tool_format_name(c.tf);
    EXPECT_GE(calls, 2) << tool_format_name(c.tf);
  }
}

}  // namespace
}  // namespace fasa
