#include "bank_vector_index.hpp"

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/FaissException.h>
#include <faiss/impl/IDSelector.h>
#include <faiss/impl/io.h>
#include <faiss/index_io.h>
#include <faiss/invlists/InvertedLists.h>
#include <faiss/utils/distances.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "faiss_error.hpp"
#include "mnemo/error.hpp"

namespace mnemo::kb {
namespace {

using idx_t = faiss::Index::idx_t;

// How often a filtered search asks whether to stop: rare enough to cost nothing, often enough to
// stop within milliseconds.
constexpr uint32_t kStopCheckEvery = 4096;

// A query's filter as FAISS sees it: by FAISS's own label (position or record id through `to_id`).
// FAISS must never see an exception, so a stop request is recorded and every later vector is
// refused: the search then ends without scoring anything more.
class KeepSelector final : public faiss::IDSelector {
public:
    KeepSelector(const std::function<bool(uint32_t)>& keep, const std::function<bool()>& stop, const uint32_t* positions)
        : keep_(keep), stop_(stop), positions_(positions) {}
    bool is_member(idx_t label) const override {
        if (stopped_.load(std::memory_order_relaxed)) return false;
        if (stop_ && seen_.fetch_add(1, std::memory_order_relaxed) % kStopCheckEvery == 0 && stop_()) {
            stopped_.store(true, std::memory_order_relaxed);
            return false;
        }
        const auto id = positions_ ? positions_[label] : static_cast<uint32_t>(label);
        return !keep_ || keep_(id);
    }
    bool stopped() const { return stopped_.load(); }

private:
    const std::function<bool(uint32_t)>& keep_;
    const std::function<bool()>& stop_;
    const uint32_t* positions_;
    mutable std::atomic<uint64_t> seen_{0};
    mutable std::atomic<bool> stopped_{false};
};

// The best `want` of an index of `total` vectors, equal scores to the lower id, from FAISS's
// top-k (`search(k, dist, labels)`). FAISS keeps whichever of several equal scores its heap met
// first, so a tie that crosses the cut may have lost lower ids (identical references have
// identical vectors): when the last hit FAISS returned still scores as much as the hit at the
// cut, k doubles until it returns one that scores less, so every vector of the tied score is
// among those sorted. `positions` maps FAISS labels to record ids (nullptr: labels are ids).
template <typename Search>
std::vector<BankHit> best_with_ties(size_t want, size_t total, const uint32_t* positions, Search search) {
    size_t ask = std::min(total, want + 1);
    std::vector<BankHit> hits;
    while (ask > 0) {
        std::vector<float> dist(ask);
        std::vector<idx_t> labels(ask);
        if (!search(ask, dist.data(), labels.data())) return {};
        hits.clear();
        for (size_t i = 0; i < ask; ++i)
            if (labels[i] >= 0) hits.push_back({positions ? positions[labels[i]] : static_cast<uint32_t>(labels[i]), dist[i]});
        sort_hits(hits);
        const bool full = hits.size() == ask;
        if (!full || ask >= total || hits.size() <= want || hits.back().score < hits[want - 1].score) break;
        ask = std::min(total, ask * 2);
    }
    if (hits.size() > want) hits.resize(want);
    return hits;
}

class FlatIndex final : public VectorIndex {
public:
    FlatIndex(size_t dim, std::vector<uint32_t> ids, const float* vectors) : index_(static_cast<idx_t>(dim)), ids_(std::move(ids)) {
        if (!ids_.empty()) index_.add(static_cast<idx_t>(ids_.size()), vectors);
    }
    size_t dim() const override { return static_cast<size_t>(index_.d); }
    uint64_t size() const override { return ids_.size(); }
    std::vector<BankHit> search(const float* q, size_t want, const std::function<bool(uint32_t)>& keep, const std::function<bool()>& stop,
                                uint32_t, bool* stopped) const override {
        KeepSelector sel(keep, stop, ids_.data());
        faiss::SearchParameters params;
        params.sel = &sel;
        std::vector<BankHit> hits = best_with_ties(want, ids_.size(), ids_.data(), [&](size_t k, float* dist, idx_t* labels) {
            index_.search(1, q, static_cast<idx_t>(k), dist, labels, keep ? &params : nullptr);
            return !sel.stopped();
        });
        if (sel.stopped()) *stopped = true;
        return hits;
    }
    std::string describe(uint32_t) const override { return "flat (exact), " + std::to_string(ids_.size()) + " vectors"; }

private:
    faiss::IndexFlatIP index_;
    std::vector<uint32_t> ids_;  // FAISS position -> record id (ascending: ties still go to the lower id)
};

// FAISS's reader over bytes already in memory (no copy into a VectorIOReader).
struct BytesReader final : faiss::IOReader {
    explicit BytesReader(std::string_view b) : bytes(b) {}
    size_t operator()(void* ptr, size_t size, size_t nitems) override {
        if (size == 0 || nitems == 0) return 0;
        const size_t n = std::min(nitems, (bytes.size() - at) / size);
        std::memcpy(ptr, bytes.data() + at, n * size);
        at += n * size;
        return n;
    }
    std::string_view bytes;
    size_t at = 0;
};

struct StringWriter final : faiss::IOWriter {
    size_t operator()(const void* ptr, size_t size, size_t nitems) override {
        out.append(static_cast<const char*>(ptr), size * nitems);
        return nitems;
    }
    std::string out;
};

uint64_t env_threshold() {
    const char* v = std::getenv("MNEMO_KB_IVF_MIN_RECORDS");
    if (!v || !*v) return kIvfMinRecords;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end != '\0' || v[0] == '-')
        throw Error(std::string("MNEMO_KB_IVF_MIN_RECORDS: '") + v + "' is not a record count (unset it for the default " +
                    std::to_string(kIvfMinRecords) + ")");
    return n;
}

}  // namespace

