// The JSON bodies `mnemo serve` answers with, shaped as OpenAI's API returns them (the fields its
// official clients read), plus two extensions on completions: `timings` (llama-server's names:
// prompt and generation tokens and tokens/s) and `references` (the explicit memories the answer's
// chunks read: chunk, id, score, text, title, source, document and its version).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve/api_error.hpp"
#include "serve/job.hpp"

namespace mnemo::serve {

struct ResponseMeta {
    std::string id;       // "chatcmpl-..." / "cmpl-..."
    std::string model;
    int64_t created = 0;  // Unix seconds
    bool chat = true;     // chat.completion(.chunk) or text_completion
};

// A new response id with the given prefix: 24 random hex digits.
std::string new_response_id(const char* prefix);

// The whole answer (stream: false).
struct Answer {
    std::string text;
    FinishReason finish = FinishReason::Stop;
    std::vector<TokenLogprob> logprobs;  // when asked
    bool want_logprobs = false;
    Usage usage;
    Timings timings;
    std::vector<RetrievedReference> references;
    bool reads_memories = false;         // references: [] rather than absent
};
std::string completion_json(const ResponseMeta& meta, const Answer& a);

// One streamed chunk. `role` puts the assistant role in the first chat delta; a chunk with a
// finish reason carries the timings and references; `usage_null` writes "usage": null, as
// OpenAI does on every chunk but the last when stream_options.include_usage is set.
struct Chunk {
    bool role = false;
    std::string text;
    const TokenLogprob* logprob = nullptr;
    FinishReason finish = FinishReason::None;
    const Timings* timings = nullptr;
    const std::vector<RetrievedReference>* references = nullptr;
    bool usage_null = false;
};
std::string chunk_json(const ResponseMeta& meta, const Chunk& c);
// The last chunk when include_usage: no choices, the usage.
std::string usage_chunk_json(const ResponseMeta& meta, const Usage& u);

// The model object ({"id", "object": "model", "created", "owned_by"}), and the list of the one served.
std::string model_json(const std::string& model, int64_t created);
std::string models_json(const std::string& model, int64_t created);
// encoding_format float (arrays) or base64 (little-endian float32, what the official clients ask for by default).
std::string embeddings_json(const std::string& model, const std::vector<std::vector<float>>& vectors, int32_t prompt_tokens,
                            bool base64);

// One server-sent event: "data: <json>\n\n".
std::string sse_event(const std::string& json);

}  // namespace mnemo::serve
