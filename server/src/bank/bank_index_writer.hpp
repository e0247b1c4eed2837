// The step every writer (build, add, delete, compact) takes before publishing a version: store
// the version's retrieval indexes (bank_vector_index.hpp, bm25_store.hpp) and name them in its
// manifest. VersionWriter::publish calls it, so no writer can publish a version without them.
//
// Incremental where the previous version allows it. The segments the new version shares with the
// previous one (the longest common prefix, same blobs) keep their ids; for them the previous
// version's indexes are reused: the BM25 postings of records still live are kept, the IVF index
// keeps its trained centroids and drops the vectors of records no longer live. Only the records
// of the new segments are read (their texts for the tokens, their vectors) and added. The IVF
// index is trained again when the live count crosses the threshold, when the lists no longer fit
// it (ivf_needs_retraining), or when the previous version has no stored index.
#pragma once

#include <optional>

#include "bank_format.hpp"
#include "bank_storage.hpp"

namespace mnemo::kb {

class VersionWriter;

// What the index step did, for reports and measurements.
struct IndexWriteReport {
    bool incremental_bm25 = false;
    bool ivf = false;
    bool ivf_trained = false;     // k-means ran (no reusable previous index)
    uint64_t vectors_added = 0;   // assigned to lists (IVF) this time
    uint32_t lists = 0;
    double seconds = 0;
    double train_seconds = 0;
    // Leave-one-out recall@10 of the stored IVF index at the default nprobe against an exact
    // search (IvfIndex::self_recall, kRecallQueries queries); -1 for a flat index (exact).
    double recall_at_10 = -1;
    uint32_t recall_nprobe = 0;
    double recall_seconds = 0;
};
constexpr size_t kRecallQueries = 100;

// The indexes of `next` (the manifest about to be published as version `version`), written
// through `w` and returned for the manifest. `previous`: the published version it was made from
// (nothing for the first build).
BankIndexEntry write_version_indexes(VersionWriter& w, const BankStorage& storage, uint64_t version, const std::optional<BankManifest>& previous,
                                     const BankManifest& next, IndexWriteReport* report = nullptr);

}  // namespace mnemo::kb
