// Bank::open and the loading half of the one Bank implementation (open_bank.hpp): everything but
// the records is loaded and checked at open (manifest, codebooks, texts, vectors, tokenizer, the
// stored indexes, each against its SHA-256); records stay on storage and are read by range, their
// CRC checked on every read. The retrieval indexes and queries are bank_open_search.cpp's.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "bank_texts.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "open_bank.hpp"

namespace mnemo::kb {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

void OpenBank::load(const std::string& manifest_where) {
    const BankStorage& st = *storage_;
    if (options_.shards == 0 || options_.shard >= options_.shards)
        throw Error(st.describe() + ": shard " + std::to_string(options_.shard) + " of " + std::to_string(options_.shards) +
                    ": the shard must be in [0, shards) and shards >= 1");
    const std::string keys = read_checked_blob(st, m_.keys_codebook, "keys codebook");
    const std::string values = read_checked_blob(st, m_.values_codebook, "values codebook");
    codec_.keys = parse_vq_codebook(keys.data(), keys.size(), st.describe() + ": " + m_.keys_codebook.file, m_.keys_codebook.sha256);
    codec_.values = parse_vq_codebook(values.data(), values.size(), st.describe() + ": " + m_.values_codebook.file, m_.values_codebook.sha256);
    key_bytes_.assign(keys.begin(), keys.end());
    value_bytes_.assign(values.begin(), values.end());
    check_memory_model(m_.model, m_.model, &codec_, manifest_where);
    const uint64_t rb = memory_record_bytes(m_.model.spec, &codec_);
    if (rb != m_.record_bytes)
        throw Error(manifest_where + ": record_bytes " + std::to_string(m_.record_bytes) + ", but the model and codec make " + std::to_string(rb) +
                    "-byte records");

    const auto dim = static_cast<size_t>(m_.model.spec.retrieval_dim);
    vectors_.reserve((m_.count / options_.shards + 1) * dim);
    refs_.reserve(m_.count);
    for (const SegmentEntry& s : m_.segments) {
        read_segment_references(st, s, m_.version, refs_);
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
    retired_ = RetiredSet(m_.retired);
    documents_ = BankDocuments(
        m_.count, [&](uint32_t id) { return std::make_pair(&refs_[id].doc_id, refs_[id].doc_version); },
        [&](uint32_t id) { return !retired_.contains(id); });
    load_indexes();
    tokenizer_ = load_bank_tokenizer(st, m_);
}

// Every value is checked finite; a shard keeps its own ids' rows only.
void OpenBank::load_vectors(const SegmentEntry& s, size_t dim) {
    const std::string bytes = read_checked_blob(*storage_, s.vectors, "vectors");
    const size_t n = bytes.size() / 4;
    std::vector<float> own;  // a shard's copy of the whole segment, before its rows are picked
    std::vector<float>& into = options_.shards <= 1 ? vectors_ : own;
    const size_t at = into.size();
    into.resize(at + n);
    std::memcpy(into.data() + at, bytes.data(), bytes.size());  // little-endian hosts only (as the engine)
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(into[at + i]))
            throw Error(storage_->describe() + ": vectors '" + printable(s.vectors.file) + "': record " + std::to_string(s.first_id + i / dim) +
                        " has a non-finite value");
    if (options_.shards <= 1) return;
    for (uint32_t i = 0; i < s.count; ++i)
        if (in_shard(s.first_id + i)) vectors_.insert(vectors_.end(), own.begin() + static_cast<ptrdiff_t>(size_t{i} * dim), own.begin() + static_cast<ptrdiff_t>(size_t{i + 1} * dim));
}

size_t OpenBank::servable_segment(uint32_t id) const {
    if (id >= m_.count)
        throw Error(storage_->describe() + ": no record " + std::to_string(id) + " (the bank holds " + std::to_string(m_.count) + ")");
    if (retired_.contains(id))
        throw Error(storage_->describe() + ": record " + std::to_string(id) + " is retired in version " + std::to_string(m_.version) +
                    " (its document '" + printable(refs_[id].doc_id, 200) + "' was replaced or deleted)");
    // The segment whose id range holds `id` (segments are sorted by first_id).
    auto it = std::upper_bound(m_.segments.begin(), m_.segments.end(), id, [](uint32_t v, const SegmentEntry& s) { return v < s.first_id; });
    return static_cast<size_t>(it - m_.segments.begin()) - 1;
}

// The full check (magic, id, CRC, shapes) before a byte leaves: a damaged record is an error
// here, never a wrong memory on a device.
void OpenBank::check_record(const std::string& bytes, uint32_t id, size_t si) const {
    check_memory_record(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), id, m_.model.spec, &codec_,
                        segment_where_[si] + ": record " + std::to_string(id));
}

