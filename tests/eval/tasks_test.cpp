// Task files, metrics, haystacks and generators (eval/tasks, haystack, task_gen).
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "fasa/core/error.h"
#include "fasa/eval/haystack.h"
#include "fasa/eval/task_gen.h"
#include "fasa/eval/tasks.h"
#include "support/expect_error.h"

namespace fasa {
namespace {

using test::expect_error;

const char* kGood =
    R"({"id": "a", "task": "passkey", "prompt": "P1", "answers": ["123"], "max_new_tokens": 8, "metric": "contains", "length": 4096})"
    "\n\n"
    R"({"id": "b", "task": "qa", "prompt": "P2", "answers": ["x", "y"], "max_new_tokens": 3, "metric": "all"})"
    "\r\n";

TEST(TaskFile, ParsesLinesIgnoringExtraFieldsAndBlankLines) {
  const auto t = parse_tasks(kGood, "good.jsonl");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].id, "a");
  EXPECT_EQ(t[0].task, "passkey");
  EXPECT_EQ(t[0].prompt, "P1");
  EXPECT_EQ(t[0].answers, std::vector<std::string>{"123"});
  EXPECT_EQ(t[0].max_new_tokens, 8);
  EXPECT_EQ(t[0].metric, TaskMetric::Contains);
  EXPECT_EQ(t[1].metric, TaskMetric::All);
  // One JSON line per task round-trips.
  const auto again = parse_tasks(task_to_json_line(t[1]) + "\n", "x");
  EXPECT_EQ(again[0].answers, t[1].answers);
  EXPECT_EQ(again[0].prompt, t[1].prompt);
  EXPECT_EQ(again[0].max_new_tokens, 3);
}

TEST(TaskFile, EveryBadLineNamesFileLineAndField) {
  const std::string ok =
      R"({"id": "a", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact"})";
  auto bad = [&](const std::string& line, const std::string& needle) {
    expect_error([&] { parse_tasks(ok + "\n" + line + "\n", "f.jsonl"); }, needle);
  };
  bad("{not json", "f.jsonl:2: not valid JSON");
  bad("[1, 2]", "f.jsonl:2: expected a JSON object");
  bad(R"({"task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact"})",
      "f.jsonl:2: missing field \"id\"");
  bad(R"({"id": 5, "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact"})",
      "field \"id\" must be a string");
  bad(R"({"id": "b", "task": "t", "prompt": "", "answers": ["1"], "max_new_tokens": 4, "metric": "exact"})",
      "field \"prompt\" is empty");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": [], "max_new_tokens": 4, "metric": "exact"})",
      "field \"answers\" must be a non-empty array");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": [" "], "max_new_tokens": 4, "metric": "exact"})",
      "non-empty strings");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 0, "metric": "exact"})",
      "f.jsonl:2: field \"max_new_tokens\" must be an integer in [1, 1048576] (got 0)");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 2.5, "metric": "exact"})",
      "f.jsonl:2: field \"max_new_tokens\" must be an integer in [1, 1048576] (got 2.5)");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 3e9, "metric": "exact"})",
      "field \"max_new_tokens\" must be an integer in [1, 1048576] (got 3000000000.0)");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": -4, "metric": "exact"})",
      "field \"max_new_tokens\" must be an integer in [1, 1048576] (got -4)");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": "4", "metric": "exact"})",
      "field \"max_new_tokens\" must be an integer in [1, 1048576] (got \"4\")");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": ["1"], "metric": "exact"})",
      "f.jsonl:2: missing field \"max_new_tokens\"");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": 1})",
      "f.jsonl:2: field \"metric\" must be a string (got 1)");
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": ["1"], "max_new_t)",
      "f.jsonl:2: not valid JSON (");  // truncated
  bad(R"({"id": "b", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "fuzzy"})",
      "f.jsonl:2: unknown metric \"fuzzy\" (known: contains, exact, all, choice)");
  bad(ok, "f.jsonl:2: duplicate id \"a\"");
  expect_error([] { parse_tasks("\n  \n", "empty.jsonl"); }, "empty.jsonl: no tasks");
  expect_error([] { load_tasks("/nonexistent/tasks.jsonl"); }, "cannot read task file");
}

