// The token loop of every program that writes text (`mnemo run`, `chat`, `ask`, `eval`, and
// mnemo-chat): sample, stream the text through the UTF-8 decoder and the stop-string matcher,
// feed the token back, until end-of-sequence, a stop string, the token limit, a full context or
// the cancel flag (Ctrl-C in the CLI). The text goes to a callback, so a terminal and a window use the same loop.
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

class AnswerGrounding;

// QuoteEnded: a grounded answer (AnswerGrounding) whose quote can go no further, from a model
// with no end-of-sequence token or stop string to say so itself.
enum class StopReason { Eos, StopString, Limit, ContextFull, Cancelled, QuoteEnded };

struct GenerateResult {
    int32_t n_generated = 0;  // tokens sampled (the eos token is not counted)
    double seconds = 0.0;
    StopReason reason = StopReason::Limit;
    std::string text;  // everything emitted
    // The text as it continues the conversation: `text` with the space a SentencePiece
    // tokenizer drops from a sequence's first piece put back. A chat keeps this one in its
    // history, so the next turn's rendering tokenizes to the tokens generated (text would not:
    // "\nKaimekim" and "\n Kaimekim" are other tokens) and the cache is reused, not rebuilt.
    std::string history_text;
};

struct GenerateRequest {
    // What every caller has: the session and its tokenizer, the sampler, the tokens in the
    // sequence's cache, and the cancel flag (nullptr: none). Callers then set only what differs:
    // the first logits, stop strings, the token limit, where the text goes.
    GenerateRequest(Session& session, const Tokenizer& tokenizer, Sampler& sampler, std::vector<int32_t>& fed,
                    const std::atomic<bool>* cancel)
        : session(&session), tokenizer(&tokenizer), sampler(&sampler), fed(&fed), cancel(cancel) {}

    Session* session;
    const Tokenizer* tokenizer;
    Sampler* sampler;
    int32_t seq = 0;
    // Tokens in the sequence's cache; grows with every token fed back. Also the history for the
    // repetition penalty.
    std::vector<int32_t>* fed;
    const float* first_logits = nullptr;  // logits after the last token of *fed
    std::vector<std::string> stop_strings;
    int32_t max_tokens = -1;  // < 0: until the context is full
    const std::atomic<bool>* cancel;
    std::function<void(const std::string&)> emit;  // called with each piece of visible text
    // Set: the answer may only quote these references (app/grounding.hpp; its vocab must be this
    // loop's: min(session vocab, tokenizer vocab)). nullptr or no references: unconstrained.
    const AnswerGrounding* grounding = nullptr;
};

GenerateResult generate(const GenerateRequest& r);

// The ids a token loop samples from: models often pad their output layer beyond the tokenizer's
// vocabulary, and ids past it have no text.
int32_t sampled_vocab(const Session& session, const Tokenizer& tokenizer);

// GenerateResult::history_text of generated text whose first token with text is `first_piece`
// (-1: none): `text` with the space a SentencePiece decode drops from a first piece put back.
std::string history_text_of(const Tokenizer& tokenizer, int32_t first_piece, const std::string& text);

}  // namespace mnemo::app
