// The retrieval vectors' index of one bank version (server/README.md, "Retrieval index"), inner
// product, over the live records only (ids are record ids):
//   - flat: exact, every vector compared. What a small bank uses: below kIvfMinRecords live
//     records a query costs well under the serve deadlines and needs no training. Not stored:
//     open lays it out from the vectors blobs it reads anyway.
//   - IVF-Flat: the vectors in `lists` inverted lists around k-means centroids; a query compares
//     the nprobe lists nearest to it. Approximate (recall measured in server/README.md), built by
//     the writers, stored as a blob (FAISS's serialization) the manifest names with its SHA-256,
//     and loaded at open after the hash check: FAISS's reader is not hardened, so only bytes the
//     manifest vouches for reach it.
// The FAISS types stay in the .cpp: users see this interface only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bank_ranking.hpp"

namespace mnemo::kb {

// The policy (measurements in server/README.md, "Retrieval index"). MNEMO_KB_IVF_MIN_RECORDS
// overrides the threshold for writers (0: always IVF; a huge value: always flat).
constexpr uint64_t kIvfMinRecords = 50000;
uint64_t ivf_min_records();  // kIvfMinRecords unless the environment says otherwise
// Lists for `live` vectors: the power of two nearest 2 * sqrt(live), at least 64.
uint32_t ivf_lists_for(uint64_t live);
// Vectors k-means is trained on: 64 per list (FAISS warns below 39), at most all of them.
uint64_t ivf_training_sample(uint32_t lists, uint64_t live);
// Whether an index of `lists` lists should be trained again for `live` vectors: once the lists
// it would get now differ by 4x or more (a list then holds 16x the vectors it was made for, or
// 1/16), so query cost stays near what the threshold was measured with.
bool ivf_needs_retraining(uint32_t lists, uint64_t live);

// The lists a query probes unless told otherwise: a sixteenth of them (so that recall stays about
// the same as the bank grows: lists grow as sqrt(live), and so does each list), at least
// kMinDefaultNprobe, at most all.
constexpr uint32_t kMinDefaultNprobe = 32;
uint32_t default_nprobe(uint32_t lists);

class VectorIndex {
public:
    virtual ~VectorIndex() = default;
    virtual size_t dim() const = 0;
    virtual uint64_t size() const = 0;  // vectors held
    // The best `want` by inner product, best first, equal scores to the lower id. `keep` (may be
    // empty) filters by record id before scoring. `stop` (may be empty) is asked every few
    // thousand vectors while a filtered search runs; when it says true the search ends early and
    // search returns with *stopped set (the caller throws QueryStopped).
    // `nprobe`: 0 for default_nprobe(lists) (an IVF index; a flat one ignores it).
    virtual std::vector<BankHit> search(const float* query, size_t want, const std::function<bool(uint32_t)>& keep,
                                        const std::function<bool()>& stop, uint32_t nprobe, bool* stopped) const = 0;
    virtual std::string describe(uint32_t nprobe) const = 0;
};

// Exact: `ids` (ascending) and their vectors, ids.size() x dim floats in the same order.
std::unique_ptr<VectorIndex> make_flat_index(size_t dim, std::vector<uint32_t> ids, const float* vectors);

class IvfIndex final : public VectorIndex {
public:
    ~IvfIndex() override;
    // k-means on `sample` (n x dim) into `lists` centroids; no vectors yet.
    static std::unique_ptr<IvfIndex> train(size_t dim, uint32_t lists, const float* sample, size_t n);
    // Parses a stored blob (hashed by the caller first) and checks it is an IVF-Flat index of
    // inner product over `dim` dimensions with `lists` lists; `where` names the blob in errors.
    static std::unique_ptr<IvfIndex> parse(std::string_view bytes, size_t dim, uint32_t lists, const std::string& where);
    std::string serialize() const;

    // Adds n vectors under the given record ids (each assigned to its nearest list).
    void add(const uint32_t* ids, const float* vectors, size_t n);
    // Every vector's id through `map`: a new id, or -1 to drop it. One pass over the lists; no
    // vector is reassigned (the centroids stay those it was trained with).
    void remap(const std::function<int64_t(uint32_t)>& map);
    // Leave-one-out recall@k at `nprobe`: `queries` of the index's own vectors (the same ones for
    // the same index), each searched for its k nearest others, compared with an exact pass over
    // every vector. What the writers report for the index they store.
    double self_recall(size_t k, size_t queries, uint32_t nprobe) const;
    // Every id held, each once; lists() lists.
    std::vector<uint32_t> ids() const;
    uint32_t lists() const;

    size_t dim() const override;
    uint64_t size() const override;
    std::vector<BankHit> search(const float* query, size_t want, const std::function<bool(uint32_t)>& keep, const std::function<bool()>& stop,
                                uint32_t nprobe, bool* stopped) const override;
    std::string describe(uint32_t nprobe) const override;

private:
    struct Impl;
    explicit IvfIndex(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace mnemo::kb
