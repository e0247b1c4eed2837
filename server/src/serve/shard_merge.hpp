// The arithmetic of a sharded index (docs/kb-protocol.md, "Shards"): which part a node holds, how
// deep each shard ranks, how a shard's rankings travel and are checked, and how the asking node
// merges them into exactly the hits an unsharded node answers. Pure functions: no server, no
// network, so tests compare them directly.
//
// The merge itself is bank_ranking.hpp's (merge_rankings, fuse_rankings), the one the bank uses.
//
// Why the merge is exact: shard s holds the live records with id % shards == s, and ranks them by
// the same scores an unsharded bank computes (FAISS's inner product per vector; BM25 with the
// whole bank's statistics). A record among the global top `depth` of one method has fewer than
// `depth` better records in the whole bank, so fewer in its own shard: it is in its shard's top
// `depth`. Merging the shards' lists by (score, then lower id) therefore gives the global top
// `depth` in the global order, and fusing and cutting those is what the unsharded bank does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bank/bank.hpp"
#include "bank/bank_ranking.hpp"
#include "mnemo_kb.pb.h"

namespace mnemo::kb {

// This node's part of the index: shard `shard` of `shards` (0 <= shard < shards). {0, 1}: the whole.
struct ShardSpec {
    uint32_t shard = 0;
    uint32_t shards = 1;
    bool sharded() const { return shards > 1; }
    std::string describe() const { return std::to_string(shard) + "/" + std::to_string(shards); }
};

// "I/N" as `--shard` takes it: 0 <= I < N <= kMaxShards. Throws mnemo::Error naming the value.
ShardSpec parse_shard_spec(const std::string& text);
constexpr uint32_t kMaxShards = 1024;

// How deep each method ranks for a query of `k`: k for one method, max(k, 100) when the two are
// fused (the unsharded bank fuses each ranking to that depth).
uint32_t shard_depth(uint32_t k, bool by_vector, bool by_tokens);
// The largest depth a node answers a shard request with (RetrieveRequest.shard.depth).
uint32_t max_shard_depth(uint32_t max_k);

// One shard's per-method rankings, best first, equal scores to the lower id.
struct ShardRankings {
    uint32_t shard = 0;
    uint64_t bank_version = 0;
    std::vector<BankHit> vector;
    std::vector<BankHit> bm25;
};

void to_proto(const ShardRankings& r, const ShardSpec& spec, v1::ShardReply* out);

// A peer's reply read back and checked against what was asked: the shard it must hold, the
// shard count, a depth no ranking may exceed, and the ids a shard can hold (below `count`, in the
// shard, not retired, no repeats, best first with finite scores). "" when it passes, else what is
// wrong. The bank version is left to the caller (it says which versions differ).
std::string read_shard_reply(const v1::ShardReply& reply, const ShardSpec& expected, uint32_t depth, const Bank& bank, ShardRankings* out);

// The hits of an unsharded retrieval from every shard's rankings: each method's lists merged to
// the global top `depth` (shard_depth), then one method's top k, or both fused by reciprocal rank
// and cut to k, then the relative-score cut (BankQuery::min_relative_score, min_references).
std::vector<BankHit> merge_shard_rankings(const std::vector<ShardRankings>& shards, uint32_t k, bool by_vector, bool by_tokens,
                                          double min_relative_score, uint32_t min_references);

}  // namespace mnemo::kb