std::string OpenBank::record(uint32_t id) const {
    const size_t si = servable_segment(id);
    std::string bytes(m_.record_bytes, '\0');
    readers_[si]->read(kSegmentHeaderBytes + uint64_t{id - m_.segments[si].first_id} * m_.record_bytes, bytes.data(), bytes.size());
    check_record(bytes, id, si);
    return bytes;
}

std::vector<std::string> OpenBank::records(const std::vector<uint32_t>& ids) const {
    std::vector<std::string> out(ids.size(), std::string(m_.record_bytes, '\0'));
    std::vector<size_t> seg(ids.size());
    std::vector<std::vector<BlobReader::Range>> ranges(m_.segments.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        seg[i] = servable_segment(ids[i]);
        ranges[seg[i]].push_back(
            {kSegmentHeaderBytes + uint64_t{ids[i] - m_.segments[seg[i]].first_id} * m_.record_bytes, out[i].data(), out[i].size()});
    }
    for (size_t si = 0; si < ranges.size(); ++si)
        if (!ranges[si].empty()) readers_[si]->read_ranges(ranges[si]);
    for (size_t i = 0; i < ids.size(); ++i) check_record(out[i], ids[i], seg[i]);
    return out;
}

const BankReference& OpenBank::reference(uint32_t id) const {
    if (id >= m_.count)
        throw Error(storage_->describe() + ": no reference " + std::to_string(id) + " (the bank holds " + std::to_string(m_.count) + ")");
    return refs_[id];
}

const float* OpenBank::vector(uint32_t id) const {
    if (id >= m_.count)
        throw Error(storage_->describe() + ": no vector " + std::to_string(id) + " (the bank holds " + std::to_string(m_.count) + ")");
    if (!in_shard(id))
        throw Error(storage_->describe() + ": no vector " + std::to_string(id) + " in shard " + std::to_string(options_.shard) + " of " +
                    std::to_string(options_.shards) + " (a shard holds the vectors of ids with id % shards == shard)");
    const size_t row = options_.shards <= 1 ? id : id / options_.shards;
    return vectors_.data() + row * static_cast<size_t>(m_.model.spec.retrieval_dim);
}

uint64_t Bank::current_version(const BankStorage& storage) {
    const std::optional<std::string> cur = storage.read_blob(kCurrentPointer, kMaxPointerBytes);
    if (!cur) return 0;
    return parse_current_pointer(*cur, storage.describe() + ": " + kCurrentPointer);
}

std::shared_ptr<const Bank> Bank::open(std::shared_ptr<BankStorage> storage, const BankOpenOptions& options) {
    if (!storage) throw Error("Bank::open: no storage");
    const std::optional<std::string> cur = storage->read_blob(kCurrentPointer, kMaxPointerBytes);
    if (!cur)
        throw Error(storage->describe() + ": no bank yet (no " + kCurrentPointer + " pointer: nothing has been published; run `mnemo-kb build`)");
    const uint64_t version = parse_current_pointer(*cur, storage->describe() + ": " + kCurrentPointer);
    const std::string name = manifest_name(version);
    const std::string where = storage->describe() + ": " + name;
    const std::optional<std::string> text = storage->read_blob(name, kMaxManifestBytes);
    if (!text) throw Error(where + ": missing (CURRENT names it)");
    BankManifest m = manifest_from_json(*text, where);
    if (m.version != version) throw Error(where + ": says version " + std::to_string(m.version) + ", its name " + std::to_string(version));
    auto bank = std::make_shared<OpenBank>(std::move(storage), std::move(m), options);
    bank->load(where);
    return bank;
}

}  // namespace mnemo::kb