uint64_t ivf_min_records() { return env_threshold(); }

uint32_t ivf_lists_for(uint64_t live) {
    const double want = 2.0 * std::sqrt(static_cast<double>(live));
    uint32_t lists = 64;
    while (lists < (1u << 20) && static_cast<double>(lists) * 1.5 < want) lists *= 2;  // nearest power of two (geometric midpoint ~1.41)
    return lists;
}

uint32_t default_nprobe(uint32_t lists) { return std::min(lists, std::max(kMinDefaultNprobe, lists / 16)); }

uint64_t ivf_training_sample(uint32_t lists, uint64_t live) { return std::min<uint64_t>(live, uint64_t{64} * lists); }

bool ivf_needs_retraining(uint32_t lists, uint64_t live) {
    const uint32_t now = ivf_lists_for(live);
    return now >= 4ull * lists || lists >= 4ull * now;
}

std::unique_ptr<VectorIndex> make_flat_index(size_t dim, std::vector<uint32_t> ids, const float* vectors) {
    return std::make_unique<FlatIndex>(dim, std::move(ids), vectors);
}

struct IvfIndex::Impl {
    std::unique_ptr<faiss::IndexIVFFlat> index;
    faiss::ArrayInvertedLists* lists = nullptr;  // index's, for remap()
};

IvfIndex::IvfIndex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IvfIndex::~IvfIndex() = default;

std::unique_ptr<IvfIndex> IvfIndex::train(size_t dim, uint32_t lists, const float* sample, size_t n) {
    if (n < lists) throw Error("IVF index: " + std::to_string(n) + " training vectors for " + std::to_string(lists) + " lists");
    auto impl = std::make_unique<Impl>();
    try {
        auto quantizer = new faiss::IndexFlatIP(static_cast<idx_t>(dim));
        impl->index = std::make_unique<faiss::IndexIVFFlat>(quantizer, dim, lists, faiss::METRIC_INNER_PRODUCT);
        impl->index->own_fields = true;
        // 10 k-means iterations: the measured recall was the same as with FAISS's 25 (the
        // centroids only route queries; every vector in a probed list is compared exactly).
        impl->index->cp.niter = 10;
        impl->index->cp.seed = 1234;
        impl->index->train(static_cast<idx_t>(n), sample);
    } catch (const faiss::FaissException& e) {
        throw Error("IVF index: training failed: " + faiss_reason(e));
    }
    impl->lists = dynamic_cast<faiss::ArrayInvertedLists*>(impl->index->invlists);
    if (!impl->lists) throw Error("IVF index: FAISS made inverted lists of an unexpected kind");
    return std::unique_ptr<IvfIndex>(new IvfIndex(std::move(impl)));
}

