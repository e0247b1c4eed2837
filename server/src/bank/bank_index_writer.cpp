#include "bank_index_writer.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "bank.hpp"
#include "bank_retired.hpp"
#include "bank_texts.hpp"
#include "bank_vector_index.hpp"
#include "bank_version_writer.hpp"
#include "bm25_store.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/retrieval_terms.hpp"

namespace mnemo::kb {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The end of the ids whose segments `next` shares with `previous` (same blobs, same ids): those
// records are what they were, so the previous version's indexes still describe them.
uint32_t shared_prefix_end(const BankManifest& previous, const BankManifest& next) {
    uint32_t end = 0;
    for (size_t i = 0; i < previous.segments.size() && i < next.segments.size(); ++i) {
        const SegmentEntry &a = previous.segments[i], &b = next.segments[i];
        if (a.records.file != b.records.file || a.records.sha256 != b.records.sha256 || a.first_id != b.first_id || a.count != b.count ||
            a.vectors.sha256 != b.vectors.sha256 || a.texts.sha256 != b.texts.sha256)
            break;
        end = b.first_id + b.count;
    }
    return end;
}

// A segment's vectors (count x dim), size and SHA-256 checked, every value finite.
std::vector<float> segment_vectors(const BankStorage& st, const SegmentEntry& s, size_t dim) {
    const std::string bytes = read_checked_blob(st, s.vectors, "vectors");
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);  // little-endian hosts only (as the engine)
    for (size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]))
            throw Error(st.describe() + ": vectors '" + printable(s.vectors.file) + "': record " + std::to_string(s.first_id + i / dim) +
                        " has a non-finite value");
    return v;
}

// Live records of some segments: ids ascending, their vectors, and (when asked) the terms BM25
// counts (title and text tokens).
struct LiveRecords {
    std::vector<uint32_t> ids;
    std::vector<float> vectors;
    std::vector<std::vector<int32_t>> tokens;
};

void read_live(const BankStorage& st, const SegmentEntry& s, uint64_t version, size_t dim, const RetiredSet& retired, bool with_tokens,
               LiveRecords& out) {
    const std::vector<float> v = segment_vectors(st, s, dim);
    std::vector<BankReference> refs;
    if (with_tokens) read_segment_references(st, s, version, refs);
    for (uint32_t i = 0; i < s.count; ++i) {
        const uint32_t id = s.first_id + i;
        if (retired.contains(id)) continue;
        out.ids.push_back(id);
        out.vectors.insert(out.vectors.end(), v.begin() + static_cast<ptrdiff_t>(size_t{i} * dim), v.begin() + static_cast<ptrdiff_t>(size_t{i + 1} * dim));
        if (with_tokens) out.tokens.push_back(retrieval_terms(refs[i].title_tokens, refs[i].tokens));
    }
}

// `n` of `total` rows, the same ones for the same bank (seeded), in ascending order.
std::vector<size_t> sample_rows(size_t total, size_t n) {
    std::vector<size_t> rows(total);
    std::iota(rows.begin(), rows.end(), size_t{0});
    if (n >= total) return rows;
    std::mt19937_64 rng(1234);
    for (size_t i = 0; i < n; ++i) std::swap(rows[i], rows[i + std::uniform_int_distribution<size_t>(0, total - i - 1)(rng)]);
    rows.resize(n);
    std::sort(rows.begin(), rows.end());
    return rows;
}

}  // namespace

