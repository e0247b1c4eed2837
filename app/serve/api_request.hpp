// The requests of the OpenAI HTTP API that `mnemo serve` answers, parsed and checked: every field
// it reads gets its type and range checked and an error naming it (ApiError, param = the field);
// fields it does not know are ignored, as OpenAI's own server does for forward compatibility.
// Fields it knows but cannot honour (n > 1, tools) are refused by name rather than ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api_error.hpp"
#include "mnemo/session/sampling.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::serve {

// Limits a request is checked against (the server's flags).
struct RequestLimits {
    int32_t max_tokens = 1 << 20;   // the largest max_tokens accepted
    size_t max_stop = 4;             // stop strings, as OpenAI
    size_t max_stop_bytes = 256;     // per stop string
    int32_t max_top_logprobs = 20;
    size_t max_messages = 4096;
    size_t max_inputs = 256;         // embeddings inputs
};

// What the generation of one request uses. OpenAI's defaults: temperature 1, top_p 1; the
// extensions top_k and min_p (llama-server's names) default to off. max_tokens absent: until
// the end-of-sequence token, a stop string or a full context.
struct GenerationRequest {
    SamplingParams sampling;
    bool seeded = false;                 // seed given (else the server draws one)
    std::optional<int32_t> max_tokens;
    std::vector<std::string> stop;
    int32_t top_logprobs = -1;           // < 0: no logprobs; else how many alternatives per token
    bool stream = false;
    bool include_usage = false;          // stream_options.include_usage
    bool ignore_eos = false;             // extension (llama-server's name): generate max_tokens, for benchmarks
    std::optional<bool> grounded;        // extension: the answer only quotes the references its prompt
                                         // read (app/grounding.hpp); absent: the server's --grounded
};

struct ChatRequest {
    std::string model;
    std::vector<ChatMessage> messages;
    GenerationRequest gen;
};

struct CompletionRequest {
    std::string model;
    std::string prompt;
    bool echo = false;
    GenerationRequest gen;
};

struct EmbeddingRequest {
    std::string model;
    std::vector<std::string> inputs;
    bool input_was_array = false;
    bool base64 = false;  // encoding_format base64 (the official clients' default)
};

// Each throws ApiError (400) naming the field, or for a body that is not JSON, where it fails.
ChatRequest parse_chat_request(std::string_view body, const RequestLimits& limits);
CompletionRequest parse_completion_request(std::string_view body, const RequestLimits& limits);
EmbeddingRequest parse_embedding_request(std::string_view body, const RequestLimits& limits);

}  // namespace mnemo::serve
