// Encoding and decoding for BpeTokenizer (see tokenizer_bpe.hpp). Merging runs on a linked list
// of symbols with a min-heap of candidate pairs ordered by (merge rank, position), so a word of n
// symbols costs O(n log n) instead of rescanning all pairs after every merge.
#include "tokenizer/bpe.hpp"

#include <algorithm>
#include <queue>

#include "mnemo/error.hpp"
#include "tokenizer/unicode.hpp"

namespace mnemo::tokenizer_detail {
namespace {

// Real vocabularies stay below ~260k ids; the limit bounds the per-id tables a hostile file can
// make us allocate.
constexpr int32_t kMaxVocab = 1 << 21;
constexpr size_t kCacheMaxWordBytes = 128;
constexpr size_t kCacheMaxEntries = 1 << 16;
const std::string kMetaspace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

std::string hex_byte_piece(unsigned b) {
    static const char* digits = "0123456789ABCDEF";
    return std::string("<0x") + digits[b >> 4] + digits[b & 15] + ">";
}

// "<0xNN>" -> NN, or -1.
int parse_byte_piece(std::string_view p) {
    if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return -1;
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    const int hi = hex(p[3]), lo = hex(p[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    while (true) {
        const size_t hit = s.find(from, pos);
        if (hit == std::string_view::npos) break;
        out.append(s.substr(pos, hit - pos));
        out.append(to);
        pos = hit + from.size();
    }
    out.append(s.substr(pos));
    return out;
}

// Length of the whitespace run ending at `end` (walking back over whole characters).
size_t trailing_whitespace(std::string_view s) {
    size_t end = s.size();
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && end - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
            --start;
        const unicode::Decoded d = unicode::decode_utf8(s, start);
        if (start + d.len != end || d.cp == unicode::kInvalid || !unicode::is_whitespace(d.cp)) break;
        end = start;
    }
    return s.size() - end;
}

size_t leading_whitespace(std::string_view s) {
    size_t pos = 0;
    while (pos < s.size()) {
        const unicode::Decoded d = unicode::decode_utf8(s, pos);
        if (d.cp == unicode::kInvalid || !unicode::is_whitespace(d.cp)) break;
        pos += d.len;
    }
    return pos;
}

}  // namespace

BpeTokenizer::BpeTokenizer(BpeConfig config) : cfg_(std::move(config)) {
    const std::string& src = cfg_.source;
    int32_t size = 0;
    auto check_range = [&](int64_t id, const std::string& what) {
        if (id < 0 || id >= kMaxVocab)
            throw Error(src + ": " + what + ": id " + std::to_string(id) + " out of range [0, " +
                        std::to_string(kMaxVocab) + ")");
        size = std::max(size, static_cast<int32_t>(id) + 1);
    };
    for (const auto& [piece, id] : cfg_.vocab) check_range(id, "model.vocab['" + piece + "']");
    for (const auto& a : cfg_.added) check_range(a.id, "added_tokens '" + a.content + "'");
    if (!cfg_.id_pieces.empty()) check_range(static_cast<int64_t>(cfg_.id_pieces.size()) - 1, "token list");
    if (size == 0) throw Error(src + ": model.vocab is empty");

    pieces_.assign(size, std::string());
    std::vector<uint8_t> used(size, 0);
    for (const auto& [piece, id] : cfg_.vocab) {
        if (used[id])
            throw Error(src + ": model.vocab: duplicate id " + std::to_string(id) + " for '" +
                        pieces_[id] + "' and '" + piece + "'");
        used[id] = 1;
        pieces_[id] = piece;
    }
    for (size_t id = 0; id < cfg_.id_pieces.size(); ++id) pieces_[id] = std::move(cfg_.id_pieces[id]);
    cfg_.id_pieces.clear();
    cfg_.id_pieces.shrink_to_fit();

    bytes_.assign(size, std::string());
    for (int32_t id = 0; id < size; ++id) {
        const std::string& p = pieces_[id];
        std::string& out = bytes_[id];
        if (cfg_.flavour == BpeFlavour::ByteLevel) {
            // Vocab characters map back to bytes; a character outside the map (only in hand-made
            // vocabularies) contributes its own UTF-8.
            for (size_t pos = 0; pos < p.size();) {
                const unicode::Decoded d = unicode::decode_utf8(p, pos);
                const int b = d.cp == unicode::kInvalid ? -1 : unicode_to_byte(d.cp);
                if (b >= 0) out += static_cast<char>(b);
                else out.append(p, pos, d.len);
                pos += d.len;
            }
        } else {
            const int b = cfg_.byte_fallback ? parse_byte_piece(p) : -1;
            out = b >= 0 ? std::string(1, static_cast<char>(b)) : replace_all(p, kMetaspace, " ");
        }
    }

    special_.assign(size, 0);
    std::vector<uint8_t> added_seen(size, 0);
    for (const auto& a : cfg_.added) {
        if (a.content.empty())
            throw Error(src + ": added_tokens: token id " + std::to_string(a.id) +
                        " has empty \"content\"");
        if (added_seen[a.id] && bytes_[a.id] != a.content)
            throw Error(src + ": added_tokens: duplicate id " + std::to_string(a.id) + " for '" +
                        bytes_[a.id] + "' and '" + a.content + "'");
        added_seen[a.id] = 1;
        if (pieces_[a.id].empty()) pieces_[a.id] = a.content;
        bytes_[a.id] = a.content;  // added tokens decode to their literal text
        special_[a.id] = a.special ? 1 : 0;
        added_ids_[a.content] = a.id;
    }
    for (const auto& a : cfg_.added) {
        auto& bucket = added_by_byte_[static_cast<unsigned char>(a.content[0])];
        if (std::none_of(bucket.begin(), bucket.end(),
                         [&](const AddedToken* t) { return t->content == a.content; }))
            bucket.push_back(&a);
    }
    for (auto& bucket : added_by_byte_)
        std::stable_sort(bucket.begin(), bucket.end(), [](const AddedToken* x, const AddedToken* y) {
            return x->content.size() > y->content.size();
        });

    for (int b = 0; b < 256; ++b) {
        const std::string key = cfg_.flavour == BpeFlavour::ByteLevel
                                    ? byte_to_unicode(static_cast<unsigned char>(b))
                                    : hex_byte_piece(static_cast<unsigned>(b));
        auto it = cfg_.vocab.find(key);
        byte_ids_[b] = it == cfg_.vocab.end() ? -1 : it->second;
    }

    if (!cfg_.merge_ranks.empty() && cfg_.merge_ranks.size() != cfg_.merges.size())
        throw Error(src + ": " + std::to_string(cfg_.merge_ranks.size()) + " merge ranks for " +
                    std::to_string(cfg_.merges.size()) + " merges");
    merges_.reserve(cfg_.merges.size());
    for (size_t rank = 0; rank < cfg_.merges.size(); ++rank) {
        const auto& [a, b] = cfg_.merges[rank];
        const std::string where = src + ": model.merges[" + std::to_string(rank) + "] ('" + a +
                                  "' '" + b + "')";
        if (a.empty() || b.empty()) throw Error(where + ": empty merge part");
        auto ia = cfg_.vocab.find(a);
        if (ia == cfg_.vocab.end()) throw Error(where + ": refers to unknown token '" + a + "'");
        auto ib = cfg_.vocab.find(b);
        if (ib == cfg_.vocab.end()) throw Error(where + ": refers to unknown token '" + b + "'");
        auto ir = cfg_.vocab.find(a + b);
        if (ir == cfg_.vocab.end())
            throw Error(where + ": merged token '" + a + b + "' is not in model.vocab");
        const int32_t r = cfg_.merge_ranks.empty() ? static_cast<int32_t>(rank) : cfg_.merge_ranks[rank];
        merges_.emplace(pair_key(ia->second, ib->second), Merge{r, ir->second});  // first wins
    }
    // The parsed lists are not needed any more except the vocab (token_id, ignore_merges).
    cfg_.merges.clear();
    cfg_.merges.shrink_to_fit();
    cfg_.merge_ranks.clear();
    cfg_.merge_ranks.shrink_to_fit();
}

void BpeTokenizer::check_id(int32_t id) const {
    if (id < 0 || id >= vocab_size())
        throw Error(cfg_.source + ": token id " + std::to_string(id) + " out of range [0, " +
                    std::to_string(vocab_size()) + ")");
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool parse_special) const {
    std::vector<int32_t> out;
    size_t seg_start = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        const AddedToken* hit = nullptr;
        for (const AddedToken* t : added_by_byte_[static_cast<unsigned char>(text[pos])]) {
            if (t->special && !parse_special) continue;
            if (text.substr(pos).starts_with(t->content)) {
                hit = t;
                break;  // buckets are sorted longest first
            }
        }
        if (!hit) {
            ++pos;
            continue;
        }
        std::string_view before = text.substr(seg_start, pos - seg_start);
        if (hit->lstrip) before.remove_suffix(trailing_whitespace(before));
        encode_segment(before, seg_start == 0, out);
        out.push_back(hit->id);
        pos += hit->content.size();
        if (hit->rstrip) pos += leading_whitespace(text.substr(pos));
        seg_start = pos;
    }
    encode_segment(text.substr(seg_start), seg_start == 0, out);
    return out;
}

void BpeTokenizer::encode_segment(std::string_view seg, bool first_segment,
                                  std::vector<int32_t>& out) const {
    if (seg.empty()) return;
    std::string text = cfg_.nfc ? unicode::nfc(seg) : std::string(seg);
    if (cfg_.flavour == BpeFlavour::ByteLevel) {
        if (cfg_.add_prefix_space && text[0] != ' ') text.insert(text.begin(), ' ');
        for (std::string_view word : split_words(text, cfg_.split)) encode_word(word, out);
        return;
    }
    text = replace_all(text, " ", kMetaspace);
    const bool prepend = cfg_.prepend == PrependScheme::Always ||
                         (cfg_.prepend == PrependScheme::First && first_segment);
    if (prepend && (cfg_.prepend_even_if_present ||
                    !std::string_view(text).starts_with(kMetaspace))) text.insert(0, kMetaspace);
    if (!cfg_.split_on_metaspace) {
        encode_word(text, out);
        return;
    }
    // Each word starts at a metaspace (the space stays with the word that follows it).
    size_t start = 0;
    while (start < text.size()) {
        size_t next = text.find(kMetaspace, start + 1);
        if (next == std::string::npos) next = text.size();
        encode_word(std::string_view(text).substr(start, next - start), out);
        start = next;
    }
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
    if (cfg_.ignore_merges) {
        std::string key;
        if (cfg_.flavour == BpeFlavour::ByteLevel) {
            for (char c : word) key += byte_to_unicode(static_cast<unsigned char>(c));
        } else {
            key = word;
        }
        auto it = cfg_.vocab.find(key);
        if (it != cfg_.vocab.end()) {
            out.push_back(it->second);
            return;
        }
    }
    const bool cacheable = word.size() <= kCacheMaxWordBytes;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        auto it = cache_.find(std::string(word));
        if (it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int32_t> syms;
    initial_symbols(word, syms);
    merge(syms);
    out.insert(out.end(), syms.begin(), syms.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() >= kCacheMaxEntries) cache_.clear();
        cache_.emplace(std::string(word), std::move(syms));
    }
}

void BpeTokenizer::initial_symbols(std::string_view word, std::vector<int32_t>& syms) const {
    // A unit with no token becomes unk when the vocab has one and is dropped otherwise, as the
    // reference implementation does.
    auto push_or_unk = [&](int32_t id) {
        if (id >= 0) syms.push_back(id);
        else if (cfg_.unk_id) syms.push_back(*cfg_.unk_id);
    };
    if (cfg_.flavour == BpeFlavour::ByteLevel) {
        for (char c : word) push_or_unk(byte_ids_[static_cast<unsigned char>(c)]);
        return;
    }
    for (size_t pos = 0; pos < word.size();) {
        const unicode::Decoded d = unicode::decode_utf8(word, pos);
        auto it = d.cp == unicode::kInvalid ? cfg_.vocab.end()
                                            : cfg_.vocab.find(std::string(word.substr(pos, d.len)));
        if (it != cfg_.vocab.end()) {
            syms.push_back(it->second);
        } else if (cfg_.byte_fallback) {
            for (size_t k = 0; k < d.len; ++k)
                push_or_unk(byte_ids_[static_cast<unsigned char>(word[pos + k])]);
        } else {
            push_or_unk(-1);
        }
        pos += d.len;
    }
}

void BpeTokenizer::merge(std::vector<int32_t>& syms) const {
    const size_t n = syms.size();
    if (n < 2 || merges_.empty()) return;
    std::vector<int32_t> prev(n), next(n);
    std::vector<uint8_t> alive(n, 1);
    for (size_t i = 0; i < n; ++i) {
        prev[i] = static_cast<int32_t>(i) - 1;
        next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
    }
    struct Candidate {
        int32_t rank, pos, left, right;
        bool operator>(const Candidate& o) const {
            return rank != o.rank ? rank > o.rank : pos > o.pos;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto consider = [&](int32_t pos) {
        if (pos < 0 || next[pos] < 0) return;
        const int32_t l = syms[pos], r = syms[next[pos]];
        auto it = merges_.find(pair_key(l, r));
        if (it != merges_.end()) heap.push({it->second.rank, pos, l, r});
    };
    for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        // Skip candidates made stale by earlier merges (symbols changed or were absorbed).
        if (!alive[c.pos] || syms[c.pos] != c.left || next[c.pos] < 0 ||
            syms[next[c.pos]] != c.right)
            continue;
        const int32_t r = next[c.pos];
        syms[c.pos] = merges_.at(pair_key(c.left, c.right)).result;
        alive[r] = 0;
        next[c.pos] = next[r];
        if (next[r] >= 0) prev[next[r]] = c.pos;
        consider(prev[c.pos]);
        consider(c.pos);
    }
    size_t w = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) syms[w++] = syms[i];
    syms.resize(w);
}

std::string BpeTokenizer::token_bytes(int32_t id) const {
    check_id(id);
    return bytes_[id];
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
    std::string raw;
    for (int32_t id : ids) {
        check_id(id);
        if (skip_special && special_[id]) continue;
        raw += bytes_[id];
    }
    // SentencePiece-style vocabularies mark the space they prepended; the decoder drops it.
    if (cfg_.flavour == BpeFlavour::Metaspace && cfg_.prepend != PrependScheme::Never &&
        !raw.empty() && raw[0] == ' ')
        raw.erase(0, 1);
    return unicode::sanitize_utf8(raw);
}

std::optional<int32_t> BpeTokenizer::token_id(std::string_view piece) const {
    const std::string key(piece);
    if (auto it = added_ids_.find(key); it != added_ids_.end()) return it->second;
    if (auto it = cfg_.vocab.find(key); it != cfg_.vocab.end()) return it->second;
    return std::nullopt;
}

bool BpeTokenizer::is_special(int32_t id) const {
    return id >= 0 && id < vocab_size() && special_[id];
}

}  // namespace mnemo::tokenizer_detail
