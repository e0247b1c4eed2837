#include "bm25_store.hpp"

#include <cstring>

#include "mnemo/error.hpp"

namespace mnemo::kb {
namespace {

constexpr char kMagic[8] = {'M', 'N', 'E', 'M', 'B', 'M', '2', '5'};
constexpr uint32_t kFormat = 1;
constexpr size_t kHeaderBytes = 56;

void put_u32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(std::string& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(const char* p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
    return v;
}
uint64_t get_u64(const char* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
    return v;
}

}  // namespace

std::string encode_bm25_blob(const Bm25Index& ix) {
    std::string out(kMagic, sizeof kMagic);
    put_u32(out, kFormat);
    put_u32(out, 0);
    put_u64(out, ix.id_count());
    put_u64(out, ix.documents());
    put_u64(out, ix.total_length());
    put_u64(out, ix.terms().size());
    put_u64(out, ix.postings().size());
    out.reserve(kHeaderBytes + 4 * ix.lengths().size() + 8 * ix.terms().size() + 8 * ix.postings().size());
    for (int32_t l : ix.lengths()) put_u32(out, static_cast<uint32_t>(l));
    for (size_t i = 0; i < ix.terms().size(); ++i) {
        // The stored df is the term's postings: a blob is always a whole index, never a shard's.
        if (ix.document_frequencies()[i] != ix.term_starts()[i + 1] - ix.term_starts()[i])
            throw Error("BM25 blob: a shard's index is not stored (term " + std::to_string(ix.terms()[i]) + ")");
        put_u32(out, static_cast<uint32_t>(ix.terms()[i]));
        put_u32(out, ix.document_frequencies()[i]);
    }
    for (const Bm25Index::Posting& p : ix.postings()) {
        put_u32(out, p.doc);
        put_u32(out, static_cast<uint32_t>(p.tf));
    }
    return out;
}

Bm25Index parse_bm25_blob(std::string_view b, const std::string& where) {
    if (b.size() < kHeaderBytes)
        throw Error(where + ": " + std::to_string(b.size()) + " bytes, shorter than the " + std::to_string(kHeaderBytes) + "-byte header");
    if (std::memcmp(b.data(), kMagic, sizeof kMagic) != 0) throw Error(where + ": magic: not a BM25 index blob (expected \"MNEMBM25\")");
    if (const uint32_t f = get_u32(b.data() + 8); f != kFormat)
        throw Error(where + ": format " + std::to_string(f) + " is not supported (this build reads " + std::to_string(kFormat) + ")");
    if (const uint32_t fl = get_u32(b.data() + 12); fl != 0) throw Error(where + ": flags " + std::to_string(fl) + ", expected 0");
    const uint64_t id_count = get_u64(b.data() + 16), documents = get_u64(b.data() + 24), total = get_u64(b.data() + 32);
    const uint64_t n_terms = get_u64(b.data() + 40), n_postings = get_u64(b.data() + 48);
    // Bounds before any product: ids are u32 record ids, terms i32 token ids; the sizes then
    // cannot overflow, and the blob must be exactly what they add up to (nothing is allocated
    // for counts the bytes do not hold).
    if (id_count > UINT32_MAX) throw Error(where + ": id_count " + std::to_string(id_count) + " is above 2^32 - 1");
    if (n_terms > INT32_MAX) throw Error(where + ": terms " + std::to_string(n_terms) + " is above 2^31 - 1");
    if (n_postings > (uint64_t{1} << 56)) throw Error(where + ": postings " + std::to_string(n_postings) + " is beyond any bank");
    const uint64_t want = kHeaderBytes + 4 * id_count + 8 * n_terms + 8 * n_postings;
    if (b.size() != want)
        throw Error(where + ": " + std::to_string(b.size()) + " bytes, but id_count " + std::to_string(id_count) + ", terms " +
                    std::to_string(n_terms) + " and postings " + std::to_string(n_postings) + " make " + std::to_string(want));
    if (documents > id_count) throw Error(where + ": documents " + std::to_string(documents) + " exceeds id_count " + std::to_string(id_count));

    // The arrays are copied whole (little-endian hosts only, as the rest of the bank), then checked.
    const char* p = b.data() + kHeaderBytes;
    std::vector<int32_t> lengths(id_count);
    if (id_count) std::memcpy(lengths.data(), p, id_count * 4);
    p += id_count * 4;
    uint64_t docs = 0, sum = 0;
    for (uint64_t i = 0; i < id_count; ++i) {
        const int32_t l = lengths[i];
        if (l < Bm25Index::kNotIndexed) throw Error(where + ": lengths[" + std::to_string(i) + "] is " + std::to_string(l) + " (a length is >= 0, or -1: not a document)");
        docs += l != Bm25Index::kNotIndexed;
        sum += l != Bm25Index::kNotIndexed ? static_cast<uint64_t>(l) : 0;
    }
    if (docs != documents) throw Error(where + ": documents " + std::to_string(documents) + ", but " + std::to_string(docs) + " lengths are documents'");
    if (sum != total) throw Error(where + ": total_length " + std::to_string(total) + ", but the lengths add up to " + std::to_string(sum));
    std::vector<int32_t> terms(n_terms);
    std::vector<uint32_t> df(n_terms);
    std::vector<uint64_t> starts(n_terms + 1, 0);
    uint64_t at = 0;
    for (uint64_t i = 0; i < n_terms; ++i, p += 8) {
        const auto t = static_cast<int32_t>(get_u32(p));
        const uint32_t d = get_u32(p + 4);
        if (t < 0) throw Error(where + ": terms[" + std::to_string(i) + "]: term " + std::to_string(t) + " is negative");
        if (i > 0 && t <= terms[i - 1])
            throw Error(where + ": terms[" + std::to_string(i) + "]: term " + std::to_string(t) + " is not above the previous " + std::to_string(terms[i - 1]));
        if (d == 0 || d > documents)
            throw Error(where + ": terms[" + std::to_string(i) + "] (term " + std::to_string(t) + "): df " + std::to_string(d) + " is not in [1, documents " +
                        std::to_string(documents) + "]");
        terms[i] = t;
        df[i] = d;
        starts[i] = at;
        at += d;
    }
    starts[n_terms] = at;
    if (at != n_postings) throw Error(where + ": the terms' df add up to " + std::to_string(at) + ", but postings is " + std::to_string(n_postings));

    // Each posting's document must be a document of the index, and each document's term
    // frequencies must add up to its length (every token is in exactly one posting).
    std::vector<uint64_t> tokens_seen(id_count, 0);
    static_assert(sizeof(Bm25Index::Posting) == 8, "a posting is stored as {u32 doc, u32 tf}");
    std::vector<Bm25Index::Posting> postings(n_postings);
    if (n_postings) std::memcpy(postings.data(), p, n_postings * 8);
    for (uint64_t i = 0; i < n_terms; ++i) {
        uint32_t previous = 0;
        for (uint64_t k = starts[i]; k < starts[i + 1]; ++k) {
            const uint32_t doc = postings[k].doc;
            const auto tf = static_cast<uint32_t>(postings[k].tf);
            const bool bad = doc >= id_count || (k > starts[i] && doc <= previous) || lengths[doc] == Bm25Index::kNotIndexed || tf == 0 ||
                             tf > static_cast<uint32_t>(lengths[doc]);
            if (bad) {
                const std::string w = where + ": postings of term " + std::to_string(terms[i]) + "[" + std::to_string(k - starts[i]) + "]";
                if (doc >= id_count) throw Error(w + ": document " + std::to_string(doc) + " is not below id_count " + std::to_string(id_count));
                if (k > starts[i] && doc <= previous)
                    throw Error(w + ": document " + std::to_string(doc) + " is not above the previous " + std::to_string(previous));
                if (lengths[doc] == Bm25Index::kNotIndexed) throw Error(w + ": document " + std::to_string(doc) + " is not a document of the index (length -1)");
                throw Error(w + ": tf " + std::to_string(tf) + " is not in [1, the document's length " + std::to_string(lengths[doc]) + "]");
            }
            previous = doc;
            tokens_seen[doc] += tf;
        }
    }
    for (uint64_t d = 0; d < id_count; ++d)
        if (lengths[d] != Bm25Index::kNotIndexed && tokens_seen[d] != static_cast<uint64_t>(lengths[d]))
            throw Error(where + ": document " + std::to_string(d) + ": its postings count " + std::to_string(tokens_seen[d]) + " tokens, its length is " +
                        std::to_string(lengths[d]));
    return Bm25Index::from_parts(std::move(lengths), documents, total, std::move(terms), std::move(df), std::move(starts), std::move(postings));
}

}  // namespace mnemo::kb
