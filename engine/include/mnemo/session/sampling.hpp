// Token sampling: the order follows common practice (llama.cpp): repetition penalty, then
// top-k, top-p, min-p, temperature, and a seeded draw. temperature <= 0 means greedy.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>
#include "mnemo/api.hpp"

namespace mnemo {

struct SamplingParams {
    float temperature = 0.8f;
    int32_t top_k = 40;      // <= 0: off
    float top_p = 0.95f;     // >= 1: off
    float min_p = 0.05f;     // <= 0: off
    float repeat_penalty = 1.0f;  // 1: off
    int32_t repeat_last_n = 64;
    uint64_t seed = 0xC0FFEE;
};

class MNEMO_API Sampler {
public:
    explicit Sampler(const SamplingParams& p);
    // Pick the next token from logits[vocab]; `history` is the sequence so far (for the
    // repetition penalty). Never allocates after the first call for a given vocab size.
    int32_t sample(const float* logits, int32_t vocab, const std::vector<int32_t>& history);
    const SamplingParams& params() const { return p_; }

private:
    SamplingParams p_;
    std::mt19937_64 rng_;
    std::vector<std::pair<float, int32_t>> cand_;
};

// Stop strings: finds the earliest stop string in generated text; text that could be the start of
// a stop string is held back until it is known not to be one.
class MNEMO_API StopMatcher {
public:
    explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
    // Append new text; returns the part that is safe to show. Sets stopped() when a stop string
    // was completed (the stop string itself is not returned).
    std::string push(const std::string& text);
    std::string flush();  // the held-back tail at the end of generation
    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace mnemo