// Multiple-choice lines: choices and gold instead of answers and max_new_tokens (ignored if
// there); a generation task's optional stop strings.
TEST(TaskFile, ChoiceAndStopFieldsParseAndRoundTrip) {
  const std::string text =
      R"({"id": "m", "task": "mc", "prompt": "Sky:", "choices": [" blue", " green"], "gold": 1, "metric": "choice", "answers": 3})"
      "\n"
      R"({"id": "g", "task": "gen", "prompt": "Q", "answers": ["a"], "max_new_tokens": 4, "metric": "exact", "stop": ["\n", "."], "choices": 7})"
      "\n";
  const auto t = parse_tasks(text, "x.jsonl");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].metric, TaskMetric::Choice);
  EXPECT_EQ(t[0].choices, (std::vector<std::string>{" blue", " green"}));
  EXPECT_EQ(t[0].gold, 1);
  EXPECT_TRUE(t[0].answers.empty());
  EXPECT_EQ(t[0].max_new_tokens, 0);
  EXPECT_EQ(t[1].stop, (std::vector<std::string>{"\n", "."}));
  EXPECT_TRUE(t[1].choices.empty());
  EXPECT_EQ(metric_name(TaskMetric::Choice), std::string("choice"));
  for (const Task& x : t) {
    const Task y = parse_tasks(task_to_json_line(x) + "\n", "y")[0];
    EXPECT_EQ(y.metric, x.metric);
    EXPECT_EQ(y.choices, x.choices);
    EXPECT_EQ(y.gold, x.gold);
    EXPECT_EQ(y.stop, x.stop);
    EXPECT_EQ(y.answers, x.answers);
  }
  expect_error([] { score_output(TaskMetric::Choice, "x", {"x"}); }, "scored by log-likelihood");
}

TEST(TaskFile, BadChoiceAndStopFieldsNameTheField) {
  auto bad = [](const std::string& line, const std::string& needle) {
    expect_error([&] { parse_tasks(line + "\n", "c.jsonl"); }, needle);
  };
  bad(R"({"id": "m", "task": "t", "prompt": "p", "gold": 0, "metric": "choice"})",
      "c.jsonl:1: missing field \"choices\"");
  bad(R"({"id": "m", "task": "t", "prompt": "p", "choices": [" a"], "gold": 0, "metric": "choice"})",
      "c.jsonl:1: field \"choices\" must be an array of at least two strings");
  bad(R"({"id": "m", "task": "t", "prompt": "p", "choices": " a", "gold": 0, "metric": "choice"})",
      "field \"choices\" must be an array of at least two strings");
  bad(R"({"id": "m", "task": "t", "prompt": "p", "choices": [" a", ""], "gold": 0, "metric": "choice"})",
      "c.jsonl:1: field \"choices\" must hold non-empty strings");
  bad(R"({"id": "m", "task": "t", "prompt": "p", "choices": [" a", 2], "gold": 0, "metric": "choice"})",
      "field \"choices\" must hold non-empty strings");
  bad(R"({"id": "m", "task": "t", "prompt": "p", "choices": [" a", " b"], "metric": "choice"})",
      "c.jsonl:1: missing field \"gold\"");
  bad(R"({"id": "m", "task": "t", "prompt": "p", "choices": [" a", " b"], "gold": 2, "metric": "choice"})",
      "c.jsonl:1: field \"gold\" must be an integer in [0, 1] (got 2)");
  bad(R"({"id": "m", "task": "t", "prompt": "p", "choices": [" a", " b"], "gold": "0", "metric": "choice"})",
      "field \"gold\" must be an integer in [0, 1]");
  bad(R"({"id": "g", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact", "stop": []})",
      "c.jsonl:1: field \"stop\" must be a non-empty array of strings");
  bad(R"({"id": "g", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact", "stop": [""]})",
      "field \"stop\" must hold non-empty strings");
  bad(R"({"id": "g", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact", "stop": "\n"})",
      "field \"stop\" must be a non-empty array");
  std::string many =
      R"({"id": "g", "task": "t", "prompt": "p", "answers": ["1"], "max_new_tokens": 4, "metric": "exact", "stop": [)";
  for (int i = 0; i < 17; ++i) many += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
  bad(many + "]}", "c.jsonl:1: field \"stop\" has 17 strings (at most 16)");
  bad(R"({"id": "g", "task": "t", "prompt": "p", "max_new_tokens": 4, "metric": "exact"})",
      "missing field \"answers\"");
  const std::string tail_error =
      "c.jsonl:1: field \"question\" of task 'q' must be a non-empty tail of its \"prompt\"";
  for (const char* q : {"\"\"", "\"Who?\"", "\"ctx Q\"", "\"text\""}) {
    bad(std::string(
            R"({"id": "q", "task": "t", "prompt": "ctx Q", "answers": ["1"], "max_new_tokens": 4, "metric": "exact", "question": )") +
            q + "}",
        tail_error);
  }
  bad(R"({"id": "q", "task": "t", "prompt": "ctx Q", "answers": ["1"], "max_new_tokens": 4, "metric": "exact", "question": 3})",
      "field \"question\"");
  const Task ok = parse_tasks(
      R"({"id": "q", "task": "t", "prompt": "ctx Q", "answers": ["1"], "max_new_tokens": 4, "metric": "exact", "question": " Q"})"
      "\n",
      "c.jsonl")[0];
  EXPECT_EQ(ok.question, " Q");
}

