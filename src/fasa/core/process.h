// This process's memory, as the OS counts it (for statistics and the server's metrics).
#pragma once

#include <cstdint>

namespace fasa {

uint64_t peak_rss_bytes();     // the most resident memory so far (getrusage ru_maxrss)
uint64_t current_rss_bytes();  // resident now (/proc/self/statm; 0 where unavailable)

}  // namespace fasa
