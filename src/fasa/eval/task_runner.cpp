#include "fasa/eval/task_runner.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <utility>

#include "fasa/core/error.h"
#include "fasa/core/interrupt.h"
#include "fasa/engine/generate.h"
#include "fasa/engine/lossless.h"
#include "fasa/engine/session.h"
#include "fasa/eval/choice_score.h"
#include "fasa/eval/shared_prefill.h"
#include "fasa/tokenizer/chat.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Every task's tokens: a generation task's prompt, a choice task's context (as prompt) and
// continuations.
struct TaskTokens {
  std::vector<std::vector<int32_t>> prompts;  // [n_tasks][n_prompt]
  std::vector<ChoiceTokens> choices;          // [n_tasks] empty but for choice tasks
  // [n_tasks] the leading prompt tokens prefilled densely: n_prompt, or under the question
  // protocol the context's (the rest run under the policy)
  std::vector<int> n_context;
};

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Under the question protocol: how many of `prompt`'s tokens (the tokens of `text`, which holds
// the task's prompt) belong to the context. The context's text ends where the question starts;
// its tokens are cut to those it shares with the whole text's, so a token the tokenizer merges
// across the boundary runs with the question.
int context_tokens(const Tokenizer& tok, const Task& task, const std::string& text,
                   const std::vector<int32_t>& prompt, bool special) {
  if (task.question.empty()) {
    fail(
        "task '{}' has no \"question\" (--question-under-policy needs one: fasa gen-tasks "
        "writes it)",
        task.id);
  }
  const size_t at = text.find(task.prompt);
  if (at == std::string::npos) {
    fail("task '{}': the chat format changed the prompt's text; its question cannot be found",
         task.id);
  }
  const size_t q = at + task.prompt.size() - task.question.size();
  const size_t n = common_prefix(tok.encode(text.substr(0, q), true, special), prompt);
  if (n == 0 || n >= prompt.size()) {
    fail("task '{}': its question and context do not split into tokens ({} of {} tokens shared)",
         task.id, n, prompt.size());
  }
  return static_cast<int>(n);
}

TaskTokens tokenize_tasks(const Model& model, const std::vector<Task>& tasks, bool chat,
                          bool question) {
  const Tokenizer& tok = model.require_tokenizer();
  ChatFormat fmt{};
  std::string default_system;
  if (chat) {
    fmt = detect_chat_format(model.file());
    default_system = chat_default_system(model.file());
  }
  TaskTokens t;
  t.prompts.reserve(tasks.size());
  t.choices.resize(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Task& task = tasks[i];
    if (task.metric == TaskMetric::Choice) {
      if (chat) fail("task '{}': a choice task cannot be chat-wrapped (--chat)", task.id);
      try {
        t.choices[i] = choice_tokens(tok, task.prompt, task.choices);
      } catch (const Error& e) {
        fail("task '{}': {}", task.id, e.what());
      }
      if (question) {
        fail(
            "task '{}': a choice task has no question to run under the policy "
            "(--question-under-policy)",
            task.id);
      }
      t.prompts.push_back(t.choices[i].context);
      t.n_context.push_back(static_cast<int>(t.prompts.back().size()));
      continue;
    }
    const std::string text =
        chat ? render_chat(fmt, {{"user", task.prompt}}, true, default_system) : task.prompt;
    t.prompts.push_back(tok.encode(text, true, chat));
    t.n_context.push_back(question ? context_tokens(tok, task, text, t.prompts.back(), chat)
                                   : static_cast<int>(t.prompts.back().size()));
  }
  return t;
}

// Tokens a task adds after its prompt: its max_new_tokens, or its longest continuation.
int tokens_after_prompt(const Task& task, const ChoiceTokens& choice) {
  if (task.metric != TaskMetric::Choice) return task.max_new_tokens;
  size_t n = 0;
  for (const auto& c : choice.continuation) n = std::max(n, c.size());
  return static_cast<int>(n);
}