TEST(TaskMetrics, ContainsExactAllIgnoreCaseAndSpacing) {
  EXPECT_EQ(score_output(TaskMetric::Contains, " The pass key is 71432.", {"71432"}), 1.0);
  EXPECT_EQ(score_output(TaskMetric::Contains, "7143 2", {"71432"}), 0.0);
  EXPECT_EQ(score_output(TaskMetric::Contains, "PARIS", {"london", "paris"}), 1.0);
  EXPECT_EQ(score_output(TaskMetric::Exact, "  Paris \n", {"paris"}), 1.0);
  EXPECT_EQ(score_output(TaskMetric::Exact, "Paris.", {"paris"}), 0.0);
  EXPECT_EQ(score_output(TaskMetric::Contains, "Mr.\n\n  Darcy", {"mr. darcy"}), 1.0);
  EXPECT_EQ(score_output(TaskMetric::All, "alpha, beta and gamma", {"gamma", "alpha", "beta"}),
            1.0);
  EXPECT_EQ(score_output(TaskMetric::All, "alpha and gamma", {"gamma", "alpha", "beta"}), 0.0);
  EXPECT_EQ(parse_metric("all"), TaskMetric::All);
  expect_error([] { parse_metric("best"); }, "unknown metric");
}

// RULER's partial credit: for `all`, the share of the answers found (same matching as the
// score); for single-answer metrics, the score itself.
TEST(TaskMetrics, PartialCreditIsTheShareOfAnswersFound) {
  const std::vector<std::string> four = {"1234", "Alpha", "beta gamma", "9"};
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::All, "ALPHA and 1234", four), 0.5);
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::All, "beta\n  gamma; 9", four), 0.5);
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::All, "9", four), 0.25);
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::All, "nothing", four), 0.0);
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::All, "1234 alpha beta gamma 9", four), 1.0);
  EXPECT_EQ(score_output(TaskMetric::All, "ALPHA and 1234", four), 0.0);  // all-or-nothing
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::All, "x y", {"x", "y", "z"}), 2.0 / 3.0);
  // One answer suffices for contains/exact: partial = score.
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::Contains, "it is paris", {"london", "paris"}), 1.0);
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::Contains, "rome", {"london", "paris"}), 0.0);
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::Exact, "Paris.", {"paris"}), 0.0);
  EXPECT_DOUBLE_EQ(partial_credit(TaskMetric::Exact, " paris ", {"paris"}), 1.0);
}

// Nine words per sentence; `word_i` varies, so the book has many distinct words.
std::string book(int n_sentences) {
  std::string s;
  for (int i = 0; i < n_sentences; ++i) {
    std::string w = "word";
    for (int k = i % 400; k > 0; k /= 26) w += static_cast<char>('a' + k % 26);
    s += "Sentence number " + std::to_string(i) + " has several " + w + " words in it. ";
  }
  return s;
}

