// The server's engine on the real SmolLM2: batched jobs with different policies give exactly a
// lone generate()'s text; cancellation frees the slot and the KV memory; a full queue refuses;
// a policy that cannot start fails its job only.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fasa/engine/generate.h"
#include "fasa/engine/prompt.h"
#include "fasa/engine/session.h"
#include "fasa/model/model.h"
#include "fasa/server/scheduler.h"
#include "support/model_path.h"

namespace fasa::server {
namespace {

using namespace std::chrono_literals;

GenerateOptions greedy(int n) {
  GenerateOptions g;
  g.n_predict = n;
  g.sampler.temp = 0.0f;
  return g;
}

// Waits for the job's end; returns its text (error text prefixed with "ERROR: "). The bound is
// only a hang guard (10 minutes: ctest's per-test limit is 15), not a speed check: on a busy
// machine a batch of SmolLM2 jobs has taken over a minute.
std::string collect(Job& job) {
  std::string text;
  for (int i = 0; i < 60000; ++i) {
    Job::Update u = job.wait(10ms);
    text += u.text;
    if (u.finished) return u.error.empty() ? text : "ERROR: " + u.error;
  }
  return "TIMEOUT";
}

// Polls until pred() or ~60 s (a hang guard, not a speed check).
template <typename F>
bool eventually(F pred) {
  for (int i = 0; i < 6000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

struct Case {
  std::string prompt;
  std::string policy;
  int n;
};

// The printed names (`fasa run`'s "stop: ...") and the OpenAI finish_reason of each stop reason.
TEST(StopReasonTest, NamesAndFinishReasons) {
  const std::vector<std::pair<StopReason, std::string>> names = {{StopReason::None, "none"},
                                                                 {StopReason::Eos, "eos"},
                                                                 {StopReason::Stop, "stop"},
                                                                 {StopReason::Length, "length"},
                                                                 {StopReason::Context, "context"},
                                                                 {StopReason::Done, "done"}};
  for (const auto& [r, n] : names) {
    EXPECT_EQ(name(r), n);
    const bool cut = r == StopReason::Length || r == StopReason::Context;
    EXPECT_STREQ(finish_reason(r), cut ? "length" : "stop") << n;
  }
}

TEST(SchedulerTest, BatchedJobsEqualALoneGenerate) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  auto model = Model::load(path);
  const std::vector<Case> cases = {
      {"The capital of France is", "full", 24},
      {"Once upon a time, in a small village by the sea, there lived", "streaming:budget=8", 32},
      {"def fibonacci(n):", "oracle:budget=6", 28},
      {"List three colors of the rainbow: red,", "h2o:budget=10", 20},
      {"Water boils at", "full", 16},
  };
  for (int parallel : {4, 2}) {  // 2: some jobs wait in the queue and join mid-flight
    SchedulerOptions so;
    so.parallel = parallel;
    so.session.n_ctx = 256;
    so.session.prefill_chunk = 8;  // several prefill chunks per prompt, mixed with decodes
    Scheduler sched(model, so);
    std::vector<std::shared_ptr<Job>> jobs;
    for (const Case& c : cases) {
      jobs.push_back(
          std::make_shared<Job>(text_prompt_tokens(*model, c.prompt), greedy(c.n), c.policy));
      ASSERT_TRUE(sched.submit(jobs.back()));
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string got = collect(*jobs[i]);
      SessionOptions lone;
      lone.n_ctx = 256;
      lone.prefill_chunk = 8;
      lone.policy = cases[i].policy;
      Session s(model, lone);
      const GenerateResult want =
          generate(s, text_prompt_tokens(*model, cases[i].prompt), greedy(cases[i].n), nullptr);
      EXPECT_EQ(got, want.text) << cases[i].policy << ", parallel " << parallel;
      const JobResult r = jobs[i]->result();
      EXPECT_EQ(r.completion_tokens, static_cast<int>(want.tokens.size()));
      EXPECT_EQ(r.stop_reason, want.stop_reason);
      EXPECT_EQ(r.kv_bytes_read, s.attn_stats().bytes_read()) << cases[i].policy;
    }
    const SchedulerStats st = sched.stats();
    EXPECT_EQ(st.jobs_finished, cases.size());
    EXPECT_EQ(st.per_policy.at("full").jobs, 2u);
    EXPECT_GT(st.per_policy.at("streaming").kv_bytes_read, 0u);
    EXPECT_LT(st.batched_rows, st.steps * static_cast<uint64_t>(parallel) + 1);
    EXPECT_GT(st.batched_rows, st.steps);  // some steps really were batched
    EXPECT_TRUE(eventually([&] { return sched.stats().active == 0; }));
  }
}

// With the prompt cache on, a document and questions about it: the later jobs start from the
// cached document and still give exactly a lone generate()'s text.
TEST(SchedulerTest, PromptCacheGivesTheUncachedAnswer) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  auto model = Model::load(path);
  const std::string doc =
      "The lighthouse keeper, Mara, kept a ledger of every ship that passed the point: the "
      "Heron on Monday, the Saltmarsh on Wednesday, and the old ferry Lantern each evening.\n";
  const std::vector<std::string> questions = {"", "Which ship passed on Wednesday?",
                                              "Who kept the ledger?"};
  SchedulerOptions so;
  so.parallel = 2;
  so.session.n_ctx = 256;
  so.session.prefill_chunk = 8;
  so.prompt_cache_bytes = 64u << 20;
  Scheduler sched(model, so);
  for (const std::string policy : {"full", "streaming:budget=8", "h2o:budget=10"}) {
    for (size_t q = 0; q < questions.size(); ++q) {
      // The document's tokens cut to whole prefill chunks (8), so that the document alone is an
      // entry prefill-aware policies may start from.
      auto prompt = text_prompt_tokens(*model, doc);
      prompt.resize(prompt.size() / 8 * 8);
      const auto question = text_prompt_tokens(*model, questions[q]);
      prompt.insert(prompt.end(), question.begin(), question.end());
      auto job = std::make_shared<Job>(prompt, greedy(12), policy);
      ASSERT_TRUE(sched.submit(job));
      const std::string got = collect(*job);
      SessionOptions lone;
      lone.n_ctx = 256;
      lone.prefill_chunk = 8;
      lone.policy = policy;
      Session s(model, lone);
      EXPECT_EQ(got, generate(s, prompt, greedy(12), nullptr).text) << policy << ", " << q;
      const int cached = job->result().cached_tokens;
      if (q > 0) {
        EXPECT_GT(cached, 20) << policy << ", " << q;  // the document, at least
      }
      EXPECT_LE(cached, static_cast<int>(prompt.size())) << policy << ", " << q;
    }
  }
  const SchedulerStats st = sched.stats();
  EXPECT_GE(st.prompt_cache.hits, 6u);
  EXPECT_GT(st.prompt_cache.bytes, 0u);
}

// Lossless jobs (engine/lossless.h) beside plain ones: each decodes outside the batch, one
// verification per step, and its text is full attention's.
TEST(SchedulerTest, LosslessJobsGiveFullAttentionsText) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  auto model = Model::load(path);
  const std::vector<Case> cases = {
      {"Once upon a time, in a small village by the sea, there lived", "streaming:budget=8", 32},
      {"def fibonacci(n):", "h2o:budget=10", 28},
      {"List three colors of the rainbow: red,", "full", 20},
  };
  SchedulerOptions so;
  so.parallel = 3;
  so.session.n_ctx = 256;
  so.session.prefill_chunk = 8;
  Scheduler sched(model, so);
  std::vector<std::shared_ptr<Job>> jobs;
  for (size_t i = 0; i < cases.size(); ++i) {
    LosslessOptions lo = parse_lossless(i == 0 ? "3" : i == 1 ? "auto" : "off");
    jobs.push_back(std::make_shared<Job>(text_prompt_tokens(*model, cases[i].prompt),
                                         greedy(cases[i].n), cases[i].policy, lo));
    ASSERT_TRUE(sched.submit(jobs.back()));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string got = collect(*jobs[i]);
    SessionOptions lone;
    lone.n_ctx = 256;
    Session s(model, lone);  // full attention
    const GenerateResult want =
        generate(s, text_prompt_tokens(*model, cases[i].prompt), greedy(cases[i].n), nullptr);
    EXPECT_EQ(got, want.text) << cases[i].policy;
    const JobResult r = jobs[i]->result();
    EXPECT_EQ(r.completion_tokens, static_cast<int>(want.tokens.size()));
    if (i < 2) {
      EXPECT_GT(r.lossless.verifications, 0) << cases[i].policy;
      EXPECT_EQ(r.lossless.tokens, r.completion_tokens);
    }
  }
  EXPECT_EQ(sched.stats().jobs_finished, cases.size());
}

TEST(SchedulerTest, CancelFreesTheSlotAndItsMemory) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  auto model = Model::load(path);
  SchedulerOptions so;
  so.parallel = 2;
  so.session.n_ctx = 1024;
  Scheduler sched(model, so);
  auto job =
      std::make_shared<Job>(text_prompt_tokens(*model, "1, 2, 3, 4, 5, 6,"), greedy(1000), "full");
  ASSERT_TRUE(sched.submit(job));
  ASSERT_TRUE(eventually([&] { return sched.stats().generated_tokens >= 3; }));
  EXPECT_EQ(sched.stats().active, 1);
  EXPECT_GT(sched.stats().kv_bytes_allocated, 0u);
  job->cancel();
  EXPECT_TRUE(eventually([&] {
    const SchedulerStats s = sched.stats();
    return s.active == 0 && s.kv_bytes_allocated == 0 && s.jobs_cancelled == 1;
  }));
  EXPECT_EQ(collect(*job), "ERROR: cancelled");
  EXPECT_EQ(sched.stats().jobs_finished, 0u);
}

