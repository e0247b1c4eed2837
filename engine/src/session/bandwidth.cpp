// Read and copy bandwidth with persistent threads that start each pass together (a barrier),
// so the time measured is that of the slowest slice, not of thread creation.
#include "mnemo/session/bandwidth.hpp"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mnemo/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mnemo {
namespace {

// The sums are returned and accumulated into a volatile sink so that the reads cannot be
// optimised away.
#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) double read_avx2(const float* p, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    double s = 0;
    for (float v : lanes) s += v;
    for (; i < n; ++i) s += p[i];
    return s;
}
#endif

double read_portable(const float* p, size_t n) {
    float a[8] = {};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) a[j] += p[i + j];
    double s = 0;
    for (float v : a) s += v;
    for (; i < n; ++i) s += p[i];
    return s;
}

double read_slice(const float* p, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx2")) return read_avx2(p, n);
#endif
    return read_portable(p, n);
}

struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
};

}  // namespace

Bandwidth measure_bandwidth(int threads, uint64_t bytes, int repeats) {
    if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
    if (repeats <= 0) repeats = 1;
    if (bytes < (1ull << 20)) throw Error("measure_bandwidth: buffer of " + std::to_string(bytes) +
                                          " bytes is too small to measure memory (need at least 1 MiB)");
    // Slices are multiples of 4 KiB so every thread starts on its own page and cache line.
    const uint64_t slice = bytes / static_cast<uint64_t>(threads) / 4096 * 4096;
    if (slice == 0) throw Error("measure_bandwidth: too many threads for the buffer");
    const uint64_t total = slice * static_cast<uint64_t>(threads);
    std::unique_ptr<float, FreeDeleter> buf(static_cast<float*>(std::aligned_alloc(4096, total)));
    if (!buf) throw Error("measure_bandwidth: cannot allocate " + std::to_string(total) + " bytes");
    float* base = buf.get();
    const size_t floats_per_slice = slice / sizeof(float);
    // Copy passes move the first half of each slice onto its second half.
    const size_t half_bytes = slice / 2;

    std::barrier sync(threads + 1);
    std::vector<double> sinks(static_cast<size_t>(threads) * 8, 0.0);  // 64 bytes apart
    int phase_kind = 0;  // 0: fill, 1: read, 2: copy, 3: stop (written before the start barrier)
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            float* p = base + static_cast<size_t>(t) * floats_per_slice;
            for (;;) {
                sync.arrive_and_wait();  // start
                const int kind = phase_kind;
                if (kind == 3) return;
                if (kind == 0) {
                    // Each thread touches its own slice first, so pages are mapped (and on NUMA
                    // machines placed) where they will be read. Non-zero so no zero-page tricks.
                    for (size_t i = 0; i < floats_per_slice; ++i) p[i] = static_cast<float>(i & 1023) * 0.5f;
                } else if (kind == 1) {
                    sinks[static_cast<size_t>(t) * 8] += read_slice(p, floats_per_slice);
                } else {
                    std::memcpy(reinterpret_cast<char*>(p) + half_bytes, p, half_bytes);
                }
                sync.arrive_and_wait();  // done
            }
        });
    }
    auto timed_pass = [&](int kind) {
        phase_kind = kind;
        sync.arrive_and_wait();
        const auto t0 = std::chrono::steady_clock::now();
        sync.arrive_and_wait();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    timed_pass(0);
    double best_read = 1e30, best_copy = 1e30;
    for (int r = 0; r < repeats; ++r) {
        best_read = std::min(best_read, timed_pass(1));
        best_copy = std::min(best_copy, timed_pass(2));
    }
    phase_kind = 3;
    sync.arrive_and_wait();
    for (std::thread& th : pool) th.join();
    volatile double sink = 0;
    for (double s : sinks) sink = sink + s;
    (void)sink;

    Bandwidth out;
    out.threads = threads;
    out.bytes = total;
    out.read_gbps = static_cast<double>(total) / best_read / 1e9;
    out.copy_gbps = 2.0 * static_cast<double>(threads) * static_cast<double>(half_bytes) / best_copy / 1e9;
    return out;
}

}  // namespace mnemo