std::unique_ptr<IvfIndex> IvfIndex::parse(std::string_view bytes, size_t dim, uint32_t lists, const std::string& where) {
    std::unique_ptr<faiss::Index> any;
    try {
        BytesReader r(bytes);
        any.reset(faiss::read_index(&r));
    } catch (const faiss::FaissException& e) {
        throw Error(where + ": FAISS cannot read it: " + faiss_reason(e));
    }
    auto* ivf = dynamic_cast<faiss::IndexIVFFlat*>(any.get());
    if (!ivf) throw Error(where + ": not an IVF-Flat index");
    if (ivf->metric_type != faiss::METRIC_INNER_PRODUCT) throw Error(where + ": metric is not inner product");
    if (static_cast<size_t>(ivf->d) != dim)
        throw Error(where + ": " + std::to_string(ivf->d) + " dimensions, the bank's retrieval_dim is " + std::to_string(dim));
    if (ivf->nlist != lists) throw Error(where + ": " + std::to_string(ivf->nlist) + " lists, the manifest says " + std::to_string(lists));
    if (!ivf->is_trained || !ivf->quantizer || ivf->quantizer->ntotal != static_cast<idx_t>(lists))
        throw Error(where + ": its quantizer does not hold the " + std::to_string(lists) + " trained centroids");
    auto* al = dynamic_cast<faiss::ArrayInvertedLists*>(ivf->invlists);
    if (!al) throw Error(where + ": its inverted lists are not in memory (ArrayInvertedLists)");
    auto impl = std::make_unique<Impl>();
    any.release();
    impl->index.reset(ivf);
    impl->lists = al;
    return std::unique_ptr<IvfIndex>(new IvfIndex(std::move(impl)));
}

std::string IvfIndex::serialize() const {
    StringWriter w;
    try {
        faiss::write_index(impl_->index.get(), &w);
    } catch (const faiss::FaissException& e) {
        throw Error("IVF index: cannot serialize: " + faiss_reason(e));
    }
    return std::move(w.out);
}

void IvfIndex::add(const uint32_t* ids, const float* vectors, size_t n) {
    if (n == 0) return;
    std::vector<idx_t> labels(ids, ids + n);
    try {
        impl_->index->add_with_ids(static_cast<idx_t>(n), vectors, labels.data());
    } catch (const faiss::FaissException& e) {
        throw Error("IVF index: adding vectors failed: " + faiss_reason(e));
    }
}

void IvfIndex::remap(const std::function<int64_t(uint32_t)>& map) {
    faiss::ArrayInvertedLists& al = *impl_->lists;
    const size_t code = al.code_size;
    idx_t total = 0;
    for (size_t l = 0; l < al.nlist; ++l) {
        std::vector<idx_t>& ids = al.ids[l];
        std::vector<uint8_t>& codes = al.codes[l];
        size_t kept = 0;
        for (size_t i = 0; i < ids.size(); ++i) {
            const int64_t to = map(static_cast<uint32_t>(ids[i]));
            if (to < 0) continue;
            if (kept != i) std::memmove(codes.data() + kept * code, codes.data() + i * code, code);
            ids[kept++] = to;
        }
        ids.resize(kept);
        codes.resize(kept * code);
        total += static_cast<idx_t>(kept);
    }
    impl_->index->ntotal = total;
}

std::vector<uint32_t> IvfIndex::ids() const {
    std::vector<uint32_t> out;
    out.reserve(static_cast<size_t>(impl_->index->ntotal));
    for (const std::vector<idx_t>& list : impl_->lists->ids)
        for (idx_t id : list) out.push_back(static_cast<uint32_t>(id));
    return out;
}

