#include "fasa/server/scheduler.h"

#include <algorithm>

#include "fasa/core/error.h"
#include "fasa/tokenizer/tokenizer.h"

namespace fasa::server {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRateWindow = std::chrono::seconds(10);  // tokens/s over this much history

std::string policy_name(const std::string& spec) { return spec.substr(0, spec.find(':')); }

}  // namespace

const char* finish_reason(StopReason stop_reason) {
  return stop_reason == StopReason::Length || stop_reason == StopReason::Context ? "length"
                                                                                 : "stop";
}

// ---- Job: the hand-over between the engine thread and the request's thread ----

Job::Update Job::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] {
    return !pending_.empty() || !pending_logprobs_.empty() || (finished_ && !reported_);
  });
  Update u;
  u.text.swap(pending_);
  u.logprobs.swap(pending_logprobs_);
  if (finished_) {
    u.finished = true;
    u.error = error_;
    reported_ = true;
  }
  return u;
}

JobResult Job::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return result_;
}

void Job::push(const std::string& text, const std::vector<TokenLogprob>* logprobs,
               size_t logprobs_from) {
  const bool more = logprobs && logprobs->size() > logprobs_from;
  if (text.empty() && !more) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ += text;
    if (more) {
      pending_logprobs_.insert(pending_logprobs_.end(), logprobs->begin() + logprobs_from,
                               logprobs->end());
    }
  }
  cv_.notify_all();
}

void Job::finish(const JobResult& r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    result_ = r;
    finished_ = true;
  }
  cv_.notify_all();
}

void Job::fail(const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = error.empty() ? "generation failed" : error;
    finished_ = true;
  }
  cv_.notify_all();
}

// ---- Scheduler ----

struct Scheduler::Active {
  std::shared_ptr<Job> job;
  std::unique_ptr<Session> session;
  std::unique_ptr<Generation> gen;
  std::unique_ptr<LosslessGeneration> lossless;  // a lossless job once its prompt is in
  size_t fed = 0;                                // prompt tokens appended so far
  int cached = 0;                                // ... of which the prompt cache gave
  bool prompt_in = false;                        // the prompt is in the cache (sampled once)
  Clock::time_point admitted{};                  // when it took its slot
  Clock::time_point first_token{};               // when the first token was sampled
  bool sampled_once = false;
  int32_t next = -1;    // the token this step decodes
  bool failed = false;  // the job failed alone (its lossless decoder threw): already told
  const Generation& generation() const { return lossless ? lossless->generation() : *gen; }
};

Scheduler::Scheduler(std::shared_ptr<const Model> model, const SchedulerOptions& opts)
    : model_(std::move(model)),
      opts_(opts),
      policy_ctx_(fasa::policy_context(model_)),
      prompt_cache_(opts.prompt_cache_bytes) {
  if (opts_.parallel < 1) fail("--parallel must be >= 1 (got {})", opts_.parallel);
  if (opts_.max_queue < 0) fail("the queue size must be >= 0 (got {})", opts_.max_queue);
  model_->require_tokenizer();
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  for (auto& job : queue_) job->fail("the server is shutting down");
}

bool Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int waiting = static_cast<int>(queue_.size());
    if (stop_ || waiting + n_active_ >= opts_.parallel + opts_.max_queue) return false;
    job->submitted_ = Clock::now();
    queue_.push_back(std::move(job));
    stats_.queued = static_cast<int>(queue_.size());
  }
  cv_.notify_all();
  return true;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SchedulerStats s = stats_;
  const auto now = Clock::now();
  uint64_t tokens = 0;
  for (const auto& [t, n] : recent_) {
    if (now - t <= kRateWindow) tokens += n;
  }
  s.tokens_per_second =
      static_cast<double>(tokens) / std::chrono::duration<double>(kRateWindow).count();
  return s;
}

void Scheduler::loop() {
  std::vector<Active> active;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty() || !active.empty(); });
      if (stop_) break;
    }
    admit(active);
    step(active);
    update_gauges(active);
  }
  for (Active& a : active) a.job->fail("the server is shutting down");
  active.clear();
}

// Moves queued jobs into free slots: each gets its session (the policy made from its spec).
void Scheduler::admit(std::vector<Active>& active) {
  while (static_cast<int>(active.size()) < opts_.parallel) {
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) break;
      job = std::move(queue_.front());
      queue_.pop_front();
      stats_.queued = static_cast<int>(queue_.size());
      ++n_active_;  // until it leaves below, or retires
    }
    if (job->cancelled()) {
      job->fail("cancelled");
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.jobs_cancelled;
      --n_active_;
      continue;
    }
    try {
      SessionOptions so = opts_.session;
      so.policy = job->policy;
      Active a;
      a.session = std::make_unique<Session>(model_, so, policy_ctx_);
      a.gen = std::make_unique<Generation>(model_->require_tokenizer(), job->gen);
      a.cached = prompt_cache_.start(*a.session, job->prompt, job->cache_scope);
      a.fed = static_cast<size_t>(a.cached);
      a.admitted = Clock::now();
      a.job = std::move(job);
      active.push_back(std::move(a));
    } catch (const std::exception& e) {  // a policy that cannot start (e.g. its files)
      job->fail(e.what());
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.jobs_failed;
      --n_active_;
    }
  }
}

