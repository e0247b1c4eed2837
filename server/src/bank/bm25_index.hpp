// BM25 over the references' token ids, as an inverted index. The scoring is exactly the memory
// folder's (engine/src/memory/memory_folder.cpp): Okapi BM25, k1 = 1.2, b = 0.75, Lucene's
// non-negative idf log((N - df + 0.5) / (df + 0.5) + 1), each distinct query term counted once,
// so a bank and a memory folder of the same references rank alike. The index makes a query cost
// the postings of its terms instead of a pass over every reference.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace mnemo::kb {

class Bm25Index {
public:
    // Documents are added in ascending id order, then finish() computes the average length. Ids
    // may skip (a version's retired records are not indexed): N and the average length are those
    // of the documents added, so an index with gaps scores as one of the same documents renumbered.
    void add(uint32_t doc, const std::vector<int32_t>& tokens);
    void add(const std::vector<int32_t>& tokens) { add(static_cast<uint32_t>(length_.size()), tokens); }  // the next id
    void finish();

    // (id, score) of every document sharing a term with the query (score > 0), any order.
    // `keep(id)` filters documents before they are scored.
    template <typename Keep>
    std::vector<std::pair<uint32_t, double>> score(const std::vector<int32_t>& query, Keep keep) const;

private:
    struct Posting {
        uint32_t doc;
        int32_t tf;
    };
    double idf(size_t df) const;
    double term_score(double idf, const Posting& p) const;

    std::unordered_map<int32_t, std::vector<Posting>> postings_;
    std::vector<int32_t> length_;  // by id; 0 for ids skipped
    size_t documents_ = 0;         // ids added (BM25's N)
    double avg_length_ = 0;
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
        auto it = postings_.find(t);
        if (it == postings_.end()) continue;
        const double w = idf(it->second.size());
        for (const Posting& p : it->second)
            if (keep(p.doc)) acc[p.doc] += term_score(w, p);
    }
    std::vector<std::pair<uint32_t, double>> out;
    out.reserve(acc.size());
    for (const auto& [doc, s] : acc)
        if (s > 0) out.emplace_back(doc, s);
    return out;
}

}  // namespace mnemo::kb