double IvfIndex::self_recall(size_t k, size_t queries, uint32_t nprobe) const {
    const faiss::ArrayInvertedLists& al = *impl_->lists;
    const size_t d = dim(), n = static_cast<size_t>(size());
    if (n <= k || queries == 0 || k == 0) return 1.0;
    // The vectors of IVF-Flat are its codes: every list's rows, in list order.
    std::vector<const float*> rows;
    std::vector<uint32_t> row_ids;
    rows.reserve(n);
    for (size_t l = 0; l < al.nlist; ++l)
        for (size_t i = 0; i < al.ids[l].size(); ++i) {
            rows.push_back(reinterpret_cast<const float*>(al.codes[l].data()) + i * d);
            row_ids.push_back(static_cast<uint32_t>(al.ids[l][i]));
        }
    std::mt19937_64 rng(4321);
    size_t found = 0, wanted = 0;
    for (size_t qi = 0; qi < std::min(queries, n); ++qi) {
        const size_t r = std::uniform_int_distribution<size_t>(0, n - 1)(rng);
        const float* q = rows[r];
        const uint32_t self = row_ids[r];
        // Exact: every vector's score, the best k other than the query itself.
        std::vector<BankHit> all(n);
        for (size_t i = 0; i < n; ++i) all[i] = {row_ids[i], faiss::fvec_inner_product(q, rows[i], d)};
        all.erase(std::remove_if(all.begin(), all.end(), [&](const BankHit& h) { return h.id == self; }), all.end());
        std::partial_sort(all.begin(), all.begin() + static_cast<ptrdiff_t>(k), all.end(),
                          [](const BankHit& a, const BankHit& b) { return a.score != b.score ? a.score > b.score : a.id < b.id; });
        bool stopped = false;
        std::vector<BankHit> got = search(q, k + 1, {}, {}, nprobe, &stopped);
        std::vector<uint32_t> got_ids;
        for (const BankHit& h : got)
            if (h.id != self && got_ids.size() < k) got_ids.push_back(h.id);
        for (size_t i = 0; i < k; ++i) found += std::count(got_ids.begin(), got_ids.end(), all[i].id) ? 1 : 0;
        wanted += k;
    }
    return static_cast<double>(found) / static_cast<double>(wanted);
}

uint32_t IvfIndex::lists() const { return static_cast<uint32_t>(impl_->index->nlist); }
size_t IvfIndex::dim() const { return static_cast<size_t>(impl_->index->d); }
uint64_t IvfIndex::size() const { return static_cast<uint64_t>(impl_->index->ntotal); }

std::vector<BankHit> IvfIndex::search(const float* q, size_t want, const std::function<bool(uint32_t)>& keep, const std::function<bool()>& stop,
                                      uint32_t nprobe, bool* stopped) const {
    faiss::SearchParametersIVF params;
    params.nprobe = std::min<size_t>(nprobe ? nprobe : default_nprobe(lists()), impl_->index->nlist);
    std::unique_ptr<KeepSelector> sel;
    if (keep) {
        sel = std::make_unique<KeepSelector>(keep, stop, nullptr);
        params.sel = sel.get();
    }
    std::vector<BankHit> hits = best_with_ties(want, static_cast<size_t>(size()), nullptr, [&](size_t k, float* dist, idx_t* labels) {
        impl_->index->search(1, q, static_cast<idx_t>(k), dist, labels, &params);
        return !(sel && sel->stopped());
    });
    if (sel && sel->stopped()) *stopped = true;
    return hits;
}

std::string IvfIndex::describe(uint32_t nprobe) const {
    const uint32_t probes = nprobe ? std::min(nprobe, lists()) : default_nprobe(lists());
    return "IVF-Flat, " + std::to_string(lists()) + " lists, nprobe " + std::to_string(probes) + (nprobe ? "" : " (default)") + ", " +
           std::to_string(size()) + " vectors";
}

}  // namespace mnemo::kb
