// The token loop of every program that writes text (`mnemo run` and `mnemo chat` today): sample,
// stream the text through the UTF-8 decoder and the stop-string matcher, feed the token back,
// until end-of-sequence, a stop string, the token limit, a full context or the cancel flag
// (Ctrl-C in the CLI). The text goes to a callback, so a terminal and a window use the same loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mnemo/session/sampling.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::app {

enum class StopReason { Eos, StopString, Limit, ContextFull, Cancelled };

struct GenerateResult {
    int32_t n_generated = 0;  // tokens sampled (the eos token is not counted)
    double seconds = 0.0;
    StopReason reason = StopReason::Limit;
    std::string text;  // everything emitted
};

struct GenerateRequest {
    Session* session = nullptr;
    const Tokenizer* tokenizer = nullptr;
    Sampler* sampler = nullptr;
    int32_t seq = 0;
    // Tokens in the sequence's cache; grows with every token fed back. Also the history for the
    // repetition penalty.
    std::vector<int32_t>* fed = nullptr;
    const float* first_logits = nullptr;  // logits after the last token of *fed
    std::vector<std::string> stop_strings;
    int32_t max_tokens = -1;  // < 0: until the context is full
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(const std::string&)> emit;  // called with each piece of visible text
};

GenerateResult generate(const GenerateRequest& r);

}  // namespace mnemo::app
