// Host memory bandwidth, measured: the roofline that `mnemo bench` compares decode speed with
// (a decode step must read every weight once, so tokens/s <= read bandwidth / weight bytes).
#pragma once

#include <cstdint>
#include "mnemo/api.hpp"

namespace mnemo {

struct Bandwidth {
    double read_gbps = 0.0;  // 1e9 bytes/s, all threads streaming reads over the buffer
    double copy_gbps = 0.0;  // bytes read + bytes written per second (STREAM "copy" convention)
    int threads = 0;
    uint64_t bytes = 0;      // buffer size used
};

// Every thread reads (and, for the copy figure, copies) its own contiguous slice of one buffer of
// `bytes`; the best of `repeats` passes is reported. threads <= 0 means all hardware threads.
// Throws mnemo::Error when the buffer cannot be allocated or bytes is below 1 MiB.
MNEMO_API Bandwidth measure_bandwidth(int threads, uint64_t bytes = 1ull << 30, int repeats = 5);

}  // namespace mnemo
