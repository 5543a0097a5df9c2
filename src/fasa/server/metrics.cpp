#include "fasa/server/metrics.h"

#include <fmt/format.h>

namespace fasa::server {

void RequestCounters::add(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[{endpoint, status}];
}

std::map<std::pair<std::string, int>, uint64_t> RequestCounters::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

void RequestCounters::add_cut(const std::string& endpoint, const std::string& by) {
  std::lock_guard<std::mutex> lock(mu_);
  ++cuts_[{endpoint, by}];
}

std::map<std::pair<std::string, std::string>, uint64_t> RequestCounters::cuts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cuts_;
}

namespace {

const std::vector<double>& ttft_bounds() {
  static const std::vector<double> b = {0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  return b;
}
const std::vector<double>& tpot_bounds() {
  static const std::vector<double> b = {0.005, 0.01, 0.02, 0.04, 0.08,
                                        0.16,  0.32, 0.64, 1.28, 2.56};
  return b;
}

}  // namespace

void LatencyHistograms::add(Histogram& h, const std::vector<double>& bounds, double x) {
  if (h.counts.empty()) h.counts.assign(bounds.size() + 1, 0);
  size_t i = 0;
  while (i < bounds.size() && x > bounds[i]) ++i;
  h.counts[i] += 1;
  h.sum += x;
  h.n += 1;
}

void LatencyHistograms::observe(double ttft_seconds, double per_token_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ttft_seconds >= 0) add(ttft_, ttft_bounds(), ttft_seconds);
  if (per_token_seconds >= 0) add(tpot_, tpot_bounds(), per_token_seconds);
}

std::string LatencyHistograms::render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string o;
  auto one = [&](const char* name, const char* help, const Histogram& h,
                 const std::vector<double>& bounds) {
    o += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i <= bounds.size(); ++i) {
      cum += h.counts.empty() ? 0 : h.counts[i];
      const std::string le = i < bounds.size() ? fmt::format("{}", bounds[i]) : "+Inf";
      o += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, le, cum);
    }
    o += fmt::format("{}_sum {}\n{}_count {}\n", name, h.sum, name, h.n);
  };
  one("fasa_time_to_first_token_seconds",
      "Seconds from a generation's submission to its first token.", ttft_, ttft_bounds());
  one("fasa_time_per_output_token_seconds",
      "Mean seconds per generated token after the first, per generation.", tpot_, tpot_bounds());
  return o;
}

