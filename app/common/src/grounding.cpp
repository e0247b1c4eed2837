#include "app/grounding.hpp"

#include <algorithm>
#include <functional>

#include "mnemo/error.hpp"

namespace mnemo::app {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Letters and digits, and every byte of a UTF-8 sequence: "Zürich" is one word.
bool is_word_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u >= 0x80;
}

std::string_view without_leading_space(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && is_space(s[i])) ++i;
    return s.substr(i);
}

// A quote starts a word: the answer "ruv" is not a quote of "Fyquaruv".
bool starts_word(const std::string& text, size_t at) {
    return at < text.size() && !is_space(text[at]) && (at == 0 || !is_word_char(text[at - 1]));
}

bool ends_word(const std::string& text, size_t at) { return at == text.size() || !is_word_char(text[at]); }

// The word starting at text[at] ("" when text[at] is not a word character).
std::string_view word_at(std::string_view text, size_t at) {
    size_t end = at;
    while (end < text.size() && is_word_char(text[end])) ++end;
    return text.substr(at, end - at);
}

bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

size_t last_word_start(std::string_view s) {
    size_t at = s.size();
    while (at > 0 && is_word_char(s[at - 1])) --at;
    return at < s.size() ? at : s.size() - 1;
}

// A capitalized word followed, after one space, by another: one name ("Upper Crowenminster",
// "Thetol Union"), which a quote does not end inside. Latin capitals only: other scripts have
// no case to tell a name by, and their names are never held back.
bool name_goes_on(const std::string& text, size_t at) {
    return at + 1 < text.size() && text[at] == ' ' && is_upper(text[at + 1]);
}

// A capitalized word right after another and one space: the inside of a name ("Union" of
// "Thetol Union"), where a quote does not start. After a full stop it is a new sentence.
bool inside_name(const std::string& text, size_t at) {
    if (at < 2 || text[at - 1] != ' ' || !is_upper(text[at])) return false;
    size_t start = at - 1;
    while (start > 0 && is_word_char(text[start - 1])) --start;
    return start < at - 1 && is_upper(text[start]);
}

// What a question names: its capitalized words after the first ("Who made the Sumax harp?" ->
// Sumax; "Where is Dipou Foundry based?" -> Dipou, Foundry). Latin capitals only.
std::vector<std::string_view> names_in(std::string_view question) {
    std::vector<std::string_view> names;
    bool first = true;
    for (size_t at = 0; at < question.size(); ++at) {
        if (!is_word_char(question[at]) || (at > 0 && is_word_char(question[at - 1]))) continue;
        if (!first && is_upper(question[at])) names.push_back(word_at(question, at));
        first = false;
    }
    return names;
}

// Whether `word` is a whole word of `text`.
bool holds_word(const std::string& text, std::string_view word) {
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1))
        if (starts_word(text, at) && ends_word(text, at + word.size())) return true;
    return false;
}

}  // namespace

AnswerGrounding::AnswerGrounding(const Tokenizer& tokenizer, int32_t vocab, const std::vector<std::string>& stop_strings)
    : pieces_(static_cast<size_t>(std::max(vocab, 0))), is_end_(pieces_.size(), 0) {
    for (int32_t id : tokenizer.eos_ids)
        if (id >= 0 && id < vocab) is_end_[static_cast<size_t>(id)] = 1;
    if (tokenizer.eos_id && *tokenizer.eos_id >= 0 && *tokenizer.eos_id < vocab) is_end_[static_cast<size_t>(*tokenizer.eos_id)] = 1;
    for (int32_t id = 0; id < vocab; ++id) {
        const auto i = static_cast<size_t>(id);
        if (tokenizer.is_special(id)) is_end_[i] = 1;
        if (is_end_[i]) continue;
        std::string bytes = tokenizer.token_bytes(id);
        for (const std::string& stop : stop_strings)
            if (!stop.empty() && bytes.compare(0, stop.size(), stop) == 0) is_end_[i] = 1;
        if (!is_end_[i]) pieces_[i] = std::move(bytes);
    }
    has_end_ = std::find(is_end_.begin(), is_end_.end(), 1) != is_end_.end();
}

