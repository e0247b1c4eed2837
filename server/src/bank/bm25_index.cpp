#include "bm25_index.hpp"

#include <cmath>
#include <string>

#include "mnemo/error.hpp"

namespace mnemo::kb {
namespace {

// Term -> postings (sorted by document) as the flat arrays: terms ascending, postings contiguous.
void lay_out(std::unordered_map<int32_t, std::vector<Bm25Index::Posting>>& by_term, std::vector<int32_t>& terms,
             std::vector<uint32_t>& df, std::vector<uint64_t>& start, std::vector<Bm25Index::Posting>& postings) {
    terms.clear();
    terms.reserve(by_term.size());
    size_t total = 0;
    for (const auto& [t, list] : by_term) {
        terms.push_back(t);
        total += list.size();
    }
    std::sort(terms.begin(), terms.end());
    df.assign(terms.size(), 0);
    start.assign(terms.size() + 1, 0);
    postings.clear();
    postings.reserve(total);
    for (size_t i = 0; i < terms.size(); ++i) {
        std::vector<Bm25Index::Posting>& list = by_term[terms[i]];
        start[i] = postings.size();
        df[i] = static_cast<uint32_t>(list.size());
        postings.insert(postings.end(), list.begin(), list.end());
        std::vector<Bm25Index::Posting>().swap(list);  // freed as it goes: the peak stays one copy
    }
    start[terms.size()] = postings.size();
    by_term.clear();
}

}  // namespace

void Bm25Index::add(uint32_t doc, const std::vector<int32_t>& tokens) {
    if (doc < length_.size()) throw Error("BM25 index: document " + std::to_string(doc) + " added out of order");
    std::unordered_map<int32_t, int32_t> tf;
    for (int32_t t : tokens) ++tf[t];
    for (const auto& [t, n] : tf) pending_[t].push_back({doc, n});
    length_.resize(doc, kNotIndexed);
    length_.push_back(static_cast<int32_t>(tokens.size()));
    ++documents_;
    total_length_ += tokens.size();
}

void Bm25Index::finish(uint32_t id_count) {
    if (id_count < length_.size() && id_count != 0)
        throw Error("BM25 index: " + std::to_string(length_.size()) + " ids indexed, more than the " + std::to_string(id_count) + " asked");
    if (id_count) length_.resize(id_count, kNotIndexed);
    lay_out(pending_, terms_, df_, start_, postings_);
    set_average();
}

void Bm25Index::set_average() {
    // The total is an exact integer: the same double as a sum of the lengths in any order.
    avg_length_ = documents_ == 0 ? 0 : static_cast<double>(total_length_) / static_cast<double>(documents_);
}

Bm25Index Bm25Index::updated(const Bm25Index& base, const std::function<bool(uint32_t)>& keep, uint32_t id_count,
                             const std::vector<std::pair<uint32_t, const std::vector<int32_t>*>>& added) {
    Bm25Index out;
    out.length_.assign(id_count, kNotIndexed);
    const size_t base_ids = std::min<size_t>(base.length_.size(), id_count);
    int64_t last_kept = -1;
    std::vector<bool> kept(base_ids, false);  // base documents kept (added ones may reuse ids above them)
    for (uint32_t d = 0; d < base_ids; ++d) {
        if (base.length_[d] == kNotIndexed || !keep(d)) continue;
        kept[d] = true;
        out.length_[d] = base.length_[d];
        out.total_length_ += static_cast<uint64_t>(base.length_[d]);
        ++out.documents_;
        last_kept = d;
    }
    std::unordered_map<int32_t, std::vector<Posting>> fresh;
    int64_t prev = last_kept;
    for (const auto& [doc, tokens] : added) {
        if (static_cast<int64_t>(doc) <= prev || doc >= id_count)
            throw Error("BM25 index update: document " + std::to_string(doc) + " is not above the kept ones and below " + std::to_string(id_count));
        prev = doc;
        std::unordered_map<int32_t, int32_t> tf;
        for (int32_t t : *tokens) ++tf[t];
        for (const auto& [t, n] : tf) fresh[t].push_back({doc, n});
        out.length_[doc] = static_cast<int32_t>(tokens->size());
        out.total_length_ += tokens->size();
        ++out.documents_;
    }
    // Merge term by term: the base's kept postings, then the added ones (all of higher ids).
    std::vector<int32_t> fresh_terms;
    fresh_terms.reserve(fresh.size());
    for (const auto& [t, list] : fresh) fresh_terms.push_back(t);
    std::sort(fresh_terms.begin(), fresh_terms.end());
    out.start_.push_back(0);
    size_t i = 0, j = 0;
    while (i < base.terms_.size() || j < fresh_terms.size()) {
        const bool from_base = j == fresh_terms.size() || (i < base.terms_.size() && base.terms_[i] <= fresh_terms[j]);
        const bool from_fresh = i == base.terms_.size() || (j < fresh_terms.size() && fresh_terms[j] <= base.terms_[i]);
        const int32_t t = from_base ? base.terms_[i] : fresh_terms[j];
        const size_t before = out.postings_.size();
        if (from_base) {
            for (uint64_t p = base.start_[i]; p < base.start_[i + 1]; ++p)
                if (base.postings_[p].doc < base_ids && kept[base.postings_[p].doc]) out.postings_.push_back(base.postings_[p]);
            ++i;
        }
        if (from_fresh) {
            const std::vector<Posting>& list = fresh[t];
            out.postings_.insert(out.postings_.end(), list.begin(), list.end());
            ++j;
        }
        if (out.postings_.size() == before) continue;  // every document of the term dropped
        out.terms_.push_back(t);
        out.df_.push_back(static_cast<uint32_t>(out.postings_.size() - before));
        out.start_.push_back(out.postings_.size());
    }
    out.set_average();
    return out;
}

Bm25Index Bm25Index::only_postings_of(const std::function<bool(uint32_t)>& keep) const {
    Bm25Index out;
    out.length_ = length_;
    out.documents_ = documents_;
    out.total_length_ = total_length_;
    out.terms_ = terms_;
    out.df_ = df_;  // the whole index's: a shard scores as the whole bank does
    out.start_.reserve(start_.size());
    out.start_.push_back(0);
    for (size_t i = 0; i < terms_.size(); ++i) {
        for (uint64_t p = start_[i]; p < start_[i + 1]; ++p)
            if (keep(postings_[p].doc)) out.postings_.push_back(postings_[p]);
        out.start_.push_back(out.postings_.size());
    }
    out.set_average();
    return out;
}

Bm25Index Bm25Index::from_parts(std::vector<int32_t> lengths, uint64_t documents, uint64_t total_length, std::vector<int32_t> terms,
                                std::vector<uint32_t> df, std::vector<uint64_t> starts, std::vector<Posting> postings) {
    Bm25Index out;
    out.length_ = std::move(lengths);
    out.documents_ = documents;
    out.total_length_ = total_length;
    out.terms_ = std::move(terms);
    out.df_ = std::move(df);
    out.start_ = std::move(starts);
    out.postings_ = std::move(postings);
    out.set_average();
    return out;
}

double Bm25Index::idf(uint32_t df) const {
    const double n = static_cast<double>(documents_), d = static_cast<double>(df);
    return std::log((n - d + 0.5) / (d + 0.5) + 1.0);
}

double Bm25Index::term_score(double idf, const Posting& p) const {
    constexpr double k1 = 1.2, b = 0.75;
    const double f = p.tf;
    return idf * f * (k1 + 1) / (f + k1 * (1 - b + b * length_[p.doc] / std::max(avg_length_, 1.0)));
}

}  // namespace mnemo::kb
