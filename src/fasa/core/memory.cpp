#include "fasa/core/memory.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include "fasa/core/error.h"

namespace fasa {

namespace {

constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();
// cgroup v1 reports "no limit" as a huge page-rounded number (9223372036854771712).
constexpr uint64_t kNoLimit = uint64_t{1} << 60;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  if (!f) return "";
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The number after `key` at the start of a line of `text` ("key value" or "key: value"), times
// `unit`; kUnknown when absent.
uint64_t field(const std::string& text, const std::string& key, uint64_t unit = 1) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    size_t i = key.size();
    if (i < line.size() && line[i] == ':') ++i;
    if (i >= line.size() || (line[i] != ' ' && line[i] != '\t')) continue;
    try {
      return std::stoull(line.substr(i)) * unit;
    } catch (...) {
      return kUnknown;
    }
  }
  return kUnknown;
}

uint64_t number(const std::string& text) {
  try {
    return std::stoull(text);
  } catch (...) {
    return kUnknown;  // "max" (cgroup v2: no limit), or nothing
  }
}

}  // namespace

AvailableMemory available_memory_from(const std::string& meminfo, const std::string& cg_limit,
                                      const std::string& cg_usage, const std::string& cg_stat,
                                      const std::string& cg_kind) {
  AvailableMemory a{kUnknown, "unknown"};
  const uint64_t avail = field(meminfo, "MemAvailable", 1024);  // kB
  if (avail != kUnknown) a = {avail, "MemAvailable"};
  if (cg_limit.empty()) return a;
  uint64_t limit = number(cg_limit);
  const bool v1 = cg_kind == "v1";
  if (v1) limit = std::min(limit, field(cg_stat, "hierarchical_memory_limit"));
  if (limit == kUnknown || limit >= kNoLimit) return a;
  uint64_t used = number(cg_usage);
  if (used == kUnknown) used = 0;
  // Clean page cache the kernel reclaims before it kills anything.
  const uint64_t inactive = field(cg_stat, v1 ? "total_inactive_file" : "inactive_file");
  if (inactive != kUnknown) used -= std::min(used, inactive);
  const uint64_t room = limit - std::min(limit, used);
  if (room < a.bytes)
    a = {room, fmt::format("cgroup {} memory limit {}", cg_kind, format_bytes(limit))};
  return a;
}

AvailableMemory available_memory() {
  if (const char* v = std::getenv("FASA_MEMORY_AVAILABLE")) {
    const std::string s = v;
    const uint64_t n = number(s);
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || n == kUnknown) {
      fail("FASA_MEMORY_AVAILABLE='{}' is not a number of bytes", s);
    }
    return {n, "FASA_MEMORY_AVAILABLE"};
  }
  const std::string meminfo = slurp("/proc/meminfo");
  // /proc/self/cgroup: "N:memory:/path" (v1) or "0::/path" (v2). Inside a container the path may
  // be the host's: then the mount's root is the group.
  std::istringstream in(slurp("/proc/self/cgroup"));
  std::string line, v1_path, v2_path;
  bool v2 = false;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::istringstream cs(ctrl);
    for (std::string c; std::getline(cs, c, ',');) {
      if (c == "memory") v1_path = path.empty() ? "/" : path;
    }
    if (ctrl.empty()) {
      v2 = true;
      v2_path = path;
    }
  }
  auto pick = [](const std::string& root, const std::string& path, const std::string& probe) {
    const std::string d = root + path;
    std::ifstream f(d + "/" + probe);
    return f ? d : root;
  };
  if (!v1_path.empty() && is_dir("/sys/fs/cgroup/memory")) {
    const std::string d = pick("/sys/fs/cgroup/memory", v1_path, "memory.limit_in_bytes");
    return available_memory_from(meminfo, slurp(d + "/memory.limit_in_bytes"),
                                 slurp(d + "/memory.usage_in_bytes"), slurp(d + "/memory.stat"),
                                 "v1");
  }
  if (v2) {
    for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
      const std::string d = pick(root, v2_path, "memory.max");
      const std::string limit = slurp(d + "/memory.max");
      if (limit.empty()) continue;
      return available_memory_from(meminfo, limit, slurp(d + "/memory.current"),
                                   slurp(d + "/memory.stat"), "v2");
    }
  }
  return available_memory_from(meminfo, "", "", "", "");
}

std::string format_bytes(uint64_t bytes) {
  return fmt::format("{:.1f} GB", static_cast<double>(bytes) / 1e9);
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace fasa
