// How a bank's rankings are ordered, merged and fused: what Bank::retrieve does inside one bank,
// and what a fan-out over the shards of a bank (`serve --shard I/N`) does with the shards'
// per-method rankings (Bank::vector_ranking, Bank::bm25_ranking) to answer exactly as the whole
// bank would. One implementation for both, so the two can never drift apart.
//
// A fan-out reproduces Bank::retrieve(q) of the unsharded bank:
//   vector only:  hits = merge_rankings({shard.vector_ranking(q, q.k) for each shard}, q.k)
//   tokens only:  hits = merge_rankings({shard.bm25_ranking(q, q.k)  for each shard}, q.k)
//   both:         d = fusion_depth(q.k);
//                 hits = fuse_rankings(merge_rankings({shard.vector_ranking(q, d)...}, d),
//                                      merge_rankings({shard.bm25_ranking(q, d)...}, d), q.k)
//   then:         hits.resize(count_near_best(hits, q.min_relative_score, q.min_references, score))
//                 (mnemo/memory/retrieval_settings.hpp), as retrieve() cuts.
// Exact, because every shard scores with the whole bank's statistics (BM25's N, average length
// and document frequencies) and the same vector index quantizer, so a record's score does not
// depend on which shard holds it, and each shard's top `depth` holds every one of its records
// that the whole bank's top `depth` holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mnemo::kb {

struct BankHit {
    uint32_t id = 0;
    double score = 0;  // double: the relative cut compares what the memory folder compares
};

// Reciprocal rank fusion's constant (Cormack et al. 2009): a hit at rank r (from 1) adds
// 1 / (kRrfK + r). Each ranking is fused to fusion_depth(k) = max(k, kFusionDepth) hits.
constexpr double kRrfK = 60;
constexpr size_t kFusionDepth = 100;
inline size_t fusion_depth(int32_t k) { return k > 0 && static_cast<size_t>(k) > kFusionDepth ? static_cast<size_t>(k) : kFusionDepth; }

// Best first; equal scores go to the lower id.
void sort_hits(std::vector<BankHit>& hits);

// The best `depth` of several rankings of disjoint sets of records (one per shard), ordered as
// sort_hits orders.
std::vector<BankHit> merge_rankings(const std::vector<std::vector<BankHit>>& rankings, size_t depth);

// Reciprocal rank fusion of a vector ranking and a BM25 ranking (each best first), the best `k`.
std::vector<BankHit> fuse_rankings(const std::vector<BankHit>& by_vector, const std::vector<BankHit>& by_bm25, size_t k);

}  // namespace mnemo::kb