void check_options(const std::vector<Task>& tasks, const TaskRunOptions& opts,
                   const TaskRunResume& resume) {
  if (tasks.empty()) fail("no tasks to run");
  if (!resume.known.empty() && resume.known.size() != tasks.size()) {
    fail("resume: {} known-outcome rows for {} tasks", resume.known.size(), tasks.size());
  }
  if (!resume.elsewhere.empty() && resume.elsewhere.size() != tasks.size()) {
    fail("resume: {} elsewhere marks for {} tasks", resume.elsewhere.size(), tasks.size());
  }
  if (opts.policies.empty()) fail("no policies to run");
  if (opts.n_ctx < 0) fail("--ctx must be >= 0 (got {})", opts.n_ctx);
  if (opts.jobs < 1) fail("--jobs must be >= 1 (got {})", opts.jobs);
  if (opts.question_under_policy && opts.lossless.k > 0) {
    fail(
        "--question-under-policy cannot be combined with --lossless (the question's steps "
        "would not be full attention's)");
  }
}

// r.n_prompt and r.n_ctx (the option, or the longest prompt + its new tokens); a task that does
// not fit fails here, before any work.
void size_context(const std::vector<Task>& tasks, const TaskTokens& toks,
                  const TaskRunOptions& opts, TaskRunResult& r) {
  int need = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    r.n_prompt.push_back(static_cast<int>(toks.prompts[i].size()));
    r.n_question.push_back(r.n_prompt.back() - toks.n_context[i]);
    need = std::max(need, r.n_prompt.back() + tokens_after_prompt(tasks[i], toks.choices[i]));
  }
  r.n_ctx = opts.n_ctx > 0 ? opts.n_ctx : need;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const int after = tokens_after_prompt(tasks[i], toks.choices[i]);
    if (r.n_prompt[i] + after > r.n_ctx) {
      fail("task '{}': {} prompt tokens + {} {} tokens do not fit in the context of {} tokens",
           tasks[i].id, r.n_prompt[i], after,
           tasks[i].metric == TaskMetric::Choice ? "continuation" : "new", r.n_ctx);
    }
  }
}

// A bad spec fails here, before any work: each policy's session once. (Sessions are made per
// (task, policy) so memory stays at two caches per worker whatever the number of policies.)
void check_sessions(const std::shared_ptr<const Model>& model,
                    const std::vector<std::string>& specs, SessionOptions so,
                    const PolicyContext& pctx) {
  for (const std::string& spec : specs) {
    so.policy = spec;
    const Session check(model, so, pctx);
  }
}

// The tasks to run here; known ones get their outcomes copied into r.
std::vector<size_t> tasks_to_run(const std::vector<Task>& tasks, const TaskRunOptions& opts,
                                 const TaskRunResume& resume, TaskRunResult& r) {
  r.outcome.resize(tasks.size());
  std::vector<size_t> todo;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!resume.elsewhere.empty() && resume.elsewhere[i]) continue;
    if (resume.known.empty() || resume.known[i].empty()) {
      todo.push_back(i);
      continue;
    }
    if (resume.known[i].size() != opts.policies.size()) {
      fail("resume: task '{}' has {} known outcomes for {} policies", tasks[i].id,
           resume.known[i].size(), opts.policies.size());
    }
    r.outcome[i] = resume.known[i];
    r.n_known += 1;
  }
  return todo;
}

// Greedy up to the task's max_new_tokens or its first stop string. contains/all scores never
// drop as text is appended: stop once the score is 1 (the score is the same as generating to
// the limit, for less time). exact runs to the end.
GenerateOptions generate_options(const Task& task) {
  GenerateOptions go;
  go.n_predict = task.max_new_tokens;
  go.sampler.temp = 0.0f;
  go.stop = task.stop;
  if (task.metric != TaskMetric::Exact) {
    go.stop_when = [&task](const std::string& text) {
      return score_output(task.metric, text, task.answers) >= 1.0;
    };
  }
  return go;
}