void AnswerGrounding::set_references(std::vector<std::string> texts, std::string_view question) {
    question_words_.clear();
    for (size_t at = 0; at < question.size(); ++at)
        if (is_word_char(question[at]) && (at == 0 || !is_word_char(question[at - 1])))
            question_words_.emplace_back(word_at(question, at));
    std::sort(question_words_.begin(), question_words_.end());
    question_words_.erase(std::unique(question_words_.begin(), question_words_.end()), question_words_.end());
    references_.clear();
    for (std::string& t : texts)
        if (!t.empty()) references_.push_back(std::move(t));
    std::sort(references_.begin(), references_.end());
    references_.erase(std::unique(references_.begin(), references_.end()), references_.end());
    // The references about what was asked: those that name everything the question names.
    const std::vector<std::string_view> names = names_in(question);
    if (names.empty()) return;
    std::vector<std::string> about;
    for (const std::string& t : references_)
        if (std::all_of(names.begin(), names.end(), [&](std::string_view n) { return holds_word(t, n); })) about.push_back(t);
    if (!about.empty()) references_ = std::move(about);
}

bool AnswerGrounding::repeats_question(const std::string& text, size_t at) const {
    const std::string_view word = word_at(text, at);
    return !word.empty() && std::binary_search(question_words_.begin(), question_words_.end(), word, std::less<>{});
}

void AnswerGrounding::find_quotes(std::string_view answer) const {
    std::vector<Quote>& quotes = quotes_;
    quotes.clear();  // kept between tokens: no allocation once it has grown
    for (size_t r = 0; r < references_.size(); ++r) {
        const std::string& text = references_[r];
        if (answer.empty()) {  // every word of every reference can begin the answer
            for (size_t at = 0; at < text.size(); ++at)
                if (starts_word(text, at) && !repeats_question(text, at) && !inside_name(text, at)) quotes.push_back({r, at});
            continue;
        }
        for (size_t at = text.find(answer); at != std::string::npos; at = text.find(answer, at + 1))
            if (starts_word(text, at) && !repeats_question(text, at) && !inside_name(text, at)) quotes.push_back({r, at + answer.size()});
    }
}

bool AnswerGrounding::restrict(float* logits, const std::string& answer) const {
    if (!active()) return true;
    const std::string_view so_far = without_leading_space(answer);
    find_quotes(so_far);
    const std::vector<Quote>& quotes = quotes_;
    bool may_end = false;
    if (!so_far.empty()) {
        const bool ends_capitalized = is_upper(so_far[last_word_start(so_far)]);
        for (const Quote& q : quotes) {
            const std::string& text = references_[q.reference];
            may_end = may_end || (ends_word(text, q.end) && !(ends_capitalized && name_goes_on(text, q.end)));
        }
    }
    bool any = false;
    for (size_t id = 0; id < pieces_.size(); ++id) {
        if (is_end_[id]) continue;  // decided below, once we know whether anything else is left
        // The answer's first piece may bring the space a SentencePiece word starts with.
        const std::string& bytes = pieces_[id];
        const size_t skip = so_far.empty() ? bytes.find_first_not_of(" \n\t\r") : 0;
        // A piece of spaces alone may open the answer, once (SentencePiece writes " 1793" as "▁" +
        // digits); it quotes nothing yet, and the next piece must start a word.
        bool quoted = answer.empty() && !bytes.empty() && skip == std::string::npos;
        if (!bytes.empty() && skip != std::string::npos) {
            const size_t n = bytes.size() - skip;
            for (const Quote& q : quotes) {
                if (references_[q.reference].compare(q.end, n, bytes, skip, n) == 0) {
                    quoted = true;
                    break;
                }
            }
        }
        if (quoted) any = true;
        else logits[id] = kMasked;
    }
    const bool end_allowed = may_end || !any;  // never leave nothing to sample
    if (!end_allowed)
        for (size_t id = 0; id < pieces_.size(); ++id)
            if (is_end_[id]) logits[id] = kMasked;
    return any || has_end_;
}

const float* AnswerGrounding::masked(const float* logits, const std::string& answer, std::vector<float>& buffer) const {
    buffer.assign(logits, logits + pieces_.size());
    return restrict(buffer.data(), answer) ? buffer.data() : nullptr;
}

void AnswerGrounding::check_vocab(int32_t vocab) const {
    if (vocab != this->vocab())
        throw Error("grounded answers: the grounding was made for " + std::to_string(this->vocab()) +
                    " token ids, this model samples from " + std::to_string(vocab));
}

std::vector<std::string> reference_texts(const std::vector<RetrievedReference>& references) {
    std::vector<std::string> texts;
    texts.reserve(references.size());
    for (const RetrievedReference& r : references) texts.push_back(r.text);
    return texts;
}

}  // namespace mnemo::app
