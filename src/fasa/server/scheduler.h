// The server's engine: one thread runs up to `parallel` sequences, each with its own KV cache
// and policy, and batches their steps (prefill chunks and decode tokens) into one forward pass
// each (continuous batching: a sequence joins or leaves between steps). Jobs beyond the slots
// wait in a bounded queue. A cancelled job is dropped at the next step and its memory freed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fasa/engine/generate.h"
#include "fasa/engine/lossless.h"
#include "fasa/engine/prompt_cache.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"

namespace fasa::server {

struct JobResult {
  StopReason stop_reason = StopReason::None;  // generate()'s
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;            // prompt tokens the prompt cache gave (not prefilled)
  uint64_t kv_bytes_read = 0;       // at decode steps (selection side data included)
  uint64_t decode_tokens = 0;       // decode steps that read them
  LosslessStats lossless;           // a lossless job's decoder counts (its KV reads are in
                                    // kv_bytes_read: drafts and verifications)
  double ttft_seconds = -1.0;       // submit to the first sampled token (-1: none sampled)
  double per_token_seconds = -1.0;  // mean time per token after the first (-1: fewer than 2)
  double prompt_seconds = 0.0;      // slot taken to the first sampled token (the prefill)
  double predicted_seconds = 0.0;   // the first sampled token to the last
};

// One generation request, shared by the thread that submitted it and the engine thread.
class Job {
 public:
  Job(std::vector<int32_t> prompt, GenerateOptions gen, std::string policy,
      LosslessOptions lossless = {}, std::string cache_scope = {})
      : prompt(std::move(prompt)),
        gen(std::move(gen)),
        policy(std::move(policy)),
        lossless(lossless),
        cache_scope(std::move(cache_scope)) {}

  const std::vector<int32_t> prompt;
  const GenerateOptions gen;
  const std::string policy;  // the full policy spec
  // k >= 1: the policy drafts and full attention verifies (engine/lossless.h). Such a job's
  // decode runs outside the shared batch: one verification per engine step, after the batch.
  const LosslessOptions lossless;
  // Whose prompt this is (engine/prompt_cache.h): the job reuses and leaves prompt-cache entries
  // of this scope only.
  const std::string cache_scope;

  // What the engine produced since the last wait(): new text, and whether the job ended (then
  // either error is set or result() is final).
  struct Update {
    std::string text;
    std::vector<TokenLogprob> logprobs;  // of the tokens sampled since (GenerateOptions::logprobs)
    bool finished = false;
    std::string error;
  };
  // Blocks until there is new text or the end, or the timeout passes (an empty update).
  Update wait(std::chrono::milliseconds timeout);
  // The client is gone: the engine drops the job at its next step and frees its sequence.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  JobResult result() const;

 private:
  friend class Scheduler;
  void push(const std::string& text, const std::vector<TokenLogprob>* logprobs = nullptr,
            size_t logprobs_from = 0);
  void finish(const JobResult& r);
  void fail(const std::string& error);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  std::vector<TokenLogprob> pending_logprobs_;
  std::chrono::steady_clock::time_point submitted_;  // set by Scheduler::submit
  bool finished_ = false;
  bool reported_ = false;  // the end has been handed to wait()
  std::string error_;
  JobResult result_;
  std::atomic<bool> cancelled_{false};
};

struct SchedulerOptions {
  int parallel = 4;        // sequences at once (slots)
  int max_queue = 32;      // jobs waiting for a slot; more are refused
  SessionOptions session;  // context, KV type, prefill chunk (the policy comes with each job)
  // The prompt cache's byte budget (engine/prompt_cache.h): every job's prefilled prompt is
  // kept for later jobs that start the same way; 0 = off.
  uint64_t prompt_cache_bytes = 0;
};

// Counters per policy name (the spec's name part).
struct PolicyCounters {
  uint64_t jobs = 0;  // finished
  uint64_t decode_tokens = 0;
  uint64_t kv_bytes_read = 0;
};

struct SchedulerStats {
  int active = 0;  // sequences holding a slot
  int queued = 0;
  uint64_t kv_bytes_allocated = 0;  // capacity of the active sequences' caches
  uint64_t kv_bytes_ram = 0;        // resident in RAM / in the file tier (FASA-M)
  uint64_t kv_bytes_file = 0;
  uint64_t steps = 0;         // forward passes
  uint64_t batched_rows = 0;  // sequences summed over steps (mean batch = rows / steps)
  uint64_t prompt_tokens = 0;
  uint64_t generated_tokens = 0;
  uint64_t jobs_finished = 0, jobs_cancelled = 0, jobs_failed = 0;
  double tokens_per_second = 0.0;  // generated, over the last few seconds
  std::map<std::string, PolicyCounters> per_policy;
  PromptCacheStats prompt_cache;
};

class Scheduler {
 public:
  Scheduler(std::shared_ptr<const Model> model, const SchedulerOptions& opts);
  ~Scheduler();  // stops the engine; unfinished jobs fail with "the server is shutting down"
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job; false (nothing queued) when every slot is taken and max_queue jobs wait.
  bool submit(std::shared_ptr<Job> job);
  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return opts_; }
  const PolicyContext& policy_context() const { return policy_ctx_; }

 private:
  struct Active;
  void loop();
  void admit(std::vector<Active>& active);
  void step(std::vector<Active>& active);  // its steps:
  void drop_cancelled(std::vector<Active>& active);
  std::vector<SessionChunk> plan_chunks(std::vector<Active>& active, std::vector<size_t>& sampled);
  bool forward_or_fail(std::vector<Active>& active, const std::vector<SessionChunk>& chunks);
  int sample(std::vector<Active>& active, const std::vector<size_t>& sampled,
             std::vector<bool>& done);
  bool start_lossless(Active& a);
  int lossless_cycles(std::vector<Active>& active, const std::vector<size_t>& cycling,
                      std::vector<bool>& done);
  void count_step(size_t n_rows, int generated);
  void retire(Active& a, bool cancelled);
  void update_gauges(const std::vector<Active>& active);

  std::shared_ptr<const Model> model_;
  SchedulerOptions opts_;
  PolicyContext policy_ctx_;
  ForwardScratch scratch_;    // engine thread only
  PromptCache prompt_cache_;  // engine thread only (its stats are copied into stats_)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
  int n_active_ = 0;  // jobs holding a slot (exact; stats_.active is refreshed per step)
  SchedulerStats stats_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, int>> recent_;  // (time, tokens)
  std::thread thread_;
};

// The OpenAI finish_reason of a stop reason: "stop" (end of sequence, stop string) or "length"
// (token limit, context end).
const char* finish_reason(StopReason stop_reason);

}  // namespace fasa::server
