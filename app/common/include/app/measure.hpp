// What the programs measure about themselves and how they print sizes: a monotonic clock for
// throughput figures, the process's peak resident memory, and byte counts for people.
#pragma once

#include <cstdint>
#include <string>

namespace mnemo::app {

double now_seconds();                      // monotonic
uint64_t peak_rss_bytes();                 // getrusage ru_maxrss
std::string format_bytes(uint64_t bytes);  // "1.50 GiB"

}  // namespace mnemo::app
