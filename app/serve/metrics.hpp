// The server's counters and gauges, written by the HTTP threads and the scheduler, read by
// GET /metrics as Prometheus text (exposition format 0.0.4). Atomics: no lock on any path.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace mnemo::serve {

enum class Endpoint { Models, ChatCompletions, Completions, Embeddings, Health, Metrics, Other, Count };
const char* endpoint_path(Endpoint e);

struct Metrics {
    // requests by endpoint and status class (2xx, 4xx, 5xx)
    std::array<std::array<std::atomic<uint64_t>, 3>, static_cast<size_t>(Endpoint::Count)> requests{};
    std::atomic<uint64_t> rejected_queue_full{0};    // 429s
    std::atomic<uint64_t> rejected_auth{0};          // 401s
    std::atomic<uint64_t> prompt_tokens{0};          // prompt tokens of finished requests (cached included)
    std::atomic<uint64_t> prompt_tokens_cached{0};   // of those, read from a slot's cache
    std::atomic<uint64_t> prompt_tokens_prefilled{0};
    std::atomic<uint64_t> generated_tokens{0};
    std::atomic<uint64_t> cancelled{0};              // requests whose client went away
    std::atomic<uint64_t> decode_steps{0};
    std::atomic<uint64_t> decode_rows{0};            // sum of batch sizes of the decode steps
    std::atomic<int64_t> queued{0};
    std::atomic<int64_t> slots_busy{0};
    int64_t slots_total = 0;
    // Explicit memories (models that read them): copied from the session after each step.
    std::atomic<uint64_t> retrievals{0};
    std::atomic<uint64_t> memories_read{0};
    std::atomic<uint64_t> kb_records_fetched{0};
    std::atomic<uint64_t> kb_cache_hits{0};
    std::atomic<uint64_t> kb_cache_lookups{0};
    std::atomic<uint64_t> kb_failures{0};

    void count_request(Endpoint e, int status);
    std::string prometheus_text() const;
};

}  // namespace mnemo::serve
