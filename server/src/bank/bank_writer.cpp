#include "bank_writer.hpp"

#include <cstring>
#include <set>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "sha256_hex.hpp"

namespace mnemo::kb {
namespace {

using json::Value;

Value num(int64_t x) { return Value::make_number(static_cast<double>(x), true, x); }

std::string versioned(const char* kind, uint64_t version, size_t n, const char* ext) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s-%06llu-%04zu.%s", kind, static_cast<unsigned long long>(version), n, ext);
    return buf;
}

// Names every published manifest (any version CURRENT ever named that is still stored) uses, so
// that clearing garbage never touches them.
std::set<std::string> published_names(const BankStorage& st, const std::optional<BankManifest>& base) {
    std::set<std::string> names;
    if (!base) return names;
    for (uint64_t v = 1; v <= base->version; ++v) {
        std::optional<std::string> text;
        try {
            text = st.read_blob(manifest_name(v), kMaxManifestBytes);
        } catch (const Error&) {
            // Not a readable manifest (a FIFO, a huge file): its name stays reserved, as below.
            names.insert(manifest_name(v));
            continue;
        }
        if (!text) continue;
        names.insert(manifest_name(v));
        try {
            const BankManifest m = manifest_from_json(*text, st.describe() + ": " + manifest_name(v));
            names.insert({m.keys_codebook.file, m.values_codebook.file});
            for (const SegmentEntry& s : m.segments) names.insert({s.records.file, s.texts.file, s.vectors.file});
            for (const TokenizerFile& t : m.tokenizer) names.insert(t.blob.file);
        } catch (const Error&) {
            // An unreadable old manifest: keep it, and everything else is checked by name below.
        }
    }
    return names;
}

class VersionWriter {
public:
    VersionWriter(BankStorage& st, std::set<std::string> keep) : st_(st), keep_(std::move(keep)) {}

    // A blob of the new version; garbage of an interrupted attempt under the same name goes first.
    BlobRef put(const std::string& name, const std::string& bytes) {
        if (st_.exists(name)) {
            if (keep_.count(name)) throw Error(st_.describe() + ": '" + name + "' belongs to a published version; not replacing it");
            st_.remove_blob(name);
        }
        st_.write_blob(name, bytes);
        written_ += bytes.size();
        return {name, sha256_hex(bytes), bytes.size()};
    }

    // A content-named blob (codebook, tokenizer file): stored once, shared by every version.
    BlobRef put_shared(const std::string& prefix, const std::string& bytes) {
        const std::string sha = sha256_hex(bytes);
        const std::string name = prefix + sha.substr(0, 16);
        if (st_.exists(name)) {
            const std::optional<std::string> old = st_.read_blob(name);
            if (old && sha256_hex(*old) == sha) return {name, sha, bytes.size()};
            if (keep_.count(name))
                throw Error(st_.describe() + ": '" + name + "' is damaged (its SHA-256 is not the one in its name)");
            st_.remove_blob(name);
        }
        st_.write_blob(name, bytes);
        written_ += bytes.size();
        return {name, sha, bytes.size()};
    }

    uint64_t written() const { return written_; }

private:
    BankStorage& st_;
    std::set<std::string> keep_;
    uint64_t written_ = 0;
};

std::string codebook_bytes(const VqCodebook& cb) {
    const std::vector<uint8_t> b = cb.to_bytes();
    return std::string(b.begin(), b.end());
}

std::string texts_line(uint32_t id, const NewBankRecords& r, size_t i) {
    std::vector<Value> toks;
    toks.reserve(r.tokens[i].size());
    for (int32_t t : r.tokens[i]) toks.push_back(num(t));
    const BankDocumentRef& d = *r.documents[i];
    std::vector<std::pair<std::string, Value>> f = {{"id", num(id)},
                                                    {"doc_id", Value::make_string(d.doc_id)},
                                                    {"title", Value::make_string(d.title)},
                                                    {"source", Value::make_string(d.source)},
                                                    {"text", Value::make_string(r.texts[i])},
                                                    {"tokens", Value::make_array(std::move(toks))}};
    if (!d.metadata_json.empty()) f.emplace_back("metadata", json::parse(d.metadata_json, "metadata of '" + d.doc_id + "'"));
    return Value::make_object(std::move(f)).dump() + "\n";
}

}  // namespace

