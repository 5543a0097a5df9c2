// Multiple-choice scoring by log-likelihood (eval/choice_score.h) and choice tasks in the task
// runner, against a brute-force computation: one session per choice over the whole sequence.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fasa/engine/session.h"
#include "fasa/eval/choice_score.h"
#include "fasa/eval/task_runner.h"
#include "fasa/eval/tasks.h"
#include "fasa/model/model.h"
#include "fasa/tokenizer/tokenizer.h"
#include "support/expect_error.h"
#include "support/model_path.h"

namespace fasa {
namespace {

using test::expect_error;

std::shared_ptr<const Model> smollm2(const std::string& path) {
  static std::shared_ptr<const Model> model = Model::load(path);
  return model;
}

// log softmax(row)[id] in double, by hand.
double log_prob(const float* row, int n_vocab, int32_t id) {
  double mx = row[0];
  for (int v = 1; v < n_vocab; ++v) mx = std::max(mx, static_cast<double>(row[v]));
  double sum = 0.0;
  for (int v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - mx);
  return static_cast<double>(row[id]) - mx - std::log(sum);
}

// The continuation's summed log-probability from one full-attention session over context +
// continuation, one token per step.
double brute_force(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& context,
                   const std::vector<int32_t>& cont) {
  std::vector<int32_t> all = context;
  all.insert(all.end(), cont.begin(), cont.end());
  SessionOptions so;
  so.n_ctx = static_cast<int>(all.size());
  Session s(model, so);
  const int n_vocab = model->config().n_vocab;
  const std::vector<float> logits =
      s.eval_all(std::vector<int32_t>(all.begin(), all.end() - 1), 1);  // [n - 1, n_vocab]
  double sum = 0.0;
  for (size_t j = context.size(); j < all.size(); ++j) {
    sum += log_prob(logits.data() + (j - 1) * static_cast<size_t>(n_vocab), n_vocab, all[j]);
  }
  return sum;
}

TEST(ChoiceScore, Utf8LengthCountsCharacters) {
  EXPECT_EQ(utf8_length(""), 0u);
  EXPECT_EQ(utf8_length(" Paris"), 6u);
  EXPECT_EQ(utf8_length("caf\xC3\xA9"), 4u);  // é is two bytes, one character
  EXPECT_EQ(utf8_length("\xE2\x82\xAC"
                        "5"),
            2u);  // € is three bytes
}

// lm-eval's split: trailing white space of the prompt moves to the continuation; the
// continuation's tokens are those of the whole text past the context's.
TEST(ChoiceScore, TokensSplitAsLmEvalDoes) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const Tokenizer& tok = smollm2(path)->require_tokenizer();
  const std::vector<std::string> choices = {"Paris", "Rome"};
  const ChoiceTokens a = choice_tokens(tok, "The capital of France is ", choices);
  const ChoiceTokens b = choice_tokens(tok, "The capital of France is", {" Paris", " Rome"});
  EXPECT_EQ(a.context, b.context);
  EXPECT_EQ(a.continuation, b.continuation);
  EXPECT_EQ(a.context, tok.encode("The capital of France is", true, false));
  for (size_t c = 0; c < choices.size(); ++c) {
    std::vector<int32_t> all = a.context;
    all.insert(all.end(), a.continuation[c].begin(), a.continuation[c].end());
    EXPECT_EQ(all, tok.encode("The capital of France is " + choices[c], true, false));
    EXPECT_EQ(tok.decode(a.continuation[c]), " " + choices[c]);
  }
  if (!tok.adds_bos()) {
    expect_error([&] { choice_tokens(tok, " \n ", choices); }, "the prompt has no tokens");
  }
}

TEST(ChoiceScore, EqualsABruteForceSumAndPicksTheArgmax) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto model = smollm2(path);
  const Tokenizer& tok = model->require_tokenizer();
  const std::string prompt = "Question: What color is the clear daytime sky?\nAnswer:";
  const std::vector<std::string> choices = {" green", " blue", " a shade of purple", " x"};
  const ChoiceTokens t = choice_tokens(tok, prompt, choices);
  SessionOptions so;
  so.n_ctx = 64;
  so.prefill_chunk = 8;  // several chunks for the context
  const ChoiceScore s =
      score_choices([&] { return std::make_unique<Session>(model, so); }, t, choices);
  ASSERT_EQ(s.logprob.size(), choices.size());
  int pred = 0, pred_norm = 0;
  for (size_t c = 0; c < choices.size(); ++c) {
    const double want = brute_force(model, t.context, t.continuation[c]);
    EXPECT_NEAR(s.logprob[c], want, 2e-3 * std::max(1.0, std::abs(want))) << choices[c];
    EXPECT_LT(s.logprob[c], 0.0);
    if (s.logprob[c] > s.logprob[static_cast<size_t>(pred)]) pred = static_cast<int>(c);
    if (s.logprob[c] / static_cast<double>(choices[c].size()) >
        s.logprob[static_cast<size_t>(pred_norm)] /
            static_cast<double>(choices[static_cast<size_t>(pred_norm)].size())) {
      pred_norm = static_cast<int>(c);
    }
  }
  EXPECT_EQ(s.pred, pred);
  EXPECT_EQ(s.pred_norm, pred_norm);
  EXPECT_EQ(choices[static_cast<size_t>(s.pred)], " blue");  // the model knows this one
  // The longer choice's per-character normalisation moves the pick: check it is computed on
  // characters, with a choice long enough to matter.
  EXPECT_LT(s.logprob[2], s.logprob[1]);
}

