// The RAM this process can still take: the kernel's estimate for the machine (MemAvailable),
// capped by the memory limit of the process's control group (cgroup v1 or v2) less what the
// group already uses, or FASA_MEMORY_AVAILABLE (bytes) when set. A run that needs more than
// this ends with an OOM kill, so callers refuse it up front (Session: the KV cache).
#pragma once

#include <cstdint>
#include <string>

namespace fasa {

struct AvailableMemory {
  uint64_t bytes = 0;  // UINT64_MAX: unknown (no /proc)
  std::string source;  // what set it: "MemAvailable", "cgroup v1 memory limit", ...
};

AvailableMemory available_memory();

// The same, from the text of the files a reader found (for tests): meminfo is /proc/meminfo's;
// a cgroup's limit, usage and reclaimable page cache (cgroup v1: memory.stat's
// hierarchical_memory_limit and total_inactive_file with memory.usage_in_bytes; v2: memory.max,
// memory.current and memory.stat's inactive_file). An empty limit: no cgroup found.
AvailableMemory available_memory_from(const std::string& meminfo, const std::string& cg_limit,
                                      const std::string& cg_usage, const std::string& cg_stat,
                                      const std::string& cg_kind);

// "17.2 GB" (decimal units, one decimal), for messages.
std::string format_bytes(uint64_t bytes);
// "512 B", "1.50 KiB", "7.94 MiB" (binary units, two decimals above bytes), for statistics.
std::string human_bytes(uint64_t n);

}  // namespace fasa