std::optional<BankManifest> read_current_manifest(const BankStorage& storage) {
    const std::optional<std::string> cur = storage.read_blob(kCurrentPointer, kMaxPointerBytes);
    if (!cur) return std::nullopt;
    const uint64_t v = parse_current_pointer(*cur, storage.describe() + ": " + kCurrentPointer);
    const std::string where = storage.describe() + ": " + manifest_name(v);
    const std::optional<std::string> text = storage.read_blob(manifest_name(v), kMaxManifestBytes);
    if (!text) throw Error(where + ": missing (CURRENT names it)");
    return manifest_from_json(*text, where);
}

WrittenVersion write_bank_version(BankStorage& st, const BankVersionSpec& spec, const NewBankRecords& rec) {
    if (!spec.codec) throw Error(st.describe() + ": a bank version needs its codec");
    if (rec.memories.empty()) throw Error(st.describe() + ": no new records to write");
    const size_t n = rec.memories.size();
    if (rec.tokens.size() != n || rec.texts.size() != n || rec.documents.size() != n)
        throw Error(st.describe() + ": records, tokens, texts and documents differ in number");
    if (spec.segment_records == 0) throw Error(st.describe() + ": segment_records must be positive");

    // Every published manifest's blobs are kept, whatever CURRENT names now.
    const std::optional<BankManifest> current = read_current_manifest(st);
    VersionWriter w(st, published_names(st, current));
    BankManifest m;
    m.version = (current ? current->version : 0) + 1;
    m.created = utc_now();
    m.model = spec.model;
    m.key_factory = spec.key_factory;
    m.value_factory = spec.value_factory;
    m.record_bytes = memory_record_bytes(spec.model.spec, spec.codec);
    if (spec.base) {
        m.segments = spec.base->segments;
        m.tokenizer = spec.base->tokenizer;
        m.count = spec.base->count;
        if (spec.base->record_bytes != m.record_bytes)
            throw Error(st.describe() + ": the base version's records are " + std::to_string(spec.base->record_bytes) + " bytes, new ones " +
                        std::to_string(m.record_bytes));
    }
    if (m.count + n > 0xffffffffull) throw Error(st.describe() + ": more than 2^32 - 1 records");
    m.keys_codebook = w.put_shared("codec-keys-", codebook_bytes(spec.codec->keys));
    m.values_codebook = w.put_shared("codec-values-", codebook_bytes(spec.codec->values));
    if (m.keys_codebook.sha256 != spec.codec->keys.sha256 || m.values_codebook.sha256 != spec.codec->values.sha256)
        throw Error(st.describe() + ": the codec's canonical bytes do not hash to its own SHA-256");
    if (m.tokenizer.empty())
        for (const auto& [name, bytes] : spec.tokenizer_files) m.tokenizer.push_back({name, w.put_shared("tokenizer-" + name + "-", bytes)});

    const auto dim = static_cast<size_t>(spec.model.spec.retrieval_dim);
    const auto first_new = static_cast<uint32_t>(m.count);
    for (size_t at = 0, seg = 0; at < n; at += spec.segment_records, ++seg) {
        const size_t cnt = std::min<size_t>(spec.segment_records, n - at);
        SegmentEntry e;
        e.first_id = first_new + static_cast<uint32_t>(at);
        e.count = static_cast<uint32_t>(cnt);
        std::string records = segment_header(m.record_bytes, e.first_id, e.count), texts, vectors;
        records.reserve(kSegmentHeaderBytes + cnt * m.record_bytes);
        vectors.reserve(cnt * dim * 4);
        for (size_t i = at; i < at + cnt; ++i) {
            const auto id = static_cast<uint32_t>(first_new + i);
            const WrittenMemory& mem = rec.memories[i];
            if (mem.vector.size() != dim)
                throw Error(st.describe() + ": record " + std::to_string(id) + " has a retrieval vector of " + std::to_string(mem.vector.size()) +
                            " values, the model's have " + std::to_string(dim));
            records += encode_memory_record(mem.memory, id, spec.model.spec, spec.codec);
            texts += texts_line(id, rec, i);
            vectors.append(reinterpret_cast<const char*>(mem.vector.data()), dim * 4);  // little-endian hosts
        }
        e.records = w.put(versioned("seg", m.version, seg, "rec"), records);
        e.texts = w.put(versioned("texts", m.version, seg, "jsonl"), texts);
        e.vectors = w.put(versioned("vectors", m.version, seg, "f32"), vectors);
        m.count += cnt;
        m.segments.push_back(std::move(e));
    }
    // The manifest, then the pointer: the version exists only once CURRENT names it.
    w.put(manifest_name(m.version), manifest_to_json(m));
    st.publish_pointer(kCurrentPointer, current_pointer_content(m.version));
    return {std::move(m), w.written()};
}

}  // namespace mnemo::kb
