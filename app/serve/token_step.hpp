// What one slot does with each row of logits it gets: sample (the request's own sampler and
// seed), turn the token into visible text (UTF-8 stream decoder, stop strings held back until
// they cannot match), the token's log-probability when asked, and whether generation ends here.
// The same order of checks as app::generate, the loop of the CLI and mnemo-chat, so a greedy
// request answers exactly what `mnemo run`/`mnemo chat` print for the same prompt.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/grounding.hpp"
#include "mnemo/session/sampling.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::serve {

enum class FinishReason { None, Stop, Length };
const char* finish_reason_name(FinishReason r);  // "stop", "length" (None: "")

// A token and its log-probability under the model (the softmax of the raw logits, before any
// sampling setting changes them: what OpenAI's logprobs report), with the most likely
// alternatives when asked.
struct TokenLogprob {
    std::string bytes;  // the token's text bytes (may be part of a UTF-8 character)
    float logprob = 0;
    std::vector<std::pair<std::string, float>> top;  // (bytes, logprob), most likely first
};

struct StepResult {
    std::string text;                    // visible text this token released (may be empty)
    std::optional<TokenLogprob> logprob; // when asked, for every token sampled (eos excluded)
    FinishReason finish = FinishReason::None;
    bool feed = false;                   // the token must be fed back before the next step
    int32_t token = -1;
};

class TokenStep {
public:
    // max_tokens < 0: no limit of its own (the context still ends it). top_logprobs < 0: none.
    TokenStep(const Tokenizer& tok, const SamplingParams& sampling, std::vector<std::string> stop, int32_t max_tokens,
              int32_t top_logprobs, int32_t vocab, bool ignore_eos = false);

    // The next token from `logits` (vocab floats); `history` is the sequence so far (repetition
    // penalty); `room` is false when the context has no position left to feed the token.
    // Throws NonFiniteLogits.
    StepResult step(const float* logits, const std::vector<int32_t>& history, bool room);
    // From the next step on, sample only what continues a quote of the grounding's references
    // (app::generate's order: the mask before the sampler; logprobs stay those of the raw
    // logits). When no quote can go on and no end token is left, the answer stops ("stop").
    void ground(std::unique_ptr<app::AnswerGrounding> grounding);

    // Text held back at the end (a partial character, the start of a stop string that never came).
    std::string finish_text();

    int32_t generated() const { return generated_; }
    // The answer as it continues a conversation (GenerateResult::history_text).
    std::string history_text() const;
    const std::string& text() const { return text_; }

private:
    TokenLogprob logprob_of(const float* logits, int32_t id);

    const Tokenizer& tok_;
    Sampler sampler_;
    StreamDecoder decoder_;
    StopMatcher stops_;
    int32_t max_tokens_;
    int32_t top_logprobs_;
    int32_t vocab_;
    bool ignore_eos_;
    int32_t generated_ = 0;
    int32_t first_piece_ = -1;
    std::string text_;
    std::vector<int32_t> order_;  // token ids ranked for top_logprobs, kept between tokens
    std::unique_ptr<app::AnswerGrounding> grounding_;  // null: not grounded
    std::vector<float> masked_;   // the logits with what no reference says taken out
    std::string answer_;          // the generated tokens' bytes, as grounding reads them
};

}  // namespace mnemo::serve
