// UTF-8 decoding/encoding and category lookups over the generated tables (unicode_tables.cpp).
#include <algorithm>

#include "tokenizer/unicode.hpp"

namespace mnemo::unicode {

Decoded decode_utf8(std::string_view s, size_t pos) {
    const auto b0 = static_cast<unsigned char>(s[pos]);
    if (b0 < 0x80) return {b0, 1};
    size_t len;
    char32_t cp;
    char32_t min;
    if (b0 >= 0xC2 && b0 <= 0xDF) { len = 2; cp = b0 & 0x1F; min = 0x80; }
    else if (b0 >= 0xE0 && b0 <= 0xEF) { len = 3; cp = b0 & 0x0F; min = 0x800; }
    else if (b0 >= 0xF0 && b0 <= 0xF4) { len = 4; cp = b0 & 0x07; min = 0x10000; }
    else return {kInvalid, 1};
    if (pos + len > s.size()) return {kInvalid, 1};
    for (size_t i = 1; i < len; ++i) {
        const auto b = static_cast<unsigned char>(s[pos + i]);
        if ((b & 0xC0) != 0x80) return {kInvalid, 1};
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kInvalid, 1};
    return {cp, len};
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// Could `tail` (shorter than its lead byte announces) still become a valid sequence?
static bool is_viable_prefix(std::string_view tail) {
    const auto b0 = static_cast<unsigned char>(tail[0]);
    size_t need;
    if (b0 >= 0xC2 && b0 <= 0xDF) need = 2;
    else if (b0 >= 0xE0 && b0 <= 0xEF) need = 3;
    else if (b0 >= 0xF0 && b0 <= 0xF4) need = 4;
    else return false;
    if (tail.size() >= need) return false;
    for (size_t i = 1; i < tail.size(); ++i) {
        const auto b = static_cast<unsigned char>(tail[i]);
        // The second byte's range is narrower for E0/ED/F0/F4 (overlongs, surrogates, > U+10FFFF).
        unsigned char lo = 0x80, hi = 0xBF;
        if (i == 1) {
            if (b0 == 0xE0) lo = 0xA0;
            if (b0 == 0xED) hi = 0x9F;
            if (b0 == 0xF0) lo = 0x90;
            if (b0 == 0xF4) hi = 0x8F;
        }
        if (b < lo || b > hi) return false;
    }
    return true;
}

size_t complete_utf8_prefix(std::string_view bytes) {
    // Only the last up-to-3 bytes can be an unfinished character.
    const size_t n = bytes.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto b = static_cast<unsigned char>(bytes[n - back]);
        if ((b & 0xC0) == 0x80) continue;  // continuation byte: look further back for the lead
        if (b >= 0xC0 && is_viable_prefix(bytes.substr(n - back))) return n - back;
        break;
    }
    return n;
}

std::string sanitize_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t pos = 0;
    while (pos < bytes.size()) {
        const Decoded d = decode_utf8(bytes, pos);
        if (d.cp != kInvalid) {
            out.append(bytes.substr(pos, d.len));
            pos += d.len;
            continue;
        }
        // One U+FFFD per maximal subpart: a viable-looking lead byte swallows its continuations.
        size_t len = 1;
        while (pos + len < bytes.size() && len < 4 &&
               is_viable_prefix(bytes.substr(pos, len + 1)))
            ++len;
        append_utf8(out, 0xFFFD);
        pos += len;
    }
    return out;
}

Category category(char32_t cp) {
    if (cp < 0x80) {
        // ASCII fast path: the hot loop of every pre-tokenizer.
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return kLetter;
        if (cp >= '0' && cp <= '9') return kNumber;
    }
    if (cp == kInvalid) return kOther;
    const CategoryRange* begin = tables::kCategories;
    const CategoryRange* end = begin + tables::kCategoryCount;
    const CategoryRange* it = std::upper_bound(
        begin, end, cp, [](char32_t c, const CategoryRange& r) { return c < r.lo; });
    if (it == begin) return kOther;
    --it;
    return cp <= it->hi ? it->cat : kOther;
}

bool is_whitespace(char32_t cp) {
    for (size_t i = 0; i < tables::kWhiteSpaceCount; ++i)
        if (cp >= tables::kWhiteSpace[i].lo && cp <= tables::kWhiteSpace[i].hi) return true;
    return false;
}

}  // namespace mnemo::unicode
