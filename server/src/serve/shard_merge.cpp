#include "serve/shard_merge.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/retrieval_settings.hpp"

namespace mnemo::kb {
namespace {

bool better(const BankHit& a, const BankHit& b) { return a.score != b.score ? a.score > b.score : a.id < b.id; }

std::string read_ranking(const v1::ShardRanking& r, const char* name, const ShardSpec& spec, uint32_t depth, const Bank& bank,
                         std::vector<BankHit>* out) {
    const std::string where = std::string(name) + " ranking: ";
    if (r.ids_size() != r.scores_size())
        return where + std::to_string(r.ids_size()) + " ids but " + std::to_string(r.scores_size()) + " scores";
    if (static_cast<uint32_t>(r.ids_size()) > depth)
        return where + std::to_string(r.ids_size()) + " entries, more than the depth " + std::to_string(depth) + " asked";
    std::unordered_set<uint32_t> seen;
    out->clear();
    out->reserve(static_cast<size_t>(r.ids_size()));
    for (int i = 0; i < r.ids_size(); ++i) {
        const BankHit h{r.ids(i), r.scores(i)};
        const std::string at = where + "entry " + std::to_string(i) + " (id " + std::to_string(h.id) + "): ";
        if (h.id >= bank.count()) return at + "not a record of the bank (" + std::to_string(bank.count()) + " records)";
        if (h.id % spec.shards != spec.shard) return at + "not in shard " + spec.describe();
        if (bank.retired(h.id)) return at + "a retired record";
        if (!std::isfinite(h.score)) return at + "a non-finite score";
        if (!seen.insert(h.id).second) return at + "listed twice";
        if (!out->empty() && !better(out->back(), h)) return at + "out of order (best first, equal scores to the lower id)";
        out->push_back(h);
    }
    return "";
}

// Every shard's list of one method, merged best first and cut to `depth` (bank_ranking.hpp).
std::vector<BankHit> merged(const std::vector<ShardRankings>& shards, std::vector<BankHit> ShardRankings::*method, size_t depth) {
    std::vector<std::vector<BankHit>> lists;
    lists.reserve(shards.size());
    for (const ShardRankings& s : shards) lists.push_back(s.*method);
    return merge_rankings(lists, depth);
}

}  // namespace

ShardSpec parse_shard_spec(const std::string& text) {
    const std::string problem = "--shard '" + printable(text, 80) + "': expected I/N, this node's shard I of N shards (0 <= I < N <= " +
                                std::to_string(kMaxShards) + "), e.g. 0/3";
    const size_t slash = text.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) throw Error(problem);
    const auto number = [&](const std::string& digits) {
        if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) throw Error(problem);
        return static_cast<uint32_t>(std::stoul(digits));
    };
    ShardSpec s;
    s.shard = number(text.substr(0, slash));
    s.shards = number(text.substr(slash + 1));
    if (s.shards == 0 || s.shards > kMaxShards || s.shard >= s.shards) throw Error(problem);
    return s;
}

uint32_t shard_depth(uint32_t k, bool by_vector, bool by_tokens) {
    return by_vector && by_tokens ? static_cast<uint32_t>(fusion_depth(static_cast<int32_t>(k))) : k;
}

uint32_t max_shard_depth(uint32_t max_k) { return std::max<uint32_t>(max_k, static_cast<uint32_t>(kFusionDepth)); }

void to_proto(const ShardRankings& r, const ShardSpec& spec, v1::ShardReply* out) {
    out->set_shard(spec.shard);
    out->set_shards(spec.shards);
    out->set_bank_version(r.bank_version);
    for (const BankHit& h : r.vector) {
        out->mutable_vector()->add_ids(h.id);
        out->mutable_vector()->add_scores(h.score);
    }
    for (const BankHit& h : r.bm25) {
        out->mutable_bm25()->add_ids(h.id);
        out->mutable_bm25()->add_scores(h.score);
    }
}

std::string read_shard_reply(const v1::ShardReply& reply, const ShardSpec& expected, uint32_t depth, const Bank& bank, ShardRankings* out) {
    if (reply.shards() != expected.shards)
        return "it holds shard " + std::to_string(reply.shard()) + "/" + std::to_string(reply.shards()) + ", not one of " +
               std::to_string(expected.shards) + " shards";
    if (reply.shard() != expected.shard)
        return "it holds shard " + std::to_string(reply.shard()) + "/" + std::to_string(reply.shards()) + ", expected shard " + expected.describe() +
               " (list --shard-peer in shard order, this node's own left out)";
    out->shard = reply.shard();
    out->bank_version = reply.bank_version();
    if (std::string p = read_ranking(reply.vector(), "vector", expected, depth, bank, &out->vector); !p.empty()) return p;
    return read_ranking(reply.bm25(), "BM25", expected, depth, bank, &out->bm25);
}

std::vector<BankHit> merge_shard_rankings(const std::vector<ShardRankings>& shards, uint32_t k, bool by_vector, bool by_tokens,
                                          double min_relative_score, uint32_t min_references) {
    const uint32_t depth = shard_depth(k, by_vector, by_tokens);
    std::vector<BankHit> hits;
    if (by_vector && !by_tokens) {
        hits = merged(shards, &ShardRankings::vector, k);
    } else if (by_tokens && !by_vector) {
        hits = merged(shards, &ShardRankings::bm25, k);
    } else {
        hits = fuse_rankings(merged(shards, &ShardRankings::vector, depth), merged(shards, &ShardRankings::bm25, depth), k);
    }
    hits.resize(count_near_best(hits, min_relative_score, min_references, [](const BankHit& h) { return h.score; }));
    return hits;
}

}  // namespace mnemo::kb
