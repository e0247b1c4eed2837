#include "bank_writer.hpp"

#include "bank_retired.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"

namespace mnemo::kb {
namespace {

using json::Value;

Value num(int64_t x) { return Value::make_number(static_cast<double>(x), true, x); }

std::string codebook_bytes(const VqCodebook& cb) {
    const std::vector<uint8_t> b = cb.to_bytes();
    return std::string(b.begin(), b.end());
}

std::string texts_line(uint32_t id, uint64_t version, const NewBankRecords& r, size_t i) {
    std::vector<Value> toks;
    toks.reserve(r.tokens[i].size());
    for (int32_t t : r.tokens[i]) toks.push_back(num(t));
    const BankDocumentRef& d = *r.documents[i];
    std::vector<std::pair<std::string, Value>> f = {{"id", num(id)},
                                                    {"doc_id", Value::make_string(d.doc_id)},
                                                    {"doc_version", num(static_cast<int64_t>(version))},
                                                    {"title", Value::make_string(d.title)},
                                                    {"source", Value::make_string(d.source)},
                                                    {"text", Value::make_string(r.texts[i])},
                                                    {"tokens", Value::make_array(std::move(toks))}};
    if (!d.metadata_json.empty()) f.emplace_back("metadata", json::parse(d.metadata_json, "metadata of '" + d.doc_id + "'"));
    return Value::make_object(std::move(f)).dump() + "\n";
}

}  // namespace

WrittenVersion write_bank_version(BankStorage& st, const BankVersionSpec& spec, const NewBankRecords& rec) {
    if (!spec.codec) throw Error(st.describe() + ": a bank version needs its codec");
    if (rec.memories.empty()) throw Error(st.describe() + ": no new records to write");
    const size_t n = rec.memories.size();
    if (rec.tokens.size() != n || rec.texts.size() != n || rec.documents.size() != n)
        throw Error(st.describe() + ": records, tokens, texts and documents differ in number");
    if (spec.segment_records == 0) throw Error(st.describe() + ": segment_records must be positive");
    if (!spec.base && !spec.retire.empty()) throw Error(st.describe() + ": records to retire, but no base version");

    // Every stored manifest's blobs are kept, whatever CURRENT names now.
    VersionWriter w(st);
    BankManifest m;
    m.model = spec.model;
    m.key_factory = spec.key_factory;
    m.value_factory = spec.value_factory;
    m.record_bytes = memory_record_bytes(spec.model.spec, spec.codec);
    if (spec.base) {
        // One writer at a time: a version published since the base was read would be lost.
        if (!w.current() || w.current()->version != spec.base->version)
            throw Error(st.describe() + ": version " + std::to_string(w.version() - 1) + " was published while this one was made on version " +
                        std::to_string(spec.base->version) + "; run the command again");
        m.segments = spec.base->segments;
        m.tokenizer = spec.base->tokenizer;
        m.count = spec.base->count;
        if (spec.base->record_bytes != m.record_bytes)
            throw Error(st.describe() + ": the base version's records are " + std::to_string(spec.base->record_bytes) + " bytes, new ones " +
                        std::to_string(m.record_bytes));
        for (uint32_t id : spec.retire)
            if (id >= spec.base->count) throw Error(st.describe() + ": record " + std::to_string(id) + " to retire is not in the base version");
        m.retired = retire_ids(spec.base->retired, spec.retire);
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
        SegmentBuilder b(m.record_bytes, first_new + static_cast<uint32_t>(at), dim);
        for (size_t i = at; i < at + cnt; ++i) {
            const uint32_t id = b.next_id();
            const WrittenMemory& mem = rec.memories[i];
            if (mem.vector.size() != dim)
                throw Error(st.describe() + ": record " + std::to_string(id) + " has a retrieval vector of " + std::to_string(mem.vector.size()) +
                            " values, the model's have " + std::to_string(dim));
            b.add(encode_memory_record(mem.memory, id, spec.model.spec, spec.codec), texts_line(id, w.version(), rec, i), mem.vector.data());
        }
        m.segments.push_back(w.put_segment(seg, b));
        m.count += cnt;
    }
    // The manifest, then the pointer: the version exists only once CURRENT names it.
    return w.publish(std::move(m));
}

}  // namespace mnemo::kb
