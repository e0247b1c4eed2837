#include "serve/metrics.hpp"

#include <cinttypes>
#include <cstdio>

namespace mnemo::serve {

const char* endpoint_path(Endpoint e) {
    switch (e) {
        case Endpoint::Models: return "/v1/models";
        case Endpoint::ChatCompletions: return "/v1/chat/completions";
        case Endpoint::Completions: return "/v1/completions";
        case Endpoint::Embeddings: return "/v1/embeddings";
        case Endpoint::Health: return "/health";
        case Endpoint::Metrics: return "/metrics";
        case Endpoint::Other:
        case Endpoint::Count: break;
    }
    return "other";
}

void Metrics::count_request(Endpoint e, int status) {
    const size_t cls = status < 400 ? 0 : status < 500 ? 1 : 2;
    requests[static_cast<size_t>(e)][cls].fetch_add(1, std::memory_order_relaxed);
}

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
    char line[512];
    std::snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, value);
    out += line;
}

}  // namespace

std::string Metrics::prometheus_text() const {
    std::string out;
    out += "# HELP mnemo_requests_total HTTP requests answered, by endpoint and status class.\n";
    out += "# TYPE mnemo_requests_total counter\n";
    static const char* kClass[] = {"2xx", "4xx", "5xx"};
    for (size_t e = 0; e < static_cast<size_t>(Endpoint::Count); ++e)
        for (size_t c = 0; c < 3; ++c) {
            char line[256];
            std::snprintf(line, sizeof line, "mnemo_requests_total{endpoint=\"%s\",status=\"%s\"} %" PRIu64 "\n",
                          endpoint_path(static_cast<Endpoint>(e)), kClass[c], requests[e][c].load());
            out += line;
        }
    metric(out, "mnemo_requests_rejected_queue_full_total", "counter", "Requests refused with 429: the queue was full.",
           static_cast<double>(rejected_queue_full.load()));
    metric(out, "mnemo_requests_rejected_auth_total", "counter", "Requests refused with 401: no or a wrong API key.",
           static_cast<double>(rejected_auth.load()));
    metric(out, "mnemo_requests_cancelled_total", "counter", "Generations stopped because the client went away.",
           static_cast<double>(cancelled.load()));
    metric(out, "mnemo_prompt_tokens_total", "counter", "Prompt tokens of requests (cached ones included).",
           static_cast<double>(prompt_tokens.load()));
    metric(out, "mnemo_prompt_tokens_cached_total", "counter", "Prompt tokens a slot's cache already held (not prefilled).",
           static_cast<double>(prompt_tokens_cached.load()));
    metric(out, "mnemo_prompt_tokens_prefilled_total", "counter", "Prompt tokens run through the model.",
           static_cast<double>(prompt_tokens_prefilled.load()));
    const uint64_t p = prompt_tokens.load();
    metric(out, "mnemo_prompt_cache_hit_ratio", "gauge", "Cached prompt tokens / prompt tokens, since start.",
           p ? static_cast<double>(prompt_tokens_cached.load()) / static_cast<double>(p) : 0.0);
    metric(out, "mnemo_generated_tokens_total", "counter", "Tokens generated.", static_cast<double>(generated_tokens.load()));
    metric(out, "mnemo_decode_steps_total", "counter", "Batched decode steps run.", static_cast<double>(decode_steps.load()));
    metric(out, "mnemo_decode_rows_total", "counter", "Sequences decoded, summed over decode steps (rows / steps = mean batch).",
           static_cast<double>(decode_rows.load()));
    metric(out, "mnemo_queue_requests", "gauge", "Requests waiting for a slot.", static_cast<double>(queued.load()));
    metric(out, "mnemo_slots_busy", "gauge", "Slots serving a request.", static_cast<double>(slots_busy.load()));
    metric(out, "mnemo_slots_total", "gauge", "Slots (--parallel).", static_cast<double>(slots_total));
    metric(out, "mnemo_memory_retrievals_total", "counter", "Chunks that retrieved explicit memories.",
           static_cast<double>(retrievals.load()));
    metric(out, "mnemo_memories_read_total", "counter", "Explicit memories placed in blocks (block-cache hits excluded).",
           static_cast<double>(memories_read.load()));
    metric(out, "mnemo_kb_records_fetched_total", "counter", "Records fetched from the knowledge server.",
           static_cast<double>(kb_records_fetched.load()));
    const uint64_t lookups = kb_cache_lookups.load();
    metric(out, "mnemo_kb_cache_hit_ratio", "gauge", "Knowledge-server record cache hits / lookups.",
           lookups ? static_cast<double>(kb_cache_hits.load()) / static_cast<double>(lookups) : 0.0);
    metric(out, "mnemo_kb_failures_total", "counter", "Knowledge-server calls that failed.", static_cast<double>(kb_failures.load()));
    return out;
}

}  // namespace mnemo::serve
