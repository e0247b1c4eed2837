// Making outside text safe to print (mnemo/io/printable.hpp). UTF-8 is decoded by the tokenizer's
// strict decoder, so "valid" means the same thing here as in every tokenizer.
#include "mnemo/io/printable.hpp"

#include <cstdio>
#include "tokenizer/unicode.hpp"

namespace mnemo {
namespace {

// The embeddings, overrides and isolates: each reorders what a reader sees against what the bytes
// say ("Trojan Source", CVE-2021-42574). The marks (LRM, RLM, ALM) are kept: right-to-left titles
// need them, and alone they move no more than one neutral character.
bool is_bidi_control(char32_t cp) {
    return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// C0, DEL and C1 controls, and U+2028/U+2029, which log viewers and JavaScript take as line ends.
bool is_control(char32_t cp) {
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) || cp == 0x2028 || cp == 0x2029;
}

// The escape of a code point. Code points from U+0080 up are written \u{...}, so that \xHH
// (below) always means a byte that is not UTF-8: a C1 control U+0085 and a stray byte 0x85 are
// told apart.
std::string escape_code_point(char32_t cp) {
    switch (cp) {
        case '\n': return "\\n";
        case '\t': return "\\t";
        case '\r': return "\\r";
        case 0x1B: return "\\e";
        default: break;
    }
    char buf[16];
    if (cp < 0x80) std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(cp));
    else std::snprintf(buf, sizeof buf, "\\u{%04X}", static_cast<unsigned>(cp));
    return buf;
}

std::string escape_byte(unsigned char b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(b));
    return buf;
}

}  // namespace

size_t invalid_utf8_offset(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        const auto d = unicode::decode_utf8(text, pos);
        if (d.cp == unicode::kInvalid) return pos;
        pos += d.len;
    }
    return std::string::npos;
}

bool is_valid_utf8(std::string_view text) { return invalid_utf8_offset(text) == std::string::npos; }

std::string printable(std::string_view text, size_t max_chars) {
    std::string out;
    out.reserve(text.size() < max_chars ? text.size() : max_chars);
    size_t pos = 0;
    while (pos < text.size()) {
        const auto d = unicode::decode_utf8(text, pos);
        std::string piece;
        if (d.cp == unicode::kInvalid) piece = escape_byte(static_cast<unsigned char>(text[pos]));
        else if (is_control(d.cp) || is_bidi_control(d.cp)) piece = escape_code_point(d.cp);
        else if (d.cp == '\\') piece = "\\\\";
        else piece = std::string(text.substr(pos, d.len));
        // Whole pieces only: a cut escape or a cut UTF-8 sequence would be a new problem.
        if (out.size() + piece.size() > max_chars) break;
        out += piece;
        pos += d.len;
    }
    if (pos < text.size()) out += "...(" + std::to_string(text.size() - pos) + " more bytes)";
    return out;
}

}  // namespace mnemo
