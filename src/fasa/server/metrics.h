// GET /metrics: the server's counters and gauges in the Prometheus text format (version 0.0.4).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fasa/server/prompt_scorer.h"
#include "fasa/server/scheduler.h"

namespace fasa::server {

// HTTP requests answered, by endpoint and status; and streams cut before their end (status 200
// sent, no [DONE]), by endpoint and by whom ("client": it left; "server": it stopped).
// Thread-safe.
class RequestCounters {
 public:
  void add(const std::string& endpoint, int status);
  void add_cut(const std::string& endpoint, const std::string& by);
  std::map<std::pair<std::string, int>, uint64_t> snapshot() const;
  std::map<std::pair<std::string, std::string>, uint64_t> cuts() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> counts_;
  std::map<std::pair<std::string, std::string>, uint64_t> cuts_;
};

// Latency of finished generations, as Prometheus histograms: time to first token (from the
// request's submission) and time per output token after the first. Thread-safe.
class LatencyHistograms {
 public:
  // A negative value is not observed (no token, or only one).
  void observe(double ttft_seconds, double per_token_seconds);
  std::string render()
      const;  // fasa_time_to_first_token_seconds, fasa_time_per_output_token_seconds

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // [bounds + 1] the last is +Inf
    double sum = 0.0;
    uint64_t n = 0;
  };
  static void add(Histogram& h, const std::vector<double>& bounds, double x);
  mutable std::mutex mu_;
  Histogram ttft_, tpot_;
};

struct ProcessMemory {
  uint64_t rss = 0;
  uint64_t peak_rss = 0;
};

std::string render_metrics(const SchedulerStats& s, int parallel, const RequestCounters& requests,
                           const ProcessMemory& mem);
// The prompts scored for echo with logprobs (prompt_scorer.h): fasa_echo_* families.
std::string render_echo_metrics(const PromptScorerStats& e);

}  // namespace fasa::server