// Through the runner: the outcome is the same for every policy, the output is the chosen text,
// acc and acc_norm come from the log-probabilities; chat and a short context are refused.
TEST(ChoiceScore, TaskRunnerScoresChoiceTasksOncePerTask) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  const auto model = smollm2(path);
  const std::vector<Task> tasks = parse_tasks(
      R"({"id": "a", "task": "mc", "prompt": "The capital of France is", "choices": [" Paris", " Berlin", " a city"], "gold": 0, "metric": "choice"})"
      "\n"
      R"({"id": "b", "task": "mc", "prompt": "One, two, three,", "choices": [" banana", " four"], "gold": 0, "metric": "choice"})"
      "\n"
      R"({"id": "c", "task": "gen", "prompt": "The capital of France is", "answers": ["Paris"], "max_new_tokens": 6, "metric": "exact", "stop": ["."]})"
      "\n",
      "t.jsonl");
  TaskRunOptions o;
  o.policies = {"full", "streaming:budget=4,sinks=1"};
  const TaskRunResult r = run_tasks(model, tasks, o, nullptr);
  const Tokenizer& tok = model->require_tokenizer();
  for (size_t i = 0; i < 2; ++i) {
    const ChoiceTokens t = choice_tokens(tok, tasks[i].prompt, tasks[i].choices);
    EXPECT_EQ(r.n_prompt[i], static_cast<int>(t.context.size()));
    const auto& out = r.outcome[i];
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].choice_logprobs, out[1].choice_logprobs);
    ASSERT_EQ(out[0].choice_logprobs.size(), tasks[i].choices.size());
    size_t best = 0;
    for (size_t c = 0; c < tasks[i].choices.size(); ++c) {
      EXPECT_NEAR(out[0].choice_logprobs[c], brute_force(model, t.context, t.continuation[c]),
                  2e-2);
      if (out[0].choice_logprobs[c] > out[0].choice_logprobs[best]) best = c;
    }
    EXPECT_EQ(out[0].output, tasks[i].choices[best]);
    EXPECT_EQ(out[0].score, best == static_cast<size_t>(tasks[i].gold) ? 1.0 : 0.0);
    EXPECT_EQ(out[0].partial, out[0].score);
  }
  EXPECT_EQ(r.outcome[0][0].score, 1.0);  // Paris
  EXPECT_EQ(r.outcome[1][0].score, 0.0);  // "four" is likelier than the gold "banana"
  // The generation task stops before its stop string.
  EXPECT_EQ(r.outcome[2][0].output.find('.'), std::string::npos) << r.outcome[2][0].output;

  o.chat = true;
  expect_error([&] { run_tasks(model, tasks, o, nullptr); },
               "task 'a': a choice task cannot be chat-wrapped");
  o.chat = false;
  o.n_ctx = 6;
  expect_error([&] { run_tasks(model, {tasks[0]}, o, nullptr); },
               "task 'a': 5 prompt tokens + 2 continuation tokens do not fit");
}

}  // namespace
}  // namespace fasa
