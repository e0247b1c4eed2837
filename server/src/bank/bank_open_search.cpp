// The retrieval half of the one Bank implementation (open_bank.hpp): the indexes of a version,
// loaded from the blobs its writer stored (after their SHA-256 check) or, for a version written
// before stored indexes, built here as every version was before; and the queries over them.
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_set>

#include "bm25_store.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/retrieval_terms.hpp"
#include "mnemo/memory/retrieval_settings.hpp"
#include "open_bank.hpp"

namespace mnemo::kb {
namespace {

// How often a pass over the bank asks whether to stop: rare enough to cost nothing, often enough
// to stop within milliseconds.
constexpr uint32_t kStopCheckEvery = 4096;

void stop_if_asked(const BankQuery& q) {
    if (q.should_stop && q.should_stop()) throw QueryStopped();
}

// A query's source filter, prepared once per query: the sources in a hash set, so the filter
// costs one lookup per reference however many sources the query names (a linear search per
// reference made a long list cost seconds). A reference passes when its source is one of the
// sources or starts with the prefix (docs/kb-protocol.md); with neither, everything passes.
class SourceFilter {
public:
    explicit SourceFilter(const BankQuery& q) : prefix_(q.source_prefix) {
        sources_.reserve(q.sources.size());
        for (const std::string& s : q.sources) sources_.insert(s);
    }
    bool active() const { return !sources_.empty() || !prefix_.empty(); }
    bool passes(const std::string& source) const {
        if (!active()) return true;
        if (!prefix_.empty() && source.compare(0, prefix_.size(), prefix_) == 0) return true;
        return sources_.count(source) != 0;
    }

private:
    std::unordered_set<std::string_view> sources_;  // views into the query, which outlives the filter
    std::string_view prefix_;
};

}  // namespace

void OpenBank::load_indexes() {
    nprobe_ = options_.nprobe;
    load_bm25();
    load_vector_index();
    const std::string shard = options_.shards > 1 ? "; shard " + std::to_string(options_.shard) + " of " + std::to_string(options_.shards) : "";
    const std::string origin = m_.index ? "stored" : "built at open: version " + std::to_string(m_.version) +
                                                         " has no stored index (written before them; any add, delete or compact stores one)";
    index_description_ = vector_index_->describe(nprobe_) + "; BM25 " + std::to_string(bm25_.documents()) + " documents; " + origin + shard;
}

void OpenBank::load_bm25() {
    const auto in_index = [&](uint32_t id) { return in_shard(id); };
    if (!m_.index) {
        // As every version was before stored indexes: from the live references' terms.
        Bm25Index whole;
        for (uint32_t id = 0; id < m_.count; ++id)
            if (!retired_.contains(id)) whole.add(id, retrieval_terms(refs_[id].title_tokens, refs_[id].tokens));
        whole.finish(static_cast<uint32_t>(m_.count));
        bm25_ = options_.shards > 1 ? whole.only_postings_of(in_index) : std::move(whole);
        return;
    }
    const std::string where = storage_->describe() + ": BM25 index '" + printable(m_.index->bm25.file) + "'";
    Bm25Index whole = parse_bm25_blob(read_checked_blob(*storage_, m_.index->bm25, "BM25 index"), where);
    // The blob must index exactly this version's live records.
    if (whole.id_count() != m_.count)
        throw Error(where + ": id_count " + std::to_string(whole.id_count()) + ", the manifest's count is " + std::to_string(m_.count));
    for (uint32_t id = 0; id < m_.count; ++id) {
        const bool indexed = whole.lengths()[id] != Bm25Index::kNotIndexed;
        if (indexed == retired_.contains(id))
            throw Error(where + ": record " + std::to_string(id) + (indexed ? " is retired but indexed" : " is live but not indexed"));
    }
    bm25_ = options_.shards > 1 ? whole.only_postings_of(in_index) : std::move(whole);
}

void OpenBank::load_vector_index() {
    const auto dim = static_cast<size_t>(m_.model.spec.retrieval_dim);
    if (m_.index && m_.index->vectors_count != m_.count - retired_.size())
        throw Error(storage_->describe() + ": " + manifest_name(m_.version) + ": index: vectors: count " + std::to_string(m_.index->vectors_count) +
                    ", but the version has " + std::to_string(m_.count - retired_.size()) + " live records");
    if (m_.index && m_.index->vectors_kind == kIndexIvfFlat) {
        const std::string where = storage_->describe() + ": vector index '" + printable(m_.index->vectors.file) + "'";
        // Hashed first: FAISS's reader is not hardened, only bytes the manifest vouches for reach it.
        const std::string bytes = read_checked_blob(*storage_, m_.index->vectors, "vector index");
        std::unique_ptr<IvfIndex> ivf = IvfIndex::parse(bytes, dim, m_.index->lists, where);
        // Every live record exactly once, nothing else (the manifest's count says how many).
        std::vector<bool> seen(m_.count, false);
        for (uint32_t id : ivf->ids()) {
            if (id >= m_.count || retired_.contains(id) || seen[id])
                throw Error(where + ": holds record " + std::to_string(id) +
                            (id >= m_.count ? ", beyond the bank" : retired_.contains(id) ? ", which is retired" : " twice"));
            seen[id] = true;
        }
        if (ivf->size() != m_.count - retired_.size())
            throw Error(where + ": holds " + std::to_string(ivf->size()) + " vectors, the version " + std::to_string(m_.count - retired_.size()) +
                        " live records");
        // A shard keeps its ids under the same centroids: each record scores as in the whole bank.
        if (options_.shards > 1) ivf->remap([&](uint32_t id) { return in_shard(id) ? int64_t{id} : int64_t{-1}; });
        vector_index_ = std::move(ivf);
        return;
    }
    // Flat: the shard's live records from the vectors already loaded (a shard's rows are id / shards).
    std::vector<uint32_t> ids;
    ids.reserve(vectors_.size() / std::max<size_t>(dim, 1));
    for (uint32_t id = options_.shards > 1 ? options_.shard : 0; id < m_.count; id += options_.shards)
        if (!retired_.contains(id)) ids.push_back(id);
    const size_t rows = vectors_.size() / std::max<size_t>(dim, 1);
    if (ids.size() == rows) {
        vector_index_ = make_flat_index(dim, std::move(ids), vectors_.data());
    } else {
        std::vector<float> kept(ids.size() * dim);
        for (size_t p = 0; p < ids.size(); ++p) std::copy_n(vector(ids[p]), dim, kept.data() + p * dim);
        vector_index_ = make_flat_index(dim, std::move(ids), kept.data());
    }
}

void OpenBank::check_query_vector(const BankQuery& q, const std::string& where) const {
    if (!q.vector) throw Error(where + ": the query has no vector");
    const auto dim = static_cast<size_t>(m_.model.spec.retrieval_dim);
    if (q.vector->size() != dim)
        throw Error(where + ": the query vector has " + std::to_string(q.vector->size()) + " values, the bank's retrieval_dim is " + std::to_string(dim));
    for (float x : *q.vector)
        if (!std::isfinite(x)) throw Error(where + ": the query vector has a non-finite value");
}

std::vector<BankHit> OpenBank::vector_ranking(const BankQuery& q, size_t depth) const {
    check_query_vector(q, storage_->describe() + ": retrieve");
    const SourceFilter filter(q);
    std::function<bool(uint32_t)> keep;
    if (filter.active()) keep = [&](uint32_t id) { return filter.passes(refs_[id].source); };
    stop_if_asked(q);
    bool stopped = false;
    std::vector<BankHit> hits = vector_index_->search(q.vector->data(), depth, keep, q.should_stop, nprobe_, &stopped);
    if (stopped) throw QueryStopped();
    return hits;
}

std::vector<BankHit> OpenBank::bm25_ranking(const BankQuery& q, size_t depth) const {
    if (!q.tokens || q.tokens->empty()) return {};
    const SourceFilter filter(q);
    // Ordered and cut on the double scores, as the memory folder ranks (the reply carries floats).
    uint32_t seen = 0;
    std::vector<std::pair<uint32_t, double>> exact = bm25_.score(*q.tokens, [&](uint32_t id) {
        if (++seen % kStopCheckEvery == 0) stop_if_asked(q);
        return filter.passes(refs_[id].source);
    });
    stop_if_asked(q);
    std::vector<BankHit> hits;
    hits.reserve(exact.size());
    for (const auto& [id, s] : exact) hits.push_back({id, s});
    sort_hits(hits);
    if (hits.size() > depth) hits.resize(depth);
    return hits;
}

std::vector<BankHit> OpenBank::retrieve(const BankQuery& q) const {
    const std::string where = storage_->describe() + ": retrieve";
    if (q.k < 1) throw Error(where + ": k must be >= 1, got " + std::to_string(q.k));
    const bool by_vector = q.vector != nullptr;
    const bool by_tokens = q.tokens != nullptr && !q.tokens->empty();
    if (by_vector) check_query_vector(q, where);
    if (!by_vector && !by_tokens) throw Error(where + ": the query has neither a vector nor tokens");
    check_min_relative_score(q.min_relative_score, where);
    check_min_references(q.min_references, where);
    const auto k = static_cast<size_t>(q.k);
    std::vector<BankHit> hits;
    if (by_vector && !by_tokens) {
        hits = vector_ranking(q, k);
    } else if (by_tokens && !by_vector) {
        hits = bm25_ranking(q, k);
    } else {
        // Hybrid: each ranking to fusion_depth(k), fused by 1 / (60 + rank) (bank_ranking.hpp).
        const size_t depth = fusion_depth(q.k);
        hits = fuse_rankings(vector_ranking(q, depth), bm25_ranking(q, depth), k);
    }
    hits.resize(count_near_best(hits, q.min_relative_score, q.min_references, [](const BankHit& h) { return h.score; }));
    return hits;
}

}  // namespace mnemo::kb