BankIndexEntry write_version_indexes(VersionWriter& w, const BankStorage& st, uint64_t version, const std::optional<BankManifest>& previous,
                                     const BankManifest& m, IndexWriteReport* report) {
    const auto t0 = std::chrono::steady_clock::now();
    IndexWriteReport r;
    const auto dim = static_cast<size_t>(m.model.spec.retrieval_dim);
    const RetiredSet retired(m.retired);
    const uint64_t live = m.count - retired.size();
    const std::optional<BankIndexEntry>& old = previous ? previous->index : std::nullopt;
    const bool reusable = old && previous->model.spec.retrieval_dim == m.model.spec.retrieval_dim;
    const uint32_t kept_end = reusable ? shared_prefix_end(*previous, m) : 0;
    const auto kept = [&](uint32_t id) { return id < kept_end && !retired.contains(id); };

    // The records of the segments the previous version does not have: read back (tokens, vectors).
    LiveRecords fresh;
    for (const SegmentEntry& s : m.segments)
        if (s.first_id >= kept_end) read_live(st, s, version, dim, retired, true, fresh);

    BankIndexEntry x;
    {
        Bm25Index bm25;
        if (kept_end > 0) {
            const std::string where = st.describe() + ": BM25 index '" + printable(old->bm25.file) + "'";
            const Bm25Index base = parse_bm25_blob(read_checked_blob(st, old->bm25, "BM25 index"), where);
            std::vector<std::pair<uint32_t, const std::vector<int32_t>*>> added;
            added.reserve(fresh.ids.size());
            for (size_t i = 0; i < fresh.ids.size(); ++i) added.emplace_back(fresh.ids[i], &fresh.tokens[i]);
            bm25 = Bm25Index::updated(base, kept, static_cast<uint32_t>(m.count), added);
            r.incremental_bm25 = true;
        } else {
            for (size_t i = 0; i < fresh.ids.size(); ++i) bm25.add(fresh.ids[i], fresh.tokens[i]);
            bm25.finish(static_cast<uint32_t>(m.count));
        }
        if (bm25.documents() != live)
            throw Error(st.describe() + ": the new BM25 index holds " + std::to_string(bm25.documents()) + " documents, the version " +
                        std::to_string(live) + " live records");
        x.bm25 = w.put(index_blob_name("bm25", version, "bin"), encode_bm25_blob(bm25));
    }
    fresh.tokens.clear();
    fresh.tokens.shrink_to_fit();

    x.vectors_count = live;
    // Flat below the threshold, and always when there are fewer vectors than lists to train.
    if (live < ivf_min_records() || live < ivf_lists_for(live)) {
        x.vectors_kind = kIndexFlat;  // the vectors blobs are the index; open lays it out
    } else {
        r.ivf = true;
        std::unique_ptr<IvfIndex> ivf;
        if (kept_end > 0 && old->vectors_kind == kIndexIvfFlat && !ivf_needs_retraining(old->lists, live)) {
            const std::string where = st.describe() + ": vector index '" + printable(old->vectors.file) + "'";
            ivf = IvfIndex::parse(read_checked_blob(st, old->vectors, "vector index"), dim, old->lists, where);
            ivf->remap([&](uint32_t id) { return kept(id) ? int64_t{id} : int64_t{-1}; });
            ivf->add(fresh.ids.data(), fresh.vectors.data(), fresh.ids.size());
            r.vectors_added = fresh.ids.size();
        } else {
            // Trained on a sample of every live vector: the shared segments' are read too.
            LiveRecords all;
            for (const SegmentEntry& s : m.segments)
                if (s.first_id < kept_end) read_live(st, s, version, dim, retired, false, all);
            all.ids.insert(all.ids.end(), fresh.ids.begin(), fresh.ids.end());
            all.vectors.insert(all.vectors.end(), fresh.vectors.begin(), fresh.vectors.end());
            fresh = LiveRecords{};
            const uint32_t lists = ivf_lists_for(live);
            const std::vector<size_t> rows = sample_rows(all.ids.size(), ivf_training_sample(lists, live));
            std::vector<float> sample(rows.size() * dim);
            for (size_t i = 0; i < rows.size(); ++i) std::memcpy(sample.data() + i * dim, all.vectors.data() + rows[i] * dim, dim * 4);
            const auto t_train = std::chrono::steady_clock::now();
            ivf = IvfIndex::train(dim, lists, sample.data(), rows.size());
            r.train_seconds = since(t_train);
            r.ivf_trained = true;
            ivf->add(all.ids.data(), all.vectors.data(), all.ids.size());
            r.vectors_added = all.ids.size();
        }
        if (ivf->size() != live)
            throw Error(st.describe() + ": the new IVF index holds " + std::to_string(ivf->size()) + " vectors, the version " + std::to_string(live) +
                        " live records");
        const auto t_recall = std::chrono::steady_clock::now();
        r.recall_nprobe = default_nprobe(ivf->lists());
        r.recall_at_10 = ivf->self_recall(10, kRecallQueries, r.recall_nprobe);
        r.recall_seconds = since(t_recall);
        r.lists = ivf->lists();
        x.vectors_kind = kIndexIvfFlat;
        x.lists = ivf->lists();
        x.vectors = w.put(index_blob_name("index", version, "ivf"), ivf->serialize());
    }
    r.seconds = since(t0);
    if (report) *report = r;
    return x;
}

}  // namespace mnemo::kb