// Runs the question's tokens (none under the dense-prefill protocol) as decode steps under the
// session's policy, then generates and scores the text.
TaskOutcome generate_outcome(Session& s, const Task& task, const std::vector<int32_t>& question,
                             const GenerateOptions& go, const LosslessOptions& lossless) {
  const AttnStats before = s.attn_stats();
  s.reset_kv_resident_peak();
  for (const int32_t t : question) s.decode(t);
  TaskOutcome o;
  const GenerateResult g = generate_lossless(s, go, lossless, nullptr, &o.lossless);
  o.output = g.text;
  o.score = score_output(task.metric, g.text, task.answers);
  o.partial = partial_credit(task.metric, g.text, task.answers);
  o.n_generated = static_cast<int>(g.tokens.size());
  o.attn = s.attn_stats() - before;
  o.decode_ms = g.decode_ms;
  o.kv_resident_bytes = s.kv_resident_peak_bytes();
  if (o.kv_resident_bytes == 0) o.kv_resident_bytes = s.kv_resident_bytes();  // no decode step
  return o;
}

// A choice task's outcome (the same for every policy): the choices' log-likelihoods.
TaskOutcome choice_outcome(const SharedPrefill& shared, const Task& task, const ChoiceTokens& t) {
  const ChoiceScore cs =
      score_choices([&shared] { return shared.make_dense_session(nullptr); }, t, task.choices);
  TaskOutcome o;
  o.output = task.choices[static_cast<size_t>(cs.pred)];
  o.score = cs.pred == task.gold ? 1.0 : 0.0;
  o.partial = o.score;
  o.choice_logprobs = cs.logprob;
  o.acc_norm = cs.pred_norm == task.gold ? 1.0 : 0.0;
  return o;
}

// One run: the tasks' tokens, the shared prefill's plan, and the result being filled.
struct TaskRun {
  const std::vector<Task>& tasks;
  const TaskRunOptions& opts;
  const std::function<void(int, int)>& progress;
  const TaskRunResume& resume;
  const TaskTokens& toks;
  const SharedPrefill& shared;
  TaskRunResult& r;
  int total = 0;  // generations to run here
  int done = 0;

  // Task i under every policy, each in a fresh session that starts from the prompt's prefill.
  // Returns the seconds spent prefilling and counts the prefills.
  double run_one(size_t i, int* n_prefills) {
    if (tasks[i].metric == TaskMetric::Choice) return run_choice(i, n_prefills);
    // Made per task: the observers' statistics are this prompt's alone.
    const std::vector<int32_t>& tokens = toks.prompts[i];
    const auto split = tokens.begin() + toks.n_context[i];
    PromptPrefill prompt(shared, {tokens.begin(), split}, PromptPrefill::Sources::Pristine);
    const std::vector<int32_t> question(split, tokens.end());  // empty: dense-prefill protocol
    const GenerateOptions go = generate_options(tasks[i]);
    for (size_t p = 0; p < opts.policies.size(); ++p) {
      const auto session = shared.make_session(p);
      prompt.start(p, *session);
      r.outcome[i].push_back(generate_outcome(*session, tasks[i], question, go, opts.lossless));
#pragma omp critical(fasa_task_progress)
      report();
    }
    *n_prefills += prompt.n_prefills();
    task_done(i, prompt.prefill_seconds());
    return prompt.prefill_seconds();
  }

  // A choice task: scored once (dense prefills, counted as one), copied to every policy.
  double run_choice(size_t i, int* n_prefills) {
    const auto t0 = std::chrono::steady_clock::now();
    const TaskOutcome o = choice_outcome(shared, tasks[i], toks.choices[i]);
    for (size_t p = 0; p < opts.policies.size(); ++p) {
      r.outcome[i].push_back(o);
#pragma omp critical(fasa_task_progress)
      report();
    }
    const double s = seconds_since(t0);
    *n_prefills += 1;
    task_done(i, s);
    return s;
  }

  void report() {  // one call per finished generation, never concurrently
    if (progress) progress(++done, total);
  }

  void task_done(size_t i, double prefill_s) {
    if (!resume.on_task_done) return;
    std::exception_ptr err;  // an exception must not leave the critical section
#pragma omp critical(fasa_task_progress)
    {
      try {
        resume.on_task_done(i, r.n_prompt[i], r.outcome[i], prefill_s);
      } catch (...) {
        err = std::current_exception();
      }
    }
    if (err) std::rethrow_exception(err);
  }