// One forward pass over every active sequence: the next prefill chunk of those still reading
// their prompt (at most one prefill chunk's worth of prompt tokens per step, oldest first, so
// decoding sequences keep moving), the next token of the others; then each sequence with fresh
// logits samples.
void Scheduler::step(std::vector<Active>& active) {
  drop_cancelled(active);
  if (active.empty()) return;
  std::vector<size_t> sampled;  // active indices whose logits follow their whole input
  const std::vector<SessionChunk> chunks = plan_chunks(active, sampled);
  if (!chunks.empty() && !forward_or_fail(active, chunks)) return;
  std::vector<bool> done(active.size(), false);  // [n_active]
  // Lossless jobs already decoding: one verification each, after the batch.
  std::vector<size_t> cycling;
  for (size_t i = 0; i < active.size(); ++i) {
    if (active[i].lossless) cycling.push_back(i);
  }
  int generated = sample(active, sampled, done);
  generated += lossless_cycles(active, cycling, done);
  count_step(chunks.size(), generated);
  for (size_t i = active.size(); i-- > 0;) {
    if (!done[i]) continue;
    retire(active[i], false);
    active.erase(active.begin() + static_cast<long>(i));
  }
}

void Scheduler::drop_cancelled(std::vector<Active>& active) {
  for (size_t i = 0; i < active.size();) {
    if (active[i].job->cancelled()) {
      retire(active[i], true);
      active.erase(active.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

// Each sequence's rows of this step ([n_chunks]); `sampled` gets the ones that then sample.
std::vector<SessionChunk> Scheduler::plan_chunks(std::vector<Active>& active,
                                                 std::vector<size_t>& sampled) {
  const int chunk = opts_.session.prefill_chunk;
  int prefill_budget = chunk;
  std::vector<SessionChunk> chunks;
  for (size_t i = 0; i < active.size(); ++i) {
    Active& a = active[i];
    const auto& prompt = a.job->prompt;
    if (!a.prompt_in && a.fed == prompt.size()) {  // the prompt cache gave all of it
      sampled.push_back(i);
    } else if (a.fed < prompt.size()) {
      // Chunk boundaries as Session::prefill's, so results equal a lone `fasa run`.
      const int m = prefill_chunk_size(static_cast<int>(prompt.size() - a.fed), chunk);
      if (m > prefill_budget && prefill_budget < chunk) continue;  // next step
      prefill_budget -= m;
      chunks.push_back({a.session.get(), prompt.data() + a.fed, m});
      a.fed += m;
      if (a.fed == prompt.size()) sampled.push_back(i);
    } else if (!a.lossless) {  // a lossless job decodes in lossless_cycles
      chunks.push_back({a.session.get(), &a.next, 1});
      sampled.push_back(i);
    }
  }
  return chunks;
}

// The batched forward pass; if it throws, every active job fails (callers check prompts and
// room: this is a last resort) and false is returned.
bool Scheduler::forward_or_fail(std::vector<Active>& active,
                                const std::vector<SessionChunk>& chunks) {
  try {
    Session::forward_many(chunks, scratch_);
    return true;
  } catch (const std::exception& e) {
    for (Active& a : active) a.job->fail(e.what());
    std::lock_guard<std::mutex> lock(mu_);
    stats_.jobs_failed += active.size();
    n_active_ -= static_cast<int>(active.size());
    active.clear();
    return false;
  }
}

// Samples the next token of each sequence in `sampled` and hands its text to the job; marks
// the ones that are done. Returns the tokens generated.
int Scheduler::sample(std::vector<Active>& active, const std::vector<size_t>& sampled,
                      std::vector<bool>& done) {
  int generated = 0;
  const int n_vocab = model_->config().n_vocab;
  for (size_t i : sampled) {
    Active& a = active[i];
    Session& s = *a.session;
    if (!a.prompt_in) {  // the prompt is in: keep it for later jobs (before any decode step)
      a.prompt_in = true;
      try {
        if (a.cached < static_cast<int>(a.job->prompt.size())) {
          prompt_cache_.insert(s, a.job->prompt, a.job->cache_scope);
        }
      } catch (const std::exception&) {  // (no memory for a copy): the job goes on uncached
      }
    }
    if (a.job->lossless.k > 0) {  // the prompt is in: the lossless decoder takes over
      if (!start_lossless(a)) {
        done[i] = true;
        continue;
      }
      generated += static_cast<int>(a.lossless->generation().tokens().size());
      done[i] = a.lossless->done();
      continue;
    }
    const size_t before = a.gen->tokens().size(), lp_before = a.gen->logprobs().size();
    const std::string text = a.gen->step(s.last_logits().data(), n_vocab, s.n_past() < s.n_ctx());
    a.job->push(text, &a.gen->logprobs(), lp_before);
    if (!a.sampled_once) {
      a.sampled_once = true;
      a.first_token = Clock::now();
    }
    generated += static_cast<int>(a.gen->tokens().size() - before);
    if (a.gen->done()) {
      done[i] = true;
    } else {
      a.next = a.gen->next_token();
    }
  }
  return generated;
}

// Makes a's lossless decoder and samples its first token; false (the job failed) if the
// decoder refuses the session.
bool Scheduler::start_lossless(Active& a) {
  try {
    a.lossless = std::make_unique<LosslessGeneration>(*a.session, a.job->gen, a.job->lossless);
    a.job->push(a.lossless->start());
    a.sampled_once = true;
    a.first_token = Clock::now();
    return true;
  } catch (const std::exception& e) {
    a.job->fail(e.what());
    a.failed = true;
    return false;
  }
}

int Scheduler::lossless_cycles(std::vector<Active>& active, const std::vector<size_t>& cycling,
                               std::vector<bool>& done) {
  int generated = 0;
  for (size_t i : cycling) {
    Active& a = active[i];
    const size_t before = a.lossless->generation().tokens().size();
    try {
      a.job->push(a.lossless->cycle());
    } catch (const std::exception& e) {
      a.job->fail(e.what());
      a.failed = true;
      done[i] = true;
      continue;
    }
    generated += static_cast<int>(a.lossless->generation().tokens().size() - before);
    done[i] = a.lossless->done();
  }
  return generated;
}

void Scheduler::count_step(size_t n_rows, int generated) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.steps;
  stats_.batched_rows += n_rows;
  stats_.generated_tokens += generated;
  recent_.emplace_back(Clock::now(), generated);
  while (!recent_.empty() && Clock::now() - recent_.front().first > kRateWindow) {
    recent_.pop_front();
  }
}

// A job leaves its slot: finished (its result handed over) or cancelled; its session is freed
// by the caller's erase.
void Scheduler::retire(Active& a, bool cancelled) {
  const AttnStats& st = a.session->attn_stats();
  std::lock_guard<std::mutex> lock(mu_);
  --n_active_;
  if (cancelled) {
    ++stats_.jobs_cancelled;
    a.job->fail("cancelled");
    return;
  }
  if (a.failed) {
    ++stats_.jobs_failed;
    return;
  }
  JobResult r;
  const Generation& gen = a.generation();
  r.stop_reason = gen.stop_reason();
  r.prompt_tokens = static_cast<int>(a.job->prompt.size());
  r.completion_tokens = static_cast<int>(gen.tokens().size());
  r.cached_tokens = a.cached;
  r.kv_bytes_read = st.bytes_read();
  r.decode_tokens = st.decode_tokens;
  if (a.sampled_once) {
    const auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    const auto now = Clock::now();
    r.ttft_seconds = secs(a.first_token - a.job->submitted_);
    if (r.completion_tokens > 1) {
      r.per_token_seconds = secs(now - a.first_token) / (r.completion_tokens - 1);
    }
    r.prompt_seconds = secs(a.first_token - a.admitted);
    r.predicted_seconds = secs(now - a.first_token);
  }
  if (a.lossless) {  // drafts and verifications, per generated token
    r.lossless = a.lossless->stats();
    r.kv_bytes_read = r.lossless.draft_kv_bytes + r.lossless.verify_kv_bytes;
    r.decode_tokens = r.lossless.tokens;
  }
  ++stats_.jobs_finished;
  stats_.prompt_tokens += r.prompt_tokens;
  PolicyCounters& pc = stats_.per_policy[policy_name(a.job->policy)];
  ++pc.jobs;
  pc.decode_tokens += r.decode_tokens;
  pc.kv_bytes_read += r.kv_bytes_read;
  a.job->finish(r);
}

void Scheduler::update_gauges(const std::vector<Active>& active) {
  uint64_t alloc = 0, ram = 0, file = 0;
  for (const Active& a : active) {
    const KvCache& c = a.session->cache();
    alloc += c.capacity_bytes();
    ram += c.ram_bytes();
    file += c.file_bytes();
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.active = static_cast<int>(active.size());
  stats_.kv_bytes_allocated = alloc;
  stats_.kv_bytes_ram = ram;
  stats_.kv_bytes_file = file;
  stats_.prompt_cache = prompt_cache_.stats();
}

}  // namespace fasa::server
