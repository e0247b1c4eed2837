// NFC normalisation (canonical decomposition, canonical ordering, canonical composition) as
// Qwen2's tokenizer.json asks for with "normalizer": {"type": "NFC"}. Bytes that are not valid
// UTF-8 pass through untouched and block composition across them.
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tokenizer/unicode.hpp"

namespace mnemo::unicode {
namespace {

// Hangul syllables decompose and compose arithmetically (Unicode 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint8_t combining_class(char32_t cp) {
    if (cp < 0x300 || cp == kInvalid) return 0;
    const CombiningRange* begin = tables::kCombiningClasses;
    const CombiningRange* end = begin + tables::kCombiningClassCount;
    const CombiningRange* it = std::upper_bound(
        begin, end, cp, [](char32_t c, const CombiningRange& r) { return c < r.lo; });
    if (it == begin) return 0;
    --it;
    return cp <= it->hi ? it->ccc : 0;
}

const Decomposition* find_decomposition(char32_t cp) {
    const Decomposition* begin = tables::kDecompositions;
    const Decomposition* end = begin + tables::kDecompositionCount;
    const Decomposition* it = std::lower_bound(
        begin, end, cp, [](const Decomposition& d, char32_t c) { return d.cp < c; });
    return it != end && it->cp == cp ? it : nullptr;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
    if (cp >= kSBase && cp < kSBase + kSCount) {
        const char32_t s = cp - kSBase;
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount) out.push_back(kTBase + s % kTCount);
        return;
    }
    if (cp >= 0xC0 && cp != kInvalid) {
        if (const Decomposition* d = find_decomposition(cp)) {
            decompose(d->a, out);  // depth is bounded by the table (at most 4 levels)
            if (d->b) decompose(d->b, out);
            return;
        }
    }
    out.push_back(cp);
}

const std::unordered_map<uint64_t, char32_t>& composition_map() {
    static const std::unordered_map<uint64_t, char32_t> map = [] {
        std::unordered_map<uint64_t, char32_t> m;
        for (size_t i = 0; i < tables::kDecompositionCount; ++i) {
            const Decomposition& d = tables::kDecompositions[i];
            if (d.composes) m.emplace((uint64_t(d.a) << 32) | d.b, d.cp);
        }
        return m;
    }();
    return map;
}

std::optional<char32_t> compose_pair(char32_t a, char32_t b) {
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
        b < kTBase + kTCount)
        return a + (b - kTBase);
    const auto& m = composition_map();
    auto it = m.find((uint64_t(a) << 32) | b);
    if (it == m.end()) return std::nullopt;
    return it->second;
}

}  // namespace

std::string nfc(std::string_view text) {
    if (std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; }))
        return std::string(text);
    // Decompose, remembering the raw byte of invalid units so they survive unchanged.
    std::vector<char32_t> cps;
    std::vector<unsigned char> raw;  // raw byte for kInvalid entries, in order
    cps.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const Decoded d = decode_utf8(text, pos);
        if (d.cp == kInvalid) raw.push_back(static_cast<unsigned char>(text[pos]));
        decompose(d.cp, cps);
        pos += d.len;
    }
    // Canonical ordering: stable-sort each run of non-starters by combining class.
    for (size_t i = 0; i < cps.size();) {
        if (combining_class(cps[i]) == 0) { ++i; continue; }
        size_t j = i;
        while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
        std::stable_sort(cps.begin() + i, cps.begin() + j, [](char32_t a, char32_t b) {
            return combining_class(a) < combining_class(b);
        });
        i = j;
    }
    // Canonical composition.
    std::vector<char32_t> out;
    out.reserve(cps.size());
    std::optional<size_t> starter;
    uint8_t last_ccc = 0;
    for (char32_t cp : cps) {
        const uint8_t ccc = combining_class(cp);
        if (cp != kInvalid && starter && out[*starter] != kInvalid) {
            const bool blocked = out.size() - 1 != *starter && (last_ccc == 0 || last_ccc >= ccc);
            if (!blocked) {
                if (auto c = compose_pair(out[*starter], cp)) {
                    out[*starter] = *c;
                    continue;
                }
            }
        }
        if (ccc == 0) starter = out.size();
        last_ccc = ccc;
        out.push_back(cp);
    }
    std::string result;
    result.reserve(text.size());
    size_t next_raw = 0;
    for (char32_t cp : out) {
        if (cp == kInvalid) result += static_cast<char>(raw[next_raw++]);
        else append_utf8(result, cp);
    }
    return result;
}

}  // namespace mnemo::unicode