TEST(SchedulerTest, FullQueueRefusesAndBadPolicyFailsOnlyItsJob) {
  FASA_MODEL_OR_SKIP(path, test::smollm2_path);
  auto model = Model::load(path);
  SchedulerOptions so;
  so.parallel = 1;
  so.max_queue = 1;
  so.session.n_ctx = 512;
  Scheduler sched(model, so);
  const auto prompt = text_prompt_tokens(*model, "Count:");
  auto running = std::make_shared<Job>(prompt, greedy(400), "full");
  ASSERT_TRUE(sched.submit(running));
  ASSERT_TRUE(eventually([&] { return sched.stats().active == 1; }));
  auto bad = std::make_shared<Job>(prompt, greedy(4), "fasa:budget=8,calib=/nonexistent.json");
  ASSERT_TRUE(sched.submit(bad));  // the queue's one place (the slot is taken)
  EXPECT_FALSE(sched.submit(std::make_shared<Job>(prompt, greedy(4), "full")));
  EXPECT_EQ(sched.stats().queued, 1);
  running->cancel();
  const std::string err = collect(*bad);
  EXPECT_NE(err.find("ERROR: "), std::string::npos) << err;
  EXPECT_NE(err.find("calib"), std::string::npos) << err;
  EXPECT_TRUE(eventually([&] { return sched.stats().jobs_failed == 1; }));
  auto ok = std::make_shared<Job>(prompt, greedy(3), "full");
  ASSERT_TRUE(sched.submit(ok));
  EXPECT_EQ(collect(*ok).rfind("ERROR", 0), std::string::npos);
}

}  // namespace
}  // namespace fasa::server
