// BM25 over the references' token ids (each reference's title and text tokens:
// mnemo/memory/retrieval_terms.hpp), as an inverted index. The scoring is exactly the memory
// folder's (engine/src/memory/memory_folder.cpp): Okapi BM25, k1 = 1.2, b = 0.75, Lucene's
// non-negative idf log((N - df + 0.5) / (df + 0.5) + 1), each distinct query term counted once,
// so a bank and a memory folder of the same references rank alike. The index makes a query cost
// the postings of its terms instead of a pass over every reference.
//
// Flat arrays (terms sorted, each term's postings contiguous and sorted by document), so that
// the bank can store the index as one blob and load it without rebuilding anything
// (bm25_store.hpp), and a shard can keep only its documents' postings while scoring with the
// whole bank's statistics (N, total length, document frequencies): a document scores the same in
// every shard as in the whole index.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace mnemo::kb {

class Bm25Index {
public:
    struct Posting {
        uint32_t doc;
        int32_t tf;  // >= 1
    };

    // Building: documents are added in ascending id order, then finish() lays the index out.
    // Ids may skip (a version's retired records are not indexed): N and the average length are
    // those of the documents added, so an index with gaps scores as one of the same documents
    // renumbered.
    void add(uint32_t doc, const std::vector<int32_t>& tokens);
    void add(const std::vector<int32_t>& tokens) { add(static_cast<uint32_t>(length_.size()), tokens); }  // the next id
    // `id_count` (0: one past the last document added) sizes the lengths by id: a version's
    // index covers its whole id range, retired tail included.
    void finish(uint32_t id_count = 0);

    Bm25Index() = default;
    // lengths()[id] of an id that is not a document of the index (retired, or skipped).
    static constexpr int32_t kNotIndexed = -1;

    // The index of `base`'s documents for which keep(doc) holds, then `added` (id, tokens), whose
    // ids are ascending and above every kept document's: what a writer makes for a new version
    // from the previous version's index (retired documents dropped, new ones added) without
    // reading the old documents again. `id_count`: the new version's count.
    static Bm25Index updated(const Bm25Index& base, const std::function<bool(uint32_t)>& keep, uint32_t id_count,
                             const std::vector<std::pair<uint32_t, const std::vector<int32_t>*>>& added);

    // This index with only the postings of documents for which keep(doc) holds, its statistics
    // (N, lengths, document frequencies) unchanged: one shard of the whole index.
    Bm25Index only_postings_of(const std::function<bool(uint32_t)>& keep) const;

    // (id, score) of every document sharing a term with the query (score > 0), any order.
    // `keep(id)` filters documents before they are scored.
    template <typename Keep>
    std::vector<std::pair<uint32_t, double>> score(const std::vector<int32_t>& query, Keep keep) const;

    // The parts, for the store (bm25_store.cpp) and its checks.
    uint32_t id_count() const { return static_cast<uint32_t>(length_.size()); }
    uint64_t documents() const { return documents_; }
    uint64_t total_length() const { return total_length_; }
    const std::vector<int32_t>& lengths() const { return length_; }
    const std::vector<int32_t>& terms() const { return terms_; }
    const std::vector<uint32_t>& document_frequencies() const { return df_; }
    const std::vector<uint64_t>& term_starts() const { return start_; }  // terms() + 1 offsets into postings()
    const std::vector<Posting>& postings() const { return postings_; }
    // From parts already checked by the store's parser (every invariant above holds).
    static Bm25Index from_parts(std::vector<int32_t> lengths, uint64_t documents, uint64_t total_length, std::vector<int32_t> terms,
                                std::vector<uint32_t> df, std::vector<uint64_t> starts, std::vector<Posting> postings);

private:
    double idf(uint32_t df) const;
    double term_score(double idf, const Posting& p) const;
    void set_average();

    std::vector<int32_t> length_;  // by id; kNotIndexed for ids that are not documents of the index
    uint64_t documents_ = 0;       // documents indexed (BM25's N)
    uint64_t total_length_ = 0;    // their tokens
    double avg_length_ = 0;
    std::vector<int32_t> terms_;   // ascending
    std::vector<uint32_t> df_;     // each term's documents in the whole index (a shard keeps them)
    std::vector<uint64_t> start_;  // term i's postings: postings_[start_[i], start_[i + 1])
    std::vector<Posting> postings_;
    std::unordered_map<int32_t, std::vector<Posting>> pending_;  // while building: term -> postings
};

template <typename Keep>
std::vector<std::pair<uint32_t, double>> Bm25Index::score(const std::vector<int32_t>& query, Keep keep) const {
    // Distinct terms in first-seen order (the order the sums are made in, as the memory folder
    // makes them); each adds its part to the documents that hold it. A hash set finds repeats: a
    // search of the list made a long query cost its length squared.
    std::vector<int32_t> terms;
    std::unordered_set<int32_t> seen;
    for (int32_t t : query)
        if (seen.insert(t).second) terms.push_back(t);
    std::unordered_map<uint32_t, double> acc;
    for (int32_t t : terms) {
        const auto it = std::lower_bound(terms_.begin(), terms_.end(), t);
        if (it == terms_.end() || *it != t) continue;
        const auto i = static_cast<size_t>(it - terms_.begin());
        const double w = idf(df_[i]);
        for (uint64_t p = start_[i]; p < start_[i + 1]; ++p)
            if (keep(postings_[p].doc)) acc[postings_[p].doc] += term_score(w, postings_[p]);
    }
    std::vector<std::pair<uint32_t, double>> out;
    out.reserve(acc.size());
    for (const auto& [doc, s] : acc)
        if (s > 0) out.emplace_back(doc, s);
    return out;
}

}  // namespace mnemo::kb
