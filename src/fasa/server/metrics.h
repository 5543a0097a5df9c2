// GET /metrics: the server's counters and gauges in the Prometheus text format (version 0.0.4).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "fasa/server/scheduler.h"

namespace fasa::server {

// HTTP requests answered, by endpoint and status. Thread-safe.
class RequestCounters {
 public:
  void add(const std::string& endpoint, int status);
  std::map<std::pair<std::string, int>, uint64_t> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> counts_;
};

struct ProcessMemory {
  uint64_t rss = 0;
  uint64_t peak_rss = 0;
};

std::string render_metrics(const SchedulerStats& s, int parallel,
                           const std::map<std::pair<std::string, int>, uint64_t>& requests,
                           const ProcessMemory& mem);

}  // namespace fasa::server