namespace {

// One metric family: HELP, TYPE, then its samples.
void family(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <typename T>
void sample(std::string& out, const char* name, T value, const std::string& labels = "") {
  out += fmt::format("{}{} {}\n", name, labels.empty() ? "" : "{" + labels + "}", value);
}

// Requests answered, generations ended, tokens in and out.
void traffic(std::string& o, const SchedulerStats& s, const RequestCounters& requests) {
  family(o, "fasa_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
  for (const auto& [key, n] : requests.snapshot()) {
    sample(o, "fasa_requests_total", n,
           fmt::format("endpoint=\"{}\",status=\"{}\"", key.first, key.second));
  }
  family(o, "fasa_streams_cut_total", "counter",
         "Streams cut before their end (no [DONE]), by endpoint and by whom (client, server).");
  for (const auto& [key, n] : requests.cuts()) {
    sample(o, "fasa_streams_cut_total", n,
           fmt::format("endpoint=\"{}\",by=\"{}\"", key.first, key.second));
  }
  family(o, "fasa_jobs_total", "counter", "Generations ended, by outcome.");
  sample(o, "fasa_jobs_total", s.jobs_finished, "outcome=\"finished\"");
  sample(o, "fasa_jobs_total", s.jobs_cancelled, "outcome=\"cancelled\"");
  sample(o, "fasa_jobs_total", s.jobs_failed, "outcome=\"failed\"");
  family(o, "fasa_prompt_tokens_total", "counter", "Prompt tokens of finished generations.");
  sample(o, "fasa_prompt_tokens_total", s.prompt_tokens);
  const PromptCacheStats& pc = s.prompt_cache;
  family(o, "fasa_prompt_cache_lookups_total", "counter", "Jobs that looked in the prompt cache.");
  sample(o, "fasa_prompt_cache_lookups_total", pc.lookups);
  family(o, "fasa_prompt_cache_hits_total", "counter", "Jobs the prompt cache gave tokens.");
  sample(o, "fasa_prompt_cache_hits_total", pc.hits);
  family(o, "fasa_prompt_cache_tokens_total", "counter",
         "Prompt tokens the prompt cache gave (not prefilled).");
  sample(o, "fasa_prompt_cache_tokens_total", pc.tokens_reused);
  family(o, "fasa_prompt_cache_evictions_total", "counter", "Prompt cache entries evicted (LRU).");
  sample(o, "fasa_prompt_cache_evictions_total", pc.evictions);
  family(o, "fasa_prompt_cache_bytes", "gauge", "Bytes the prompt cache holds.");
  sample(o, "fasa_prompt_cache_bytes", pc.bytes);
  family(o, "fasa_prompt_cache_entries", "gauge", "Prompts the prompt cache holds.");
  sample(o, "fasa_prompt_cache_entries", static_cast<uint64_t>(pc.entries));
  family(o, "fasa_generated_tokens_total", "counter", "Tokens generated.");
  sample(o, "fasa_generated_tokens_total", s.generated_tokens);
  family(o, "fasa_tokens_per_second", "gauge", "Tokens generated per second, last 10 s.");
  sample(o, "fasa_tokens_per_second", s.tokens_per_second);
}

// The scheduler: queue, slots, batches, and the KV memory of the active sequences.
void engine(std::string& o, const SchedulerStats& s, int parallel) {
  family(o, "fasa_queue_depth", "gauge", "Requests waiting for a sequence slot.");
  sample(o, "fasa_queue_depth", s.queued);
  family(o, "fasa_active_sequences", "gauge", "Sequences holding a slot.");
  sample(o, "fasa_active_sequences", s.active);
  family(o, "fasa_slots", "gauge", "Sequence slots (--parallel).");
  sample(o, "fasa_slots", parallel);
  family(o, "fasa_batch_steps_total", "counter", "Batched forward passes.");
  sample(o, "fasa_batch_steps_total", s.steps);
  family(o, "fasa_batch_sequences_total", "counter",
         "Sequences summed over forward passes (mean batch size = this / steps).");
  sample(o, "fasa_batch_sequences_total", s.batched_rows);
  family(o, "fasa_kv_bytes_resident", "gauge", "KV cache bytes held by active sequences, by tier.");
  sample(o, "fasa_kv_bytes_resident", s.kv_bytes_ram, "tier=\"ram\"");
  sample(o, "fasa_kv_bytes_resident", s.kv_bytes_file, "tier=\"disk\"");
  family(o, "fasa_kv_bytes_allocated", "gauge", "KV cache capacity of active sequences.");
  sample(o, "fasa_kv_bytes_allocated", s.kv_bytes_allocated);
}

// Per KV policy: generations, decode steps, and the bytes they read.
void policies(std::string& o, const SchedulerStats& s) {
  family(o, "fasa_policy_jobs_total", "counter", "Finished generations by KV policy.");
  for (const auto& [name, pc] : s.per_policy) {
    sample(o, "fasa_policy_jobs_total", pc.jobs, fmt::format("policy=\"{}\"", name));
  }
  family(o, "fasa_policy_decode_tokens_total", "counter", "Decode steps by KV policy.");
  for (const auto& [name, pc] : s.per_policy) {
    sample(o, "fasa_policy_decode_tokens_total", pc.decode_tokens,
           fmt::format("policy=\"{}\"", name));
  }
  family(o, "fasa_policy_kv_bytes_read_total", "counter",
         "KV bytes read at decode steps (selection side data included), by KV policy.");
  for (const auto& [name, pc] : s.per_policy) {
    sample(o, "fasa_policy_kv_bytes_read_total", pc.kv_bytes_read,
           fmt::format("policy=\"{}\"", name));
  }
  family(o, "fasa_policy_kv_bytes_read_per_token", "gauge",
         "KV bytes read per decode step, mean since start, by KV policy.");
  for (const auto& [name, pc] : s.per_policy) {
    const double per =
        pc.decode_tokens ? static_cast<double>(pc.kv_bytes_read) / pc.decode_tokens : 0.0;
    sample(o, "fasa_policy_kv_bytes_read_per_token", per, fmt::format("policy=\"{}\"", name));
  }
}

}  // namespace

std::string render_metrics(const SchedulerStats& s, int parallel, const RequestCounters& requests,
                           const ProcessMemory& mem) {
  std::string o;
  traffic(o, s, requests);
  engine(o, s, parallel);
  policies(o, s);
  family(o, "fasa_process_resident_bytes", "gauge", "Resident memory of the server process.");
  sample(o, "fasa_process_resident_bytes", mem.rss);
  family(o, "fasa_process_peak_resident_bytes", "gauge", "Peak resident memory so far.");
  sample(o, "fasa_process_peak_resident_bytes", mem.peak_rss);
  return o;
}

std::string render_echo_metrics(const PromptScorerStats& e) {
  std::string o;
  family(o, "fasa_echo_prompts_total", "counter", "Prompts scored for echo with logprobs.");
  sample(o, "fasa_echo_prompts_total", e.lookups);
  family(o, "fasa_echo_cache_hits_total", "counter",
         "Scored prompts that took rows of an earlier one.");
  sample(o, "fasa_echo_cache_hits_total", e.hits);
  family(o, "fasa_echo_cache_tokens_total", "counter",
         "Prompt tokens scored from an earlier prompt's rows (not evaluated).");
  sample(o, "fasa_echo_cache_tokens_total", e.tokens_reused);
  family(o, "fasa_echo_cache_bytes", "gauge", "Bytes the scored prompts kept hold.");
  sample(o, "fasa_echo_cache_bytes", e.bytes);
  return o;
}

}  // namespace fasa::server
