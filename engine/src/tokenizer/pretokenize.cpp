// Hand-written equivalents of the split regexes. Each matcher mirrors the regex alternatives in
// order (the regex engine takes the first alternative that matches at the current position), so
// the behaviour including backtracking corner cases such as \s+(?!\S) is reproduced exactly.
// The sequences (SplitPattern::Default and after) run one matcher per step over every piece the
// previous step produced, keeping both the matches and the text between them, as llama.cpp's
// regex lists do; tools/reference/pretokenize_reference.py writes the goldens with Python's regex.
#include "tokenizer/pretokenize.hpp"

#include <array>

#include "tokenizer/unicode.hpp"

namespace mnemo::tokenizer_detail {
namespace {

constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The segment decoded once: code points plus the byte offset where each starts (offsets has one
// extra entry, the end).
struct Chars {
    std::vector<char32_t> cp;
    std::vector<size_t> off;
};

Chars decode_all(std::string_view text) {
    Chars c;
    c.cp.reserve(text.size());
    c.off.reserve(text.size() + 1);
    for (size_t pos = 0; pos < text.size();) {
        const unicode::Decoded d = unicode::decode_utf8(text, pos);
        c.cp.push_back(d.cp);
        c.off.push_back(pos);
        pos += d.len;
    }
    c.off.push_back(text.size());
    return c;
}

bool is_l(char32_t c) { return unicode::is_letter(c); }
bool is_n(char32_t c) { return unicode::is_number(c); }
bool is_s(char32_t c) { return c != unicode::kInvalid && unicode::is_whitespace(c); }
bool is_other(char32_t c) { return !is_s(c) && !is_l(c) && !is_n(c); }  // [^\s\p{L}\p{N}]
bool is_crlf(char32_t c) { return c == '\r' || c == '\n'; }

// Letters that may follow the apostrophe, under simple case folding when case_insensitive
// (U+017F LATIN SMALL LETTER LONG S folds to 's').
bool letter_eq(char32_t c, char lower, bool case_insensitive) {
    if (c == static_cast<char32_t>(lower)) return true;
    if (!case_insensitive) return false;
    if (c == static_cast<char32_t>(lower - 'a' + 'A')) return true;
    return lower == 's' && c == 0x17F;
}

// 's|'t|'re|'ve|'m|'ll|'d -> length in code points, 0 when none matches.
size_t match_contraction(const Chars& c, size_t i, bool ci) {
    const size_t n = c.cp.size();
    if (c.cp[i] != '\'' || i + 1 >= n) return 0;
    const char32_t a = c.cp[i + 1];
    for (char one : {'s', 't', 'm', 'd'})
        if (letter_eq(a, one, ci)) {
            // Alternatives are tried in order 's,'t,'re,'ve,'m,'ll,'d; single letters never
            // conflict with the two-letter ones because their first letters differ.
            return 2;
        }
    if (i + 2 >= n) return 0;
    const char32_t b = c.cp[i + 2];
    if (letter_eq(a, 'r', ci) && letter_eq(b, 'e', ci)) return 3;
    if (letter_eq(a, 'v', ci) && letter_eq(b, 'e', ci)) return 3;
    if (letter_eq(a, 'l', ci) && letter_eq(b, 'l', ci)) return 3;
    return 0;
}

size_t run(const Chars& c, size_t i, bool (*pred)(char32_t)) {
    size_t j = i;
    while (j < c.cp.size() && pred(c.cp[j])) ++j;
    return j;
}

// \s+(?!\S) then \s+ : the whitespace run, leaving its last character for the next word when a
// non-space follows (so " word" keeps its space).
size_t match_trailing_spaces(const Chars& c, size_t i) {
    const size_t j = run(c, i, is_s);
    if (j == i) return i;
    if (j == c.cp.size()) return j;
    if (j - 1 > i) return j - 1;
    return j;  // the plain \s+ alternative
}

size_t next_gpt2(const Chars& c, size_t i) {
    const size_t n = c.cp.size();
    if (size_t k = match_contraction(c, i, false)) return i + k;
    const size_t after_space = (c.cp[i] == ' ' && i + 1 < n) ? i + 1 : i;
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the optional space is taken when the class
    // matches right after it; otherwise the class must match at i itself.
    for (auto pred : {is_l, is_n, is_other}) {
        if (after_space != i && pred(c.cp[after_space])) return run(c, after_space, pred);
        if (pred(c.cp[i])) return run(c, i, pred);
    }
    return match_trailing_spaces(c, i);
}

size_t next_llama3(const Chars& c, size_t i, size_t max_digits) {
    const size_t n = c.cp.size();
    if (size_t k = match_contraction(c, i, true)) return i + k;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    const char32_t ch = c.cp[i];
    if (!is_crlf(ch) && !is_l(ch) && !is_n(ch) && i + 1 < n && is_l(c.cp[i + 1]))
        return run(c, i + 1, is_l);
    if (is_l(ch)) return run(c, i, is_l);
    // \p{N}{1,3}  (or \p{N})
    if (is_n(ch)) {
        size_t j = i;
        while (j < n && j - i < max_digits && is_n(c.cp[j])) ++j;
        return j;
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    {
        size_t start = i;
        if (ch == ' ' && i + 1 < n && is_other(c.cp[i + 1])) start = i + 1;
        if (is_other(c.cp[start])) return run(c, run(c, start, is_other), is_crlf);
    }
    // \s*[\r\n]+ : up to and including the last \r or \n of the whitespace run.
    {
        const size_t j = run(c, i, is_s);
        for (size_t k = j; k > i; --k)
            if (is_crlf(c.cp[k - 1])) return k;
    }
    return match_trailing_spaces(c, i);
}

// ---- Steps of the split sequences. Each returns the end of the step's match at i (a match is
// never empty), or i when the regex does not match there.

bool is_p(char32_t c) { return c != unicode::kInvalid && unicode::category(c) == unicode::kPunct; }
bool is_ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }

// [\p{P}\$\+<=>\^~\|]+  (with_backtick: and `)
size_t punct_run(const Chars& c, size_t i, bool with_backtick) {
    auto in_class = [&](char32_t ch) {
        switch (ch) {
            case '$': case '+': case '<': case '=': case '>': case '^': case '~': case '|': return true;
            case '`': return with_backtick;
            default: return is_p(ch);
        }
    };
    size_t j = i;
    while (j < c.cp.size() && in_class(c.cp[j])) ++j;
    return j;
}
size_t step_punct_default(const Chars& c, size_t i) { return punct_run(c, i, false); }
size_t step_punct_falcon(const Chars& c, size_t i) { return punct_run(c, i, true); }
size_t step_gpt2(const Chars& c, size_t i) { return next_gpt2(c, i); }
size_t step_numbers(const Chars& c, size_t i) { return run(c, i, is_n); }                      // \p{N}+
size_t step_number(const Chars& c, size_t i) { return is_n(c.cp[i]) ? i + 1 : i; }            // \p{N}
size_t step_crlf(const Chars& c, size_t i) { return is_crlf(c.cp[i]) ? i + 1 : i; }          // [\r\n]
size_t step_three_digits(const Chars& c, size_t i) {                                           // [0-9]{3}
    if (i + 3 > c.cp.size()) return i;
    for (size_t k = i; k < i + 3; ++k)
        if (!is_ascii_digit(c.cp[k])) return i;
    return i + 3;
}
// \s?X+ : the optional whitespace is taken only when X follows it (else the match must start at i).
size_t space_then_run(const Chars& c, size_t i, bool (*pred)(char32_t)) {
    if (is_s(c.cp[i]) && i + 1 < c.cp.size() && pred(c.cp[i + 1])) return run(c, i + 1, pred);
    return run(c, i, pred);
}
size_t step_space_letters(const Chars& c, size_t i) { return space_then_run(c, i, is_l); }
size_t step_space_punct(const Chars& c, size_t i) { return space_then_run(c, i, is_p); }
bool is_cjk_hangul(char32_t c) {  // [一-龥ࠀ-一가-퟿]
    return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x0800 && c <= 0x4E00) || (c >= 0xAC00 && c <= 0xD7FF);
}
size_t step_cjk(const Chars& c, size_t i) { return run(c, i, is_cjk_hangul); }

using Step = size_t (*)(const Chars&, size_t);

struct Sequence {
    std::vector<Step> steps;
    const char* text;  // the steps' regexes, for messages
};

const Sequence* sequence_of(SplitPattern p) {
    static const Sequence kDefault{{step_punct_default, step_gpt2, step_numbers, step_three_digits},
                                   R"([\p{P}\$\+<=>\^~\|]+ ; 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) ; \p{N}+ ; [0-9][0-9][0-9])"};
    static const Sequence kStarcoder{{step_number, step_gpt2},
                                     R"(\p{N} ; 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))"};
    static const Sequence kFalcon{{step_punct_falcon, step_gpt2, step_three_digits},
                                  R"([\p{P}\$\+<=>\^~\|`]+ ; 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) ; [0-9][0-9][0-9])"};
    static const Sequence kDeepseekCoder{{step_crlf, step_space_letters, step_space_punct, step_cjk, step_number},
                                         "[\\r\\n] ; \\s?\\p{L}+ ; \\s?\\p{P}+ ; [\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+ ; \\p{N}"};
    switch (p) {
        case SplitPattern::Default: return &kDefault;
        case SplitPattern::Starcoder: return &kStarcoder;
        case SplitPattern::Falcon: return &kFalcon;
        case SplitPattern::DeepseekCoder: return &kDeepseekCoder;
        default: return nullptr;
    }
}

// One step over one piece: the matches, found left to right without overlap, and the runs of
// text between them, in order.
void split_step(std::string_view piece, Step step, std::vector<std::string_view>& out) {
    const Chars c = decode_all(piece);
    size_t gap = 0;  // first code point not yet emitted
    for (size_t i = 0; i < c.cp.size();) {
        const size_t j = step(c, i);
        if (j <= i) {
            ++i;
            continue;
        }
        if (gap < i) out.push_back(piece.substr(c.off[gap], c.off[i] - c.off[gap]));
        out.push_back(piece.substr(c.off[i], c.off[j] - c.off[i]));
        i = gap = j;
    }
    if (gap < c.cp.size()) out.push_back(piece.substr(c.off[gap]));
}

}  // namespace

std::optional<SplitPattern> recognise_split_pattern(std::string_view regex) {
    if (regex == kGpt2Regex) return SplitPattern::Gpt2;
    if (regex == kLlama3Regex) return SplitPattern::Llama3;
    if (regex == kQwen2Regex) return SplitPattern::Qwen2;
    return std::nullopt;
}

const char* split_pattern_regex(SplitPattern p) {
    switch (p) {
        case SplitPattern::Gpt2: return kGpt2Regex;
        case SplitPattern::Llama3: return kLlama3Regex;
        case SplitPattern::Qwen2: return kQwen2Regex;
        case SplitPattern::None: break;
        default: return sequence_of(p)->text;
    }
    return "";
}

std::vector<std::string_view> split_words(std::string_view text, SplitPattern pattern) {
    std::vector<std::string_view> words;
    if (text.empty()) return words;
    if (pattern == SplitPattern::None) {
        words.push_back(text);
        return words;
    }
    if (const Sequence* seq = sequence_of(pattern)) {
        words.push_back(text);
        std::vector<std::string_view> next;
        for (Step step : seq->steps) {
            next.clear();
            for (std::string_view piece : words) split_step(piece, step, next);
            words.swap(next);
        }
        return words;
    }
    const Chars c = decode_all(text);
    for (size_t i = 0; i < c.cp.size();) {
        size_t j;
        switch (pattern) {
            case SplitPattern::Gpt2: j = next_gpt2(c, i); break;
            case SplitPattern::Llama3: j = next_llama3(c, i, 3); break;
            default: j = next_llama3(c, i, 1); break;
        }
        if (j <= i) j = i + 1;  // cannot happen for these patterns; guarantees progress
        words.push_back(text.substr(c.off[i], c.off[j] - c.off[i]));
        i = j;
    }
    return words;
}

namespace {
struct ByteMap {
    std::array<std::string, 256> to_text;
    std::array<char32_t, 256> to_cp{};
    ByteMap() {
        // Printable Latin-1 bytes keep their code point; the 68 others are numbered from U+0100 in
        // byte order, which is what makes every byte visible in vocab strings.
        int next = 0;
        for (int b = 0; b < 256; ++b) {
            const bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            to_cp[b] = keep ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
            unicode::append_utf8(to_text[b], to_cp[b]);
        }
    }
};
const ByteMap& byte_map() {
    static const ByteMap m;
    return m;
}
}  // namespace

const std::string& byte_to_unicode(unsigned char b) { return byte_map().to_text[b]; }

int unicode_to_byte(char32_t cp) {
    if (cp < 0x100) {
        const bool keep = (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || cp >= 0xAE;
        return keep ? static_cast<int>(cp) : -1;
    }
    if (cp < 0x100 + 68) {
        const auto& m = byte_map();
        for (int b = 0; b < 256; ++b)
            if (m.to_cp[b] == cp) return b;
    }
    return -1;
}

}  // namespace mnemo::tokenizer_detail
