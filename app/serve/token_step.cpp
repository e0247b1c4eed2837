#include "serve/token_step.hpp"

#include <algorithm>
#include <cmath>

#include "app/generate.hpp"

namespace mnemo::serve {

const char* finish_reason_name(FinishReason r) {
    switch (r) {
        case FinishReason::Stop: return "stop";
        case FinishReason::Length: return "length";
        case FinishReason::None: break;
    }
    return "";
}

TokenStep::TokenStep(const Tokenizer& tok, const SamplingParams& sampling, std::vector<std::string> stop, int32_t max_tokens,
                     int32_t top_logprobs, int32_t vocab, bool ignore_eos)
    : tok_(tok),
      sampler_(sampling),
      decoder_(tok, /*skip_special=*/true),
      stops_(std::move(stop)),
      max_tokens_(max_tokens),
      top_logprobs_(top_logprobs),
      vocab_(vocab),
      ignore_eos_(ignore_eos) {}

void TokenStep::ground(std::unique_ptr<app::AnswerGrounding> grounding) {
    if (grounding) grounding->check_vocab(vocab_);
    grounding_ = std::move(grounding);
}

StepResult TokenStep::step(const float* logits, const std::vector<int32_t>& history, bool room) {
    StepResult r;
    const float* from = logits;
    if (grounding_ && grounding_->active() && (from = grounding_->masked(logits, answer_, masked_)) == nullptr) {
        r.finish = FinishReason::Stop;  // the quote can go no further
        return r;
    }
    const int32_t id = sampler_.sample(from, vocab_, history);
    r.token = id;
    const bool eos = (tok_.eos_id && *tok_.eos_id == id) ||
                     std::find(tok_.eos_ids.begin(), tok_.eos_ids.end(), id) != tok_.eos_ids.end();
    if (eos && !ignore_eos_) {
        r.finish = FinishReason::Stop;
        return r;
    }
    ++generated_;
    if (grounding_) answer_ += grounding_->piece(id);
    if (top_logprobs_ >= 0) r.logprob = logprob_of(logits, id);
    if (first_piece_ < 0 && !tok_.is_special(id)) first_piece_ = id;
    r.text = stops_.push(decoder_.push(id));
    text_ += r.text;
    if (stops_.stopped()) {
        r.finish = FinishReason::Stop;
    } else if (max_tokens_ >= 0 && generated_ >= max_tokens_) {
        r.finish = FinishReason::Length;
    } else if (!room) {
        r.finish = FinishReason::Length;  // the context is full
    } else {
        r.feed = true;
    }
    return r;
}

std::string TokenStep::finish_text() {
    if (stops_.stopped()) return {};
    std::string tail = stops_.push(decoder_.finish());
    if (!stops_.stopped()) tail += stops_.flush();
    text_ += tail;
    return tail;
}

std::string TokenStep::history_text() const { return app::history_text_of(tok_, first_piece_, text_); }

TokenLogprob TokenStep::logprob_of(const float* logits, int32_t id) {
    // log softmax over the vocabulary: logit - max - log(sum exp(logit - max)).
    float mx = logits[0];
    for (int32_t i = 1; i < vocab_; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int32_t i = 0; i < vocab_; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
    const float log_z = mx + static_cast<float>(std::log(sum));
    TokenLogprob lp;
    lp.bytes = tok_.token_bytes(id);
    lp.logprob = logits[id] - log_z;
    if (top_logprobs_ > 0) {
        std::vector<int32_t>& ids = order_;
        ids.resize(static_cast<size_t>(vocab_));
        for (int32_t i = 0; i < vocab_; ++i) ids[static_cast<size_t>(i)] = i;
        const size_t k = std::min(static_cast<size_t>(top_logprobs_), ids.size());
        std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                          [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
        for (size_t i = 0; i < k; ++i) lp.top.emplace_back(tok_.token_bytes(ids[i]), logits[ids[i]] - log_z);
    }
    return lp;
}

}  // namespace mnemo::serve
