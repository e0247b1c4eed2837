// Grounded answers (`--grounded` on `mnemo ask`, `chat` and `eval`): the answer may only quote the
// references it read. Before each token is sampled, every token that would not continue a quote
// of one reference's text is masked out, and the answer may end only where a quote ends a word:
// "Fyqua" cannot stop short of "Fyquaruv", and a name no reference holds cannot be written at
// all. The model still chooses which quote and where it starts; the constraint only removes what
// the memories do not say, as a grammar removes what a format does not allow (llama.cpp's GBNF).
// Nor may a quote start at a word of the question: an answer tells what the question does not
// already say ("Who made the Sumax harp?" is not answered "Sumax"; the reference that holds the
// maker also holds the harp's name, and a quote of it is the commonest wrong grounded answer).
// And a quote neither starts nor ends inside a name: a capitalized word and a capitalized word
// that follows it after one space are one name ("Upper" is not an answer where the reference
// says "Upper Crowenminster", nor "Union" where it says "Thetol Union"; Latin capitals only). And the quote comes from the
// references about what was asked: when the question names something (its capitalized words
// after the first: "Sumax" in "Who made the Sumax harp?") and some references name it all, only
// those are quoted; the other references read (another harp's maker, another town's roofs) are not.
//
// For short factual answers (a name, a year, a colour) from a memory model. It is off by default:
// an answer in the model's own words (a sentence, a summary) cannot be a quote, and a question
// that read no references is answered unconstrained (nothing to quote).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/memory/explicit_memory.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::app {

class AnswerGrounding {
public:
    // `vocab`: the ids that can be sampled (generate()'s vocabulary). `stop_strings`: a token
    // whose text starts with one of them ends the answer as an end-of-sequence token does.
    AnswerGrounding(const Tokenizer& tokenizer, int32_t vocab, const std::vector<std::string>& stop_strings);

    // The texts the answer may quote (each reference once is enough; empty texts are ignored), and
    // the question (or prompt) they answer: no quote starts at one of its words (byte for byte),
    // and when some texts name everything the question names, only those are quoted.
    void set_references(std::vector<std::string> texts, std::string_view question);
    bool active() const { return !references_.empty(); }

    // Masks logits[vocab] in place for the next token after `answer` (the text generated so far,
    // as the tokens' bytes). A masked logit becomes kMasked; when no token can continue any quote,
    // only the end tokens stay. False when nothing stays at all (no quote goes on and the
    // vocabulary has no end token, as in a completion model without stop strings): the answer
    // is over (generate() stops with StopReason::QuoteEnded).
    bool restrict(float* logits, const std::string& answer) const;
    // What a token loop samples from: `logits` (vocab() floats) copied into `buffer` and
    // restricted; nullptr when the answer is over (restrict() false).
    const float* masked(const float* logits, const std::string& answer, std::vector<float>& buffer) const;
    // Throws mnemo::Error when this grounding was made for another vocabulary than `vocab` ids.
    void check_vocab(int32_t vocab) const;

    // The answer's bytes after `id` (the token's text; nothing for an end token).
    const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
    bool ends(int32_t id) const { return is_end_[static_cast<size_t>(id)] != 0; }
    int32_t vocab() const { return static_cast<int32_t>(pieces_.size()); }

    static constexpr float kMasked = -1e30f;  // finite: the sampler refuses non-finite logits

private:
    struct Quote {  // where the answer so far is a quote: a reference, and the offset after it
        size_t reference;
        size_t end;
    };
    // Every place the answer so far (without its leading spaces) quotes a reference, into quotes_.
    void find_quotes(std::string_view answer) const;

    std::vector<std::string> pieces_;  // each id's bytes ("" for an end token)
    std::vector<char> is_end_;         // eos ids, special tokens, stop-string starts
    bool has_end_ = false;             // any end token at all (else restrict() can say the answer is over)
    // Whether the word starting at text[at] is one of the question's.
    bool repeats_question(const std::string& text, size_t at) const;

    std::vector<std::string> references_;  // compared byte for byte: a quote keeps its case
    std::vector<std::string> question_words_;  // sorted, unique
    mutable std::vector<Quote> quotes_;    // find_quotes()'s result, reused from token to token
};

// The texts of references a RetrievalRecorder noted (peek()), for set_references.
std::vector<std::string> reference_texts(const std::vector<RetrievedReference>& references);

}  // namespace mnemo::app
