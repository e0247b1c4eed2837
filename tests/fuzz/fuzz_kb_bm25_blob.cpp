// Fuzz target: arbitrary bytes as a bank's BM25 index blob (server/src/bank/bm25_store.hpp).
// The bank hashes the blob before parsing it, but the parser must not rely on that: it must
// return an index or throw mnemo::Error, never read out of bounds or allocate for counts the bytes
// do not hold. An accepted index must hold what scoring relies on (every posting's document a
// document of the index, ascending terms), score any query without reading past its arrays, and
// survive encode -> parse unchanged.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bank/bm25_store.hpp"
#include "mnemo/error.hpp"

using namespace mnemo::kb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    Bm25Index ix;
    try {
        ix = parse_bm25_blob(bytes, "fuzz blob");
    } catch (const mnemo::Error&) {
        return 0;  // rejected input
    }
    const auto& terms = ix.terms();
    const auto& starts = ix.term_starts();
    if (starts.size() != terms.size() + 1 || starts.back() != ix.postings().size()) std::abort();
    for (size_t i = 1; i < terms.size(); ++i)
        if (terms[i] <= terms[i - 1]) std::abort();
    for (const Bm25Index::Posting& p : ix.postings())
        if (p.doc >= ix.id_count() || ix.lengths()[p.doc] < 1 || p.tf < 1) std::abort();
    // Every term once, and one that is not there: scores are finite and positive.
    std::vector<int32_t> query(terms.begin(), terms.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(terms.size(), 64)));
    query.push_back(-5);
    for (const auto& [doc, s] : ix.score(query, [](uint32_t) { return true; }))
        if (doc >= ix.id_count() || !(s > 0) || s != s) std::abort();
    const std::string once = encode_bm25_blob(ix);
    if (once != bytes) std::abort();  // one encoding per index: what was accepted is what is written
    return 0;
}