TEST(Haystack, NeedlesGoBetweenSentencesInDepthOrder) {
  Haystack h(book(100), "book");
  EXPECT_EQ(h.n_words(), 900u);
  const std::string c = h.context(0, 90, {{0.9, "NEEDLE-B."}, {0.1, "NEEDLE-A."}, {0.0, "FIRST."}});
  EXPECT_EQ(c.rfind("FIRST. Sentence number 0 has several word ", 0), 0u) << c;
  const size_t a = c.find("NEEDLE-A."), b = c.find("NEEDLE-B.");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_LT(a, b);
  EXPECT_EQ(c.substr(a - 4, 4), "it. ") << c;  // right after a sentence end
  EXPECT_EQ(c.substr(b - 4, 4), "it. ") << c;
  // Wraps around the end of the book.
  const std::string w = h.context(895, 10, {});
  EXPECT_EQ(w, "several wordvd words in it. Sentence number 0 has several");
  expect_error([] { Haystack("too few words", "tiny.txt"); }, "tiny.txt' has 3 words");
}

TEST(Haystack, FitUnitsFindsTheLargestFittingCount) {
  for (int64_t target : {0, 1, 7, 100, 1000, 4095}) {
    auto count = [](int64_t n) { return 5 + 3 * n + n / 7; };
    if (count(0) > target) {
      expect_error([&] { fit_units(count, target, 1 << 20, "what"); }, "what: even without");
      continue;
    }
    const int64_t n = fit_units(count, target, 1 << 20, "what");
    EXPECT_LE(count(n), target);
    EXPECT_GT(count(n + 1), target);
  }
  EXPECT_EQ(fit_units([](int64_t n) { return n; }, 1000, 50, "x"), 50);  // capped by max_n
}

// A stand-in tokenizer: one token per 4 bytes, rounded up, plus BOS.
int64_t fake_count(const std::string& s) { return 1 + (static_cast<int64_t>(s.size()) + 3) / 4; }

