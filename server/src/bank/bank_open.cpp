// Bank::open and the one Bank implementation: everything but the records is loaded and checked
// at open (manifest, codebooks, texts, vectors, tokenizer, each against its SHA-256); records stay
// on storage and are read by range, their CRC checked on every read. After open nothing changes,
// so every const method runs from any thread without a lock (FAISS's const search included).
#include <faiss/IndexFlat.h>
#include <faiss/impl/IDSelector.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "bank.hpp"
#include "bank_format.hpp"
#include "bank_retired.hpp"
#include "bm25_index.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/retrieval_settings.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::kb {
namespace {

namespace fs = std::filesystem;

// Reciprocal rank fusion's constant (Cormack et al. 2009) and how deep each ranking is fused.
constexpr double kRrfK = 60;
constexpr size_t kFusionDepth = 100;

std::vector<int32_t> token_list(const json::Value& v, const std::string& where) {
    if (!v.is_array()) throw Error(where + ": 'tokens' must be an array of integers");
    std::vector<int32_t> out;
    out.reserve(v.as_array().size());
    for (const json::Value& t : v.as_array()) {
        if (!t.is_integer() || t.as_int() < 0 || t.as_int() > INT32_MAX) throw Error(where + ": 'tokens' holds a non-token value");
        out.push_back(static_cast<int32_t>(t.as_int()));
    }
    return out;
}

std::string text_field(const json::Value& line, const char* key, const std::string& where) {
    const json::Value* v = line.find(key);
    if (!v) throw Error(where + ": missing '" + key + "'");
    if (!v->is_string()) throw Error(where + ": '" + key + "' must be a string");
    return v->as_string();
}

// The tokenizer's files go back into a private folder for load_tokenizer(), which reads a model
// folder's tokenizer.json / tokenizer.model plus its BOS/EOS facts from the config files.
std::unique_ptr<Tokenizer> load_bank_tokenizer(const BankStorage& st, const BankManifest& m) {
    if (m.tokenizer.empty()) return nullptr;
    std::string tmpl = (fs::temp_directory_path() / "mnemo-kb-tokenizer-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw Error(st.describe() + ": cannot make a temporary folder for the tokenizer");
    const fs::path dir(tmpl);
    try {
        for (const TokenizerFile& t : m.tokenizer) {
            const std::string bytes = read_checked_blob(st, t.blob, "tokenizer file");
            std::FILE* f = std::fopen((dir / t.name).c_str(), "wb");
            const bool ok = f && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
            if (f) std::fclose(f);
            if (!ok) throw Error(st.describe() + ": cannot write the tokenizer's '" + printable(t.name) + "' to " + printable(dir.string()));
        }
        std::unique_ptr<Tokenizer> tok = load_tokenizer(dir.string());
        fs::remove_all(dir);
        return tok;
    } catch (const std::exception& e) {
        std::error_code ec;
        fs::remove_all(dir, ec);
        throw with_context(st.describe() + ": the bank's tokenizer", e);
    }
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

// How often a pass over the bank asks whether to stop: rare enough to cost nothing, often enough
// to stop within milliseconds.
constexpr uint32_t kStopCheckEvery = 4096;

void stop_if_asked(const BankQuery& q) {
    if (q.should_stop && q.should_stop()) throw QueryStopped();
}

class OpenBank : public Bank {
public:
    OpenBank(std::shared_ptr<BankStorage> st, BankManifest m) : storage_(std::move(st)), m_(std::move(m)) {}

    void load(const std::string& manifest_where) {
        const BankStorage& st = *storage_;
        const std::string keys = read_checked_blob(st, m_.keys_codebook, "keys codebook");
        const std::string values = read_checked_blob(st, m_.values_codebook, "values codebook");
        codec_.keys = parse_vq_codebook(keys.data(), keys.size(), st.describe() + ": " + m_.keys_codebook.file, m_.keys_codebook.sha256);
        codec_.values =
            parse_vq_codebook(values.data(), values.size(), st.describe() + ": " + m_.values_codebook.file, m_.values_codebook.sha256);
        key_bytes_.assign(keys.begin(), keys.end());
        value_bytes_.assign(values.begin(), values.end());
        check_memory_model(m_.model, m_.model, &codec_, manifest_where);
        const uint64_t rb = memory_record_bytes(m_.model.spec, &codec_);
        if (rb != m_.record_bytes)
            throw Error(manifest_where + ": record_bytes " + std::to_string(m_.record_bytes) + ", but the model and codec make " +
                        std::to_string(rb) + "-byte records");

        const auto dim = static_cast<size_t>(m_.model.spec.retrieval_dim);
        vectors_.reserve(m_.count * dim);
        refs_.reserve(m_.count);
        for (const SegmentEntry& s : m_.segments) {
            load_texts(s);
            load_vectors(s, dim);
            const std::string where = st.describe() + ": segment '" + printable(s.records.file) + "'";
            std::unique_ptr<BlobReader> r = st.open_blob(s.records.file);
            if (r->size() != s.records.bytes)
                throw Error(where + ": " + std::to_string(r->size()) + " bytes, the manifest says " + std::to_string(s.records.bytes));
            uint8_t header[kSegmentHeaderBytes];
            r->read(0, header, sizeof header);
            check_segment_header(header, s, m_.record_bytes, where);
            segment_where_.push_back(where);
            readers_.push_back(std::move(r));
        }
        index_live_records(dim);
        tokenizer_ = load_bank_tokenizer(st, m_);
    }

    uint64_t version() const override { return m_.version; }
    const MemoryFolderModel& model() const override { return m_.model; }
    const MemoryCodec& codec() const override { return codec_; }
    const std::vector<uint8_t>* codebook_bytes(const std::string& sha256) const override {
        if (sha256 == codec_.keys.sha256) return &key_bytes_;
        if (sha256 == codec_.values.sha256) return &value_bytes_;
        return nullptr;
    }
    uint64_t count() const override { return m_.count; }
    uint64_t record_bytes() const override { return m_.record_bytes; }
    uint32_t segments() const override { return static_cast<uint32_t>(m_.segments.size()); }
    bool retired(uint32_t id) const override { return retired_.contains(id); }
    uint64_t retired_count() const override { return retired_.size(); }
    const BankDocuments& documents() const override { return documents_; }
    const Tokenizer* tokenizer() const override { return tokenizer_.get(); }

    std::vector<BankHit> retrieve(const BankQuery& q) const override;

    std::string record(uint32_t id) const override {
        if (id >= m_.count)
            throw Error(storage_->describe() + ": no record " + std::to_string(id) + " (the bank holds " + std::to_string(m_.count) + ")");
        if (retired_.contains(id))
            throw Error(storage_->describe() + ": record " + std::to_string(id) + " is retired in version " + std::to_string(m_.version) +
                        " (its document '" + printable(refs_[id].doc_id, 200) + "' was replaced or deleted)");
        // The segment whose id range holds `id` (segments are sorted by first_id).
        auto it = std::upper_bound(m_.segments.begin(), m_.segments.end(), id,
                                   [](uint32_t v, const SegmentEntry& s) { return v < s.first_id; });
        const size_t si = static_cast<size_t>(it - m_.segments.begin()) - 1;
        const SegmentEntry& s = m_.segments[si];
        std::string bytes(m_.record_bytes, '\0');
        readers_[si]->read(kSegmentHeaderBytes + uint64_t{id - s.first_id} * m_.record_bytes, bytes.data(), bytes.size());
        // The full check (magic, id, CRC, shapes) before a byte leaves: a damaged record is an
        // error here, never a wrong memory on a device.
        check_memory_record(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), id, m_.model.spec, &codec_,
                             segment_where_[si] + ": record " + std::to_string(id));
        return bytes;
    }

    const BankReference& reference(uint32_t id) const override {
        if (id >= m_.count)
            throw Error(storage_->describe() + ": no reference " + std::to_string(id) + " (the bank holds " + std::to_string(m_.count) + ")");
        return refs_[id];
    }

    const float* vector(uint32_t id) const override {
        if (id >= m_.count)
            throw Error(storage_->describe() + ": no vector " + std::to_string(id) + " (the bank holds " + std::to_string(m_.count) + ")");
        return vectors_.data() + static_cast<size_t>(id) * static_cast<size_t>(m_.model.spec.retrieval_dim);
    }

private:
    void load_texts(const SegmentEntry& s) {
        const std::string bytes = read_checked_blob(*storage_, s.texts, "texts");
        const std::string where = storage_->describe() + ": texts '" + printable(s.texts.file) + "'";
        // Lines written before documents had versions carry none: the segment's own name says
        // which version wrote it (every build and add names its segments so).
        const uint64_t segment_version = version_in_segment_name(s.records.file, "seg");
        size_t pos = 0;
        uint32_t id = s.first_id;
        while (pos < bytes.size()) {
            size_t end = bytes.find('\n', pos);
            if (end == std::string::npos) end = bytes.size();
            const std::string_view line(bytes.data() + pos, end - pos);
            pos = end + 1;
            if (line.empty()) continue;
            const std::string lw = where + ": line " + std::to_string(id - s.first_id + 1);
            if (id >= s.first_id + s.count) throw Error(where + ": more than the segment's " + std::to_string(s.count) + " lines");
            const json::Value v = json::parse(line, lw);
            if (!v.is_object()) throw Error(lw + ": expected a JSON object");
            const json::Value* jid = v.find("id");
            if (!jid || !jid->is_integer() || jid->as_int() != id) throw Error(lw + ": 'id' must be " + std::to_string(id));
            BankReference r;
            r.text = text_field(v, "text", lw);
            r.title = text_field(v, "title", lw);
            r.source = text_field(v, "source", lw);
            r.doc_id = text_field(v, "doc_id", lw);
            r.doc_version = doc_version(v, segment_version, lw);
            const json::Value* tokens = v.find("tokens");
            if (!tokens) throw Error(lw + ": missing 'tokens'");
            r.tokens = token_list(*tokens, lw);
            refs_.push_back(std::move(r));
            ++id;
        }
        if (id != s.first_id + s.count)
            throw Error(where + ": " + std::to_string(id - s.first_id) + " references, the segment holds " + std::to_string(s.count));
    }

    // A line's "doc_version": the version that added its document's text, 0 when unknown; never
    // later than this version.
    uint64_t doc_version(const json::Value& line, uint64_t fallback, const std::string& where) const {
        const json::Value* v = line.find("doc_version");
        if (!v) return fallback <= m_.version ? fallback : 0;
        if (!v->is_integer() || v->as_int() < 0 || static_cast<uint64_t>(v->as_int()) > m_.version)
            throw Error(where + ": 'doc_version' must be an integer in [0, " + std::to_string(m_.version) + "] (the manifest's version)");
        return static_cast<uint64_t>(v->as_int());
    }

    // The retrieval indexes over the live records only (retired ones are left out of FAISS and of
    // BM25's statistics), and the documents.
    void index_live_records(size_t dim) {
        retired_ = RetiredSet(m_.retired);
        const auto live = [&](uint32_t id) { return !retired_.contains(id); };
        live_ids_.reserve(m_.count - retired_.size());
        for (uint32_t id = 0; id < m_.count; ++id)
            if (live(id)) live_ids_.push_back(id);
        for (uint32_t id : live_ids_) bm25_.add(id, refs_[id].tokens);
        bm25_.finish();
        index_ = std::make_unique<faiss::IndexFlatIP>(static_cast<faiss::Index::idx_t>(dim));
        if (live_ids_.size() == m_.count) {
            if (m_.count) index_->add(static_cast<faiss::Index::idx_t>(m_.count), vectors_.data());
        } else if (!live_ids_.empty()) {
            std::vector<float> kept(live_ids_.size() * dim);
            for (size_t p = 0; p < live_ids_.size(); ++p)
                std::memcpy(kept.data() + p * dim, vectors_.data() + size_t{live_ids_[p]} * dim, dim * sizeof(float));
            index_->add(static_cast<faiss::Index::idx_t>(live_ids_.size()), kept.data());
        }
        documents_ = BankDocuments(
            m_.count, [&](uint32_t id) { return std::make_pair(&refs_[id].doc_id, refs_[id].doc_version); }, live);
    }

    void load_vectors(const SegmentEntry& s, size_t dim) {
        const std::string bytes = read_checked_blob(*storage_, s.vectors, "vectors");
        const size_t n = bytes.size() / 4;
        const size_t at = vectors_.size();
        vectors_.resize(at + n);
        std::memcpy(vectors_.data() + at, bytes.data(), bytes.size());  // little-endian hosts only (as the engine)
        for (size_t i = 0; i < n; ++i)
            if (!std::isfinite(vectors_[at + i]))
                throw Error(storage_->describe() + ": vectors '" + printable(s.vectors.file) + "': record " + std::to_string(s.first_id + i / dim) +
                            " has a non-finite value");
    }

    std::vector<BankHit> ranking(const BankQuery& q, const SourceFilter& filter, size_t k) const;  // before the cut
    std::vector<BankHit> vector_ranking(const BankQuery& q, const SourceFilter& filter, size_t depth) const;
    std::vector<BankHit> bm25_ranking(const BankQuery& q, const SourceFilter& filter, size_t depth) const;

    std::shared_ptr<BankStorage> storage_;
    BankManifest m_;
    MemoryCodec codec_;
    std::vector<uint8_t> key_bytes_, value_bytes_;
    std::vector<BankReference> refs_;
    std::vector<float> vectors_;
    RetiredSet retired_;
    std::vector<uint32_t> live_ids_;  // FAISS position -> record id (ascending: ties still go to the lower id)
    BankDocuments documents_;
    std::unique_ptr<faiss::IndexFlatIP> index_;  // the live records' vectors, in live_ids_ order
    Bm25Index bm25_;
    std::vector<std::unique_ptr<BlobReader>> readers_;
    std::vector<std::string> segment_where_;
    std::unique_ptr<Tokenizer> tokenizer_;
};

// Best first; equal scores to the lower id.
void sort_hits(std::vector<BankHit>& hits) {
    std::sort(hits.begin(), hits.end(), [](const BankHit& a, const BankHit& b) { return a.score != b.score ? a.score > b.score : a.id < b.id; });
}

std::vector<BankHit> OpenBank::vector_ranking(const BankQuery& q, const SourceFilter& filter, size_t depth) const {
    const bool filtered = filter.active();
    std::vector<uint8_t> bitmap;
    faiss::SearchParameters params;
    std::unique_ptr<faiss::IDSelectorBitmap> sel;
    const size_t n = live_ids_.size();
    if (filtered) {
        bitmap.assign((n + 7) / 8, 0);
        for (size_t p = 0; p < n; ++p) {
            if (p % kStopCheckEvery == 0) stop_if_asked(q);
            if (filter.passes(refs_[live_ids_[p]].source)) bitmap[p / 8] |= static_cast<uint8_t>(1u << (p % 8));
        }
        sel = std::make_unique<faiss::IDSelectorBitmap>(bitmap.size(), bitmap.data());
        params.sel = sel.get();
    }
    // One more than asked, so that a tie at the cut can still go to the lower id.
    const size_t want = std::min<size_t>(n, depth + 1);
    std::vector<float> dist(want);
    std::vector<faiss::Index::idx_t> ids(want);
    stop_if_asked(q);
    if (want) index_->search(1, q.vector->data(), static_cast<faiss::Index::idx_t>(want), dist.data(), ids.data(), filtered ? &params : nullptr);
    std::vector<BankHit> hits;
    for (size_t i = 0; i < want; ++i)
        if (ids[i] >= 0) hits.push_back({live_ids_[static_cast<size_t>(ids[i])], dist[i]});
    sort_hits(hits);
    if (hits.size() > depth) hits.resize(depth);
    return hits;
}

std::vector<BankHit> OpenBank::bm25_ranking(const BankQuery& q, const SourceFilter& filter, size_t depth) const {
    // Ordered and cut on the double scores, as the memory folder ranks (the reply carries floats).
    uint32_t seen = 0;
    std::vector<std::pair<uint32_t, double>> exact = bm25_.score(*q.tokens, [&](uint32_t id) {
        if (++seen % kStopCheckEvery == 0) stop_if_asked(q);
        return filter.passes(refs_[id].source);
    });
    stop_if_asked(q);
    std::sort(exact.begin(), exact.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    if (exact.size() > depth) exact.resize(depth);
    std::vector<BankHit> hits;
    for (const auto& [id, s] : exact) hits.push_back({id, s});
    return hits;
}

std::vector<BankHit> OpenBank::retrieve(const BankQuery& q) const {
    const std::string where = storage_->describe() + ": retrieve";
    if (q.k < 1) throw Error(where + ": k must be >= 1, got " + std::to_string(q.k));
    const bool by_vector = q.vector != nullptr;
    const bool by_tokens = q.tokens != nullptr && !q.tokens->empty();
    if (by_vector) {
        const auto dim = static_cast<size_t>(m_.model.spec.retrieval_dim);
        if (q.vector->size() != dim)
            throw Error(where + ": the query vector has " + std::to_string(q.vector->size()) + " values, the bank's retrieval_dim is " +
                        std::to_string(dim));
        for (float x : *q.vector)
            if (!std::isfinite(x)) throw Error(where + ": the query vector has a non-finite value");
    }
    if (!by_vector && !by_tokens) throw Error(where + ": the query has neither a vector nor tokens");
    check_min_relative_score(q.min_relative_score, where);
    const SourceFilter filter(q);
    std::vector<BankHit> hits = ranking(q, filter, static_cast<size_t>(q.k));
    hits.resize(count_near_best(hits, q.min_relative_score, [](const BankHit& h) { return h.score; }));
    return hits;
}

std::vector<BankHit> OpenBank::ranking(const BankQuery& q, const SourceFilter& filter, size_t k) const {
    const bool by_vector = q.vector != nullptr;
    const bool by_tokens = q.tokens != nullptr && !q.tokens->empty();
    if (by_vector && !by_tokens) return vector_ranking(q, filter, k);
    if (by_tokens && !by_vector) return bm25_ranking(q, filter, k);
    // Hybrid: each ranking to at least kFusionDepth, fused by 1 / (60 + rank).
    const size_t depth = std::max(k, kFusionDepth);
    std::unordered_map<uint32_t, double> fused;
    for (const std::vector<BankHit>& ranked : {vector_ranking(q, filter, depth), bm25_ranking(q, filter, depth)})
        for (size_t r = 0; r < ranked.size(); ++r) fused[ranked[r].id] += 1.0 / (kRrfK + static_cast<double>(r + 1));
    std::vector<std::pair<uint32_t, double>> all(fused.begin(), fused.end());
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    if (all.size() > k) all.resize(k);
    std::vector<BankHit> hits;
    for (const auto& [id, s] : all) hits.push_back({id, s});
    return hits;
}

}  // namespace

uint64_t Bank::current_version(const BankStorage& storage) {
    const std::optional<std::string> cur = storage.read_blob(kCurrentPointer, kMaxPointerBytes);
    if (!cur) return 0;
    return parse_current_pointer(*cur, storage.describe() + ": " + kCurrentPointer);
}

std::shared_ptr<const Bank> Bank::open(std::shared_ptr<BankStorage> storage) {
    if (!storage) throw Error("Bank::open: no storage");
    const std::optional<std::string> cur = storage->read_blob(kCurrentPointer, kMaxPointerBytes);
    if (!cur)
        throw Error(storage->describe() + ": no bank yet (no " + kCurrentPointer +
                    " pointer: nothing has been published; run `mnemo-kb build`)");
    const uint64_t version = parse_current_pointer(*cur, storage->describe() + ": " + kCurrentPointer);
    const std::string name = manifest_name(version);
    const std::string where = storage->describe() + ": " + name;
    const std::optional<std::string> text = storage->read_blob(name, kMaxManifestBytes);
    if (!text) throw Error(where + ": missing (CURRENT names it)");
    BankManifest m = manifest_from_json(*text, where);
    if (m.version != version) throw Error(where + ": says version " + std::to_string(m.version) + ", its name " + std::to_string(version));
    auto bank = std::make_shared<OpenBank>(std::move(storage), std::move(m));
    bank->load(where);
    return bank;
}

}  // namespace mnemo::kb
