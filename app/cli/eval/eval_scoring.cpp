#include "eval/eval_scoring.hpp"

namespace mnemo::cli {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

std::string normalize_answer(const std::string& text) {
    std::string out;
    bool pending_space = false;
    for (char c : text) {
        if (is_space(c)) {
            pending_space = !out.empty();  // leading whitespace is dropped, inner runs become one space
            continue;
        }
        if (pending_space) out += ' ';
        pending_space = false;
        out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
    // "Paris ." and "Paris!?" end like "Paris": punctuation and the spaces before it go together.
    while (!out.empty() && (out.back() == '.' || out.back() == '!' || out.back() == '?' || out.back() == ' '))
        out.pop_back();
    return out;
}

ItemScore score_output(const std::string& output, const std::vector<std::string>& accepted) {
    const std::string got = normalize_answer(output);
    ItemScore s;
    for (const std::string& answer : accepted) {
        const std::string want = normalize_answer(answer);
        if (want.empty()) continue;  // read_eval_items refuses these; an empty answer would match anything
        s.exact = s.exact || got == want;
        s.contains = s.contains || got.find(want) != std::string::npos;
    }
    return s;
}

}  // namespace mnemo::cli
