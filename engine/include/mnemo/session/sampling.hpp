// Token sampling: the order follows common practice (llama.cpp): repetition penalty, then
// top-k, top-p, min-p, temperature, and a seeded draw. temperature <= 0 means greedy.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>
#include "mnemo/api.hpp"
#include "mnemo/error.hpp"

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

// A logit that is NaN or infinite: the model's weights or activations are not finite (a damaged
// checkpoint, an overflow), and no token can be chosen from such a row. `token` is the first such
// logit's id; the generation loop adds the position (app::generate).
class MNEMO_API NonFiniteLogits : public Error {
public:
    NonFiniteLogits(int32_t token, float value);
    int32_t token;
    float value;
};

class MNEMO_API Sampler {
public:
    explicit Sampler(const SamplingParams& p);
    // Pick the next token from logits[vocab]; `history` is the sequence so far (for the
    // repetition penalty). Never allocates after the first call for a given vocab size. Throws
    // NonFiniteLogits when a logit is NaN or infinite (checked in the copy it makes anyway).
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
