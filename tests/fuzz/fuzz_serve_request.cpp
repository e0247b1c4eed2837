// Fuzz target: arbitrary bytes as the body of an OpenAI request to `mnemo serve`
// (app/serve/api_request.cpp). The first byte picks the endpoint (chat, completions, embeddings),
// the rest is the body. Parsing may refuse, but only with a 400 ApiError whose message is not
// empty; an accepted request must hold what the server relies on: ranges of every sampling field,
// at least one message or input, stop strings within the limits. A crash, a sanitizer report, any
// other exception or an out-of-range field is a bug.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/api_request.hpp"

namespace {

using namespace mnemo::serve;

void require(bool ok) {
    if (!ok) std::abort();
}

void check(const GenerationRequest& g, const RequestLimits& l) {
    require(std::isfinite(g.sampling.temperature) && g.sampling.temperature >= 0 && g.sampling.temperature <= 2);
    require(g.sampling.top_p >= 0 && g.sampling.top_p <= 1);
    require(g.sampling.min_p >= 0 && g.sampling.min_p <= 1);
    require(g.sampling.top_k >= 0);
    require(!g.max_tokens || (*g.max_tokens >= 1 && *g.max_tokens <= l.max_tokens));
    require(g.stop.size() <= l.max_stop);
    for (const auto& s : g.stop) require(!s.empty() && s.size() <= l.max_stop_bytes);
    require(g.top_logprobs >= -1 && g.top_logprobs <= l.max_top_logprobs);
    require(!g.include_usage || g.stream);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const RequestLimits limits;
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        switch (data[0] % 3) {
            case 0: {
                const ChatRequest r = parse_chat_request(body, limits);
                require(!r.messages.empty() && r.messages.size() <= limits.max_messages);
                for (const auto& m : r.messages) require(m.role == "system" || m.role == "user" || m.role == "assistant");
                check(r.gen, limits);
                break;
            }
            case 1: {
                const CompletionRequest r = parse_completion_request(body, limits);
                check(r.gen, limits);
                require(r.gen.top_logprobs <= 5);
                break;
            }
            default: {
                const EmbeddingRequest r = parse_embedding_request(body, limits);
                require(!r.inputs.empty() && r.inputs.size() <= limits.max_inputs);
                for (const auto& s : r.inputs) require(!s.empty());
                break;
            }
        }
    } catch (const ApiError& e) {
        require(e.status == 400 && e.what()[0] != '\0');
    }
    return 0;
}
