// Runs long-context tasks (eval/tasks.h) under several attention policies. Each prompt's dense
// prefill is computed once and its KV cache copied into a fresh session per policy
// (Session::copy_prefix_from: exactly the state the policy's own dense prefill would give), so
// N policies cost one prefill and N generations. Prefill-aware policies (SnapKV, PyramidKV,
// H2O) take their prefill statistics from the same prefill, which watches it for them
// (attention/prefill_observers.h); only a second spec of one such policy with other prefill
// options (another observation window) prefills the prompt again itself. Generation is greedy.
// Multiple-choice tasks (metric "choice") are scored by log-likelihood with dense attention
// (eval/choice_score.h), once per task: the outcome is the same for every policy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/attention.h"
#include "fasa/attention/kv_cache.h"
#include "fasa/engine/lossless.h"
#include "fasa/eval/tasks.h"
#include "fasa/model/model.h"

namespace fasa {

struct TaskRunOptions {
  std::vector<std::string> policies = {"full"};  // specs (attention/policy.h), one result each
  bool chat = false;  // wrap each prompt as one user turn of the model's chat format
  int n_ctx = 0;      // 0: the longest prompt + its max_new_tokens
  KvType kv_type = KvType::F16;
  int prefill_chunk = 256;
  // Tasks run in parallel, one thread each (kernels then run single-threaded). On a few cores
  // this avoids the cost of synchronizing threads at every small decode step; the results are
  // the same for any value.
  int jobs = 1;
  // Lossless decoding (engine/lossless.h): every policy drafts, full attention verifies, so
  // every output is full attention's; what changes is the time and the bytes read.
  LosslessOptions lossless;
  // The protocol. false (dense prefill): the whole prompt is prefilled densely, the question
  // included, and the policy acts from the first generated token. true (question under the
  // policy): only the context (the prompt without its Task::question; with `chat`, the rendered
  // turn up to where the question starts) is prefilled densely and shared; the rest — the
  // question and the chat format's closing tokens — runs token by token as decode steps under
  // each policy, then the answer is generated. Every task needs a question; choice tasks and
  // lossless decoding are refused (the question's rows would differ from full attention's).
  bool question_under_policy = false;
};

// The protocol's name in results: "question-under-policy" or "dense-prefill".
const char* protocol_name(bool question_under_policy);

struct TaskOutcome {
  std::string output;    // generated text (a choice task: the chosen choice)
  double score = 0.0;    // score_output(task.metric, output, task.answers); choice: acc
  double partial = 0.0;  // partial_credit(task.metric, output, task.answers); choice: acc
  // Choice tasks only: each choice's summed log-probability ([n_choices]), and acc_norm (1 when
  // the argmax of log-probability per character is the gold choice). Not kept in checkpoints.
  std::vector<double> choice_logprobs;
  double acc_norm = 0.0;
  int n_generated = 0;  // tokens
  AttnStats attn;       // decode-step reads of this generation (and of the question's steps
                        // under TaskRunOptions::question_under_policy)
  double decode_ms = 0.0;
  LosslessStats lossless;  // with TaskRunOptions::lossless (not kept in sweep checkpoints)
  // The peak over the generation's decode steps of the KV bytes its session held that the policy
  // can still read (Session::kv_resident_bytes: rows not evicted + side data); the state after
  // the prefill when there was no decode step. 0: not recorded (a checkpoint line written before
  // it was).
  uint64_t kv_resident_bytes = 0;
};

// A resumed run (eval/sweep_checkpoint.h): what is known already, and where finished tasks go.
struct TaskRunResume {
  // [n_tasks]: a task's outcomes ([n_policies]) when known, or empty to run it. Known tasks are
  // not run; their outcomes are copied into the result. Empty: run every task.
  std::vector<std::vector<TaskOutcome>> known;
  // [n_tasks]: 1 for a task another shard runs (`eval sweep --shard`): neither run nor known,
  // its outcome row stays empty. Empty: none.
  std::vector<char> elsewhere;
  // Called once per task run here (not for known ones), never concurrently: its index, its
  // outcomes ([n_policies]) and the seconds spent prefilling it. May be null.
  std::function<void(size_t task, int n_prompt, const std::vector<TaskOutcome>& outcomes,
                     double prefill_seconds)>
      on_task_done;
};

struct TaskRunResult {
  std::vector<std::string> policies;  // [n_policies]
  std::vector<int> n_prompt;          // [n_tasks] prompt tokens (chat-wrapped;
                                      // a choice task's context)
  std::vector<int> n_question;        // [n_tasks] of those, the tokens run under the policy
                                      // (question_under_policy; 0 otherwise)
  std::vector<std::vector<TaskOutcome>> outcome;  // [n_tasks][n_policies]
  int n_ctx = 0;
  double prefill_seconds = 0.0;  // the shared dense prefills and prefill-aware policies' own
                                 // (summed over workers; tasks run here, not known ones)
  double seconds = 0.0;          // this run's wall time
  int n_known = 0;               // tasks whose outcomes came from TaskRunResume::known
  int n_prefills = 0;            // prompt prefills run here (one per task, unless a setting
                                 // needs its own)
};

// Tokenizes every prompt first: a prompt that does not fit (with its max_new_tokens, or a
// choice task's longest continuation) throws fasa::Error naming the task, before any work; so
// does a choice task with `chat`, and with question_under_policy a task without a question or
// one whose question cannot be found in its chat-rendered prompt. Each policy spec is checked by making it once.
// `progress(done, total)` counts the (task, policy) generations run here; may be null.
TaskRunResult run_tasks(const std::shared_ptr<const Model>& model, const std::vector<Task>& tasks,
                        const TaskRunOptions& opts, const std::function<void(int, int)>& progress,
                        const TaskRunResume& resume = {});

// Per task kind (in order of first appearance) and overall: the mean score of each policy.
struct TaskScoreTable {
  std::vector<std::string> kinds;         // [n_kinds]
  std::vector<int> count;                 // [n_kinds] tasks per kind
  std::vector<std::vector<double>> mean;  // [n_kinds][n_policies]
  std::vector<double> overall;            // [n_policies] mean over every task
  std::vector<double> kind_average;       // [n_policies] mean of the kinds' means
};
// The table of TaskOutcome::score, or (partial = true) of TaskOutcome::partial.
TaskScoreTable score_table(const std::vector<Task>& tasks, const TaskRunResult& r,
                           bool partial = false);

}  // namespace fasa
