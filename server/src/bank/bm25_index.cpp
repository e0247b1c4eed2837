#include "bm25_index.hpp"

#include <cmath>
#include <string>

#include "mnemo/error.hpp"

namespace mnemo::kb {

void Bm25Index::add(uint32_t doc, const std::vector<int32_t>& tokens) {
    if (doc < length_.size()) throw Error("BM25 index: document " + std::to_string(doc) + " added out of order");
    std::unordered_map<int32_t, int32_t> tf;
    for (int32_t t : tokens) ++tf[t];
    for (const auto& [t, n] : tf) postings_[t].push_back({doc, n});
    length_.resize(doc, 0);
    length_.push_back(static_cast<int32_t>(tokens.size()));
    ++documents_;
}

void Bm25Index::finish() {
    double total = 0;  // skipped ids hold 0: the sum is the added documents'
    for (int32_t l : length_) total += l;
    avg_length_ = documents_ == 0 ? 0 : total / static_cast<double>(documents_);
}

double Bm25Index::idf(size_t df) const {
    const double n = static_cast<double>(documents_), d = static_cast<double>(df);
    return std::log((n - d + 0.5) / (d + 0.5) + 1.0);
}

double Bm25Index::term_score(double idf, const Posting& p) const {
    constexpr double k1 = 1.2, b = 0.75;
    const double f = p.tf;
    return idf * f * (k1 + 1) / (f + k1 * (1 - b + b * length_[p.doc] / std::max(avg_length_, 1.0)));
}

}  // namespace mnemo::kb