  // Tasks in parallel, one thread each: inside a parallel region every kernel runs on its
  // calling thread (parallel_for), and results do not depend on the thread count.
  void run_parallel(const std::vector<size_t>& todo, int jobs) {
    std::string error;
    const InterruptCheck* check = current_interrupt_check();
#pragma omp parallel num_threads(jobs)
    {
      const InterruptScope caller_check(check);  // each job thread stops as the caller would
#pragma omp for schedule(dynamic, 1)
      for (int64_t n = 0; n < static_cast<int64_t>(todo.size()); ++n) {
        try {
          int n_prefills = 0;
          const double s = run_one(todo[static_cast<size_t>(n)], &n_prefills);
#pragma omp critical(fasa_task_progress)
          {
            r.prefill_seconds += s;
            r.n_prefills += n_prefills;
          }
        } catch (const std::exception& e) {
#pragma omp critical(fasa_task_progress)
          if (error.empty()) error = e.what();
        }
      }
    }
    if (!error.empty()) fail("{}", error);
  }
};

}  // namespace

TaskRunResult run_tasks(const std::shared_ptr<const Model>& model, const std::vector<Task>& tasks,
                        const TaskRunOptions& opts, const std::function<void(int, int)>& progress,
                        const TaskRunResume& resume) {
  check_options(tasks, opts, resume);
  const auto t_start = std::chrono::steady_clock::now();
  TaskRunResult r;
  r.policies = opts.policies;
  const TaskTokens toks = tokenize_tasks(*model, tasks, opts.chat, opts.question_under_policy);
  size_context(tasks, toks, opts, r);
  SessionOptions so;
  so.n_ctx = r.n_ctx;
  so.kv_type = opts.kv_type;
  so.prefill_chunk = opts.prefill_chunk;
  // One policy context for every session: the model file is hashed once (a calibrated policy
  // checks it), not once per session.
  const PolicyContext pctx = policy_context(model);
  check_sessions(model, opts.policies, so, pctx);
  // Which settings start from the shared dense prefill (all but a few prefill-aware ones).
  const SharedPrefill shared(model, opts.policies, so, pctx);
  shared.make_dense_session(shared.make_observers().get());  // (its errors before any work too)
  const std::vector<size_t> todo = tasks_to_run(tasks, opts, resume, r);
  TaskRun run{tasks, opts, progress, resume, toks, shared, r};
  run.total = static_cast<int>(todo.size() * opts.policies.size());
  const int jobs = std::min<int>(opts.jobs, static_cast<int>(todo.size()));  // 0: all known
  if (jobs == 1) {
    for (size_t i : todo) r.prefill_seconds += run.run_one(i, &r.n_prefills);
  } else if (jobs > 1) {
    run.run_parallel(todo, jobs);
  }
  r.seconds = seconds_since(t_start);
  return r;
}

const char* protocol_name(bool question_under_policy) {
  return question_under_policy ? "question-under-policy" : "dense-prefill";
}

TaskScoreTable score_table(const std::vector<Task>& tasks, const TaskRunResult& r, bool partial) {
  const size_t n_pol = r.policies.size();
  TaskScoreTable t;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto [it, added] = index.emplace(tasks[i].task, t.kinds.size());
    if (added) {
      t.kinds.push_back(tasks[i].task);
      t.count.push_back(0);
      t.mean.emplace_back(n_pol, 0.0);
    }
    const size_t k = it->second;
    t.count[k] += 1;
    for (size_t p = 0; p < n_pol; ++p) {
      const TaskOutcome& o = r.outcome[i][p];
      t.mean[k][p] += partial ? o.partial : o.score;
    }
  }
  t.overall.assign(n_pol, 0.0);
  t.kind_average.assign(n_pol, 0.0);
  for (size_t k = 0; k < t.kinds.size(); ++k) {
    for (size_t p = 0; p < n_pol; ++p) {
      t.overall[p] += t.mean[k][p] / tasks.size();
      t.mean[k][p] /= t.count[k];
      t.kind_average[p] += t.mean[k][p] / t.kinds.size();
    }
  }
  return t;
}

}  // namespace fasa