int occurrences(const std::string& text, const std::string& word) {
  std::regex re("\\b" + word + "\\b");
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

TEST(TaskGen, EveryKindFitsTheContextAndPlantsItsAnswers) {
  const std::string text = book(3000);
  for (const auto& kind : task_kinds()) {
    TaskGenOptions o;
    o.kind = kind;
    o.n_ctx = 1500;
    o.count = 4;
    o.seed = 7;
    const auto tasks = generate_tasks(o, text, "book", fake_count, nullptr);
    ASSERT_EQ(tasks.size(), 4u) << kind;
    std::set<std::string> prompts;
    for (const auto& g : tasks) {
      const Task& t = g.task;
      SCOPED_TRACE(kind + " " + t.id);
      EXPECT_EQ(t.task, kind);
      EXPECT_EQ(g.n_prompt_tokens, fake_count(t.prompt));
      // The question is the prompt's tail after the context, and gives no answer away.
      ASSERT_FALSE(t.question.empty());
      ASSERT_LT(t.question.size(), t.prompt.size());
      EXPECT_EQ(t.prompt.substr(t.prompt.size() - t.question.size()), t.question);
      for (const auto& a : t.answers) EXPECT_EQ(t.question.find(a), std::string::npos) << a;
      EXPECT_EQ(parse_tasks(task_to_json_line(t) + "\n", "q")[0].question, t.question);
      EXPECT_LE(g.n_prompt_tokens + t.max_new_tokens, o.n_ctx);
      // Filled to within a few units of the budget (a word or list item is a few tokens).
      EXPECT_GE(g.n_prompt_tokens + t.max_new_tokens, o.n_ctx - 12);
      prompts.insert(t.prompt);
      if (kind == "common-words") {
        // Each of the 10 answers appears freq times; every other word 3 times.
        ASSERT_EQ(t.answers.size(), 10u);
        for (const auto& a : t.answers) EXPECT_GE(occurrences(t.prompt, a), 6) << a;
      } else if (kind == "freq-words") {
        ASSERT_EQ(t.answers.size(), 3u);
        const std::string body = t.prompt.substr(t.prompt.find("\n\n") + 2);
        std::map<std::string, int> count;
        std::istringstream in(body.substr(0, body.find("\n\n")));
        for (std::string w; in >> w;) ++count[w];
        std::vector<int> c;
        for (const auto& [w, n] : count) c.push_back(n);
        std::sort(c.rbegin(), c.rend());
        for (const auto& a : t.answers) EXPECT_GE(count[a], c[2]) << a;  // the top three
        EXPECT_GT(c[2], c[3]);                                           // no tie at third place
      } else {
        for (const auto& a : t.answers) EXPECT_NE(t.prompt.find(a), std::string::npos) << a;
      }
      const std::string context = t.prompt.substr(0, t.prompt.size() - t.question.size());
      if (kind == "niah-multivalue-8" || kind == "niah-multiquery-8") {
        EXPECT_EQ(t.answers.size(), 8u);
        EXPECT_EQ(occurrences(context, "One of the special magic numbers for"), 8);
      } else if (kind == "variable-tracking-10") {
        // The asked chain of 10 variables, and a distractor chain of 10 with another value.
        EXPECT_EQ(t.answers.size(), 10u);
        EXPECT_EQ(occurrences(context, "VAR [A-Z]{5} = [0-9]{5}"), 2);
        EXPECT_EQ(occurrences(context, "VAR [A-Z]{5} = VAR [A-Z]{5}"), 18);
        for (size_t v = 1; v < t.answers.size(); ++v) {  // each hop after the one it follows
          const size_t hop = context.find("VAR " + t.answers[v] + " = VAR " + t.answers[v - 1]);
          ASSERT_NE(hop, std::string::npos) << v;
          EXPECT_LT(context.find("VAR " + t.answers[v - 1] + " = "), hop);
        }
      } else if (kind == "json-records") {
        EXPECT_EQ(t.answers.size(), 12u);  // 4 records x (name, town, year)
        EXPECT_EQ(occurrences(context, "Registry entry"), 4);
        EXPECT_NE(t.question.find("JSON"), std::string::npos);
      } else if (kind == "two-fact") {
        // Where the asked person lives and who holds the post there are far apart (one in each
        // half of the context), and a second person and town make either fact alone useless.
        ASSERT_EQ(t.answers.size(), 1u);
        const size_t post = context.find(" is " + t.answers[0] + ".");
        ASSERT_NE(post, std::string::npos);
        const size_t name_end = t.question.find(" lives?");
        const size_t name_start = t.question.find("town where ") + 11;
        const std::string who = t.question.substr(name_start, name_end - name_start);
        const size_t home = context.find(who + " lives in the town of ");
        ASSERT_NE(home, std::string::npos) << who;
        const size_t gap = post > home ? post - home : home - post;
        EXPECT_GT(gap, context.size() / 5);
        EXPECT_EQ(occurrences(context, "lives in the town of"), 2);
      }
    }
    EXPECT_EQ(prompts.size(), 4u) << kind;  // different tasks
    // Deterministic in the seed; another seed gives other tasks.
    const auto again = generate_tasks(o, text, "book", fake_count, nullptr);
    EXPECT_EQ(again[2].task.prompt, tasks[2].task.prompt);
    o.seed = 8;
    EXPECT_NE(generate_tasks(o, text, "book", fake_count, nullptr)[2].task.prompt,
              tasks[2].task.prompt);
  }
}

TEST(TaskGen, BadRequestsFailClearly) {
  TaskGenOptions o;
  o.kind = "needle";
  expect_error([&] { generate_tasks(o, book(100), "b", fake_count, nullptr); },
               "unknown task kind 'needle' (known: passkey,");
  o.kind = "passkey";
  o.count = 0;
  expect_error([&] { generate_tasks(o, book(100), "b", fake_count, nullptr); }, "--n must be");
  o.count = 1;
  o.n_ctx = 64;  // the instruction, needle and question alone are longer
  expect_error([&] { generate_tasks(o, book(100), "b", fake_count, nullptr); },
               "--ctx 64 is too small for passkey");
  o.n_ctx = 1000;
  expect_error([&] { generate_tasks(o, "few words", "short.txt", fake_count, nullptr); },
               "short.txt");
}

}  // namespace
}  // namespace fasa
