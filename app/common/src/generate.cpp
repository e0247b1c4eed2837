#include "app/generate.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "app/grounding.hpp"
#include "app/measure.hpp"
#include "mnemo/error.hpp"

namespace mnemo::app {

namespace {

bool is_eos(const Tokenizer& tok, int32_t id) {
    if (tok.eos_id && *tok.eos_id == id) return true;
    return std::find(tok.eos_ids.begin(), tok.eos_ids.end(), id) != tok.eos_ids.end();
}

}  // namespace

GenerateResult generate(const GenerateRequest& r) {
    Session& session = *r.session;
    std::vector<int32_t>& fed = *r.fed;
    StreamDecoder decoder(*r.tokenizer, /*skip_special=*/true);
    StopMatcher stops(r.stop_strings);
    GenerateResult result;
    const int32_t vocab = sampled_vocab(session, *r.tokenizer);
    if (vocab <= 0) throw Error("the tokenizer has an empty vocabulary");

    auto show = [&](const std::string& piece) {
        if (piece.empty()) return;
        result.text += piece;
        if (r.emit) r.emit(piece);
    };

    const bool grounded = r.grounding != nullptr && r.grounding->active();
    if (grounded) r.grounding->check_vocab(vocab);
    std::vector<float> masked;  // the logits with what no reference says taken out (grounded)
    std::string answer;         // the generated tokens' bytes (grounded)

    const double start = now_seconds();
    const float* logits = r.first_logits;
    int32_t first_piece = -1;  // the first generated token with text
    while (true) {
        if (r.cancel != nullptr && r.cancel->load()) {
            result.reason = StopReason::Cancelled;
            break;
        }
        if (r.max_tokens >= 0 && result.n_generated >= r.max_tokens) {
            result.reason = StopReason::Limit;
            break;
        }
        const float* from = logits;
        if (grounded && (from = r.grounding->masked(logits, answer, masked)) == nullptr) {
            result.reason = StopReason::QuoteEnded;
            break;
        }
        int32_t id = 0;
        try {
            id = r.sampler->sample(from, vocab, fed);
        } catch (const NonFiniteLogits& e) {
            // Said once, here, for every program (CLI commands and the GUI): where it happened and
            // what it means; the caller's exit code or error view follows from the exception.
            throw Error("the model produced NaN/Inf logits at position " + std::to_string(fed.empty() ? 0 : fed.size() - 1) +
                        ": its weights or activations are not finite (the logit of token " + std::to_string(e.token) + " is " +
                        (std::isnan(e.value) ? "NaN" : e.value > 0 ? "+Inf" : "-Inf") + ")");
        }
        if (is_eos(*r.tokenizer, id)) {
            result.reason = StopReason::Eos;
            break;
        }
        ++result.n_generated;
        if (grounded) answer += r.grounding->piece(id);
        if (first_piece < 0 && !r.tokenizer->is_special(id)) first_piece = id;
        show(stops.push(decoder.push(id)));
        if (stops.stopped()) {
            result.reason = StopReason::StopString;
            break;
        }
        if (r.max_tokens >= 0 && result.n_generated >= r.max_tokens) {
            result.reason = StopReason::Limit;  // no need to feed the last token back
            break;
        }
        if (static_cast<int32_t>(fed.size()) >= session.n_ctx()) {
            result.reason = StopReason::ContextFull;
            break;
        }
        try {
            // A generated token: decode(), so models that read memories keep the chunk schedule
            // of generated text (append() would treat it as a one-token prompt).
            logits = session.decode({{id, session.seq_length(r.seq), r.seq, true}}).data();
        } catch (const Cancelled&) {
            result.reason = StopReason::Cancelled;
            break;
        }
        fed.push_back(id);
    }
    if (!stops.stopped()) {
        std::string tail = stops.push(decoder.finish());
        if (!stops.stopped()) tail += stops.flush();
        show(tail);
    }
    result.seconds = now_seconds() - start;
    result.history_text = history_text_of(*r.tokenizer, first_piece, result.text);
    return result;
}

int32_t sampled_vocab(const Session& session, const Tokenizer& tokenizer) {
    return std::min(session.vocab_size(), tokenizer.vocab_size());
}

std::string history_text_of(const Tokenizer& tokenizer, int32_t first_piece, const std::string& text) {
    if (first_piece < 0 || (!text.empty() && text[0] == ' ')) return text;
    const std::string bytes = tokenizer.token_bytes(first_piece);
    return !bytes.empty() && bytes[0] == ' ' ? " " + text : text;
}

}  // namespace mnemo::app
