#include "bank_ranking.hpp"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "bank.hpp"

namespace mnemo::kb {

void sort_hits(std::vector<BankHit>& hits) {
    std::sort(hits.begin(), hits.end(), [](const BankHit& a, const BankHit& b) { return a.score != b.score ? a.score > b.score : a.id < b.id; });
}

std::vector<BankHit> merge_rankings(const std::vector<std::vector<BankHit>>& rankings, size_t depth) {
    std::vector<BankHit> all;
    for (const std::vector<BankHit>& r : rankings) all.insert(all.end(), r.begin(), r.end());
    sort_hits(all);
    if (all.size() > depth) all.resize(depth);
    return all;
}

std::vector<BankHit> fuse_rankings(const std::vector<BankHit>& by_vector, const std::vector<BankHit>& by_bm25, size_t k) {
    // A record in both rankings gets a + b, whichever is added first (two terms commute exactly).
    std::unordered_map<uint32_t, double> fused;
    for (const std::vector<BankHit>* ranked : {&by_vector, &by_bm25})
        for (size_t r = 0; r < ranked->size(); ++r) fused[(*ranked)[r].id] += 1.0 / (kRrfK + static_cast<double>(r + 1));
    std::vector<BankHit> all;
    all.reserve(fused.size());
    for (const auto& [id, s] : fused) all.push_back({id, s});
    sort_hits(all);
    if (all.size() > k) all.resize(k);
    return all;
}

namespace {

// One method of `q` through retrieve(): what an unsharded bank ranks by that method alone.
std::vector<BankHit> one_method(const Bank& bank, const BankQuery& q, size_t depth, bool by_vector) {
    BankQuery one;
    one.vector = by_vector ? q.vector : nullptr;
    one.tokens = by_vector ? nullptr : q.tokens;
    if (!by_vector && (!q.tokens || q.tokens->empty())) return {};
    one.k = static_cast<int32_t>(std::min<size_t>(std::max<size_t>(depth, 1), INT32_MAX));
    one.sources = q.sources;
    one.source_prefix = q.source_prefix;
    one.should_stop = q.should_stop;
    std::vector<BankHit> hits = depth == 0 ? std::vector<BankHit>{} : bank.retrieve(one);
    return hits;
}

}  // namespace

std::vector<BankHit> Bank::vector_ranking(const BankQuery& q, size_t depth) const { return one_method(*this, q, depth, true); }
std::vector<BankHit> Bank::bm25_ranking(const BankQuery& q, size_t depth) const { return one_method(*this, q, depth, false); }

}  // namespace mnemo::kb
