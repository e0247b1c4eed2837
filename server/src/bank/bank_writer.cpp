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

std::string texts_line(uint32_t id, uint64_t version, const std::vector<int32_t>& tokens, const std::string& text,
                       const BankDocumentRef& d) {
    std::vector<std::pair<std::string, Value>> f = {{"id", num(id)},
                                                    {"doc_id", Value::make_string(d.doc_id)},
                                                    {"doc_version", num(static_cast<int64_t>(version))},
                                                    {"title", Value::make_string(d.title)},
                                                    {"source", Value::make_string(d.source)},
                                                    {"text", Value::make_string(text)},
                                                    {"tokens", Value::make_int_array(tokens)}};
    if (!d.title_tokens.empty()) f.emplace_back("title_tokens", Value::make_int_array(d.title_tokens));
    if (!d.metadata_json.empty()) f.emplace_back("metadata", json::parse(d.metadata_json, "metadata of '" + d.doc_id + "'"));
    return Value::make_object(std::move(f)).dump() + "\n";
}

}  // namespace

BankVersionStream::BankVersionStream(BankStorage& st, BankVersionSpec spec) : st_(st), spec_(std::move(spec)), writer_(st) {
    if (!spec_.codec) throw Error(st.describe() + ": a bank version needs its codec");
    if (spec_.segment_records == 0) throw Error(st.describe() + ": segment_records must be positive");
    if (!spec_.base && !spec_.retire.empty()) throw Error(st.describe() + ": records to retire, but no base version");

    // Every stored manifest's blobs are kept, whatever CURRENT names now.
    BankManifest& m = manifest_;
    m.model = spec_.model;
    m.key_factory = spec_.key_factory;
    m.value_factory = spec_.value_factory;
    m.record_bytes = memory_record_bytes(spec_.model.spec, spec_.codec);
    if (spec_.base) {
        // One writer at a time: a version published since the base was read would be lost.
        if (!writer_.current() || writer_.current()->version != spec_.base->version)
            throw Error(st.describe() + ": version " + std::to_string(writer_.version() - 1) + " was published while this one was made on version " +
                        std::to_string(spec_.base->version) + "; run the command again");
        m.segments = spec_.base->segments;
        m.tokenizer = spec_.base->tokenizer;
        m.codec_fit = spec_.base->codec_fit;
        m.count = spec_.base->count;
        if (spec_.base->record_bytes != m.record_bytes)
            throw Error(st.describe() + ": the base version's records are " + std::to_string(spec_.base->record_bytes) + " bytes, new ones " +
                        std::to_string(m.record_bytes));
        for (uint32_t id : spec_.retire)
            if (id >= spec_.base->count) throw Error(st.describe() + ": record " + std::to_string(id) + " to retire is not in the base version");
        m.retired = retire_ids(spec_.base->retired, spec_.retire);
    }
    first_new_ = m.count;
    m.keys_codebook = writer_.put_shared("codec-keys-", codebook_bytes(spec_.codec->keys));
    m.values_codebook = writer_.put_shared("codec-values-", codebook_bytes(spec_.codec->values));
    if (m.keys_codebook.sha256 != spec_.codec->keys.sha256 || m.values_codebook.sha256 != spec_.codec->values.sha256)
        throw Error(st.describe() + ": the codec's canonical bytes do not hash to its own SHA-256");
    if (m.tokenizer.empty())
        for (const auto& [name, bytes] : spec_.tokenizer_files) m.tokenizer.push_back({name, writer_.put_shared("tokenizer-" + name + "-", bytes)});
}

void BankVersionStream::add(const WrittenMemory& mem, const std::vector<int32_t>& tokens, const std::string& text, const BankDocumentRef& doc) {
    BankManifest& m = manifest_;
    const auto dim = static_cast<size_t>(spec_.model.spec.retrieval_dim);
    if (first_new_ + added_ + 1 > 0xffffffffull) throw Error(st_.describe() + ": more than 2^32 - 1 records");
    if (!segment_) segment_.emplace(m.record_bytes, static_cast<uint32_t>(first_new_ + added_), dim);
    const uint32_t id = segment_->next_id();
    if (mem.vector.size() != dim)
        throw Error(st_.describe() + ": record " + std::to_string(id) + " has a retrieval vector of " + std::to_string(mem.vector.size()) +
                    " values, the model's have " + std::to_string(dim));
    segment_->add(encode_memory_record(mem.memory, id, spec_.model.spec, spec_.codec), texts_line(id, writer_.version(), tokens, text, doc),
                  mem.vector.data());
    ++added_;
    if (segment_->count() >= spec_.segment_records) flush_segment();
}

void BankVersionStream::flush_segment() {
    if (!segment_ || segment_->count() == 0) return;
    SegmentEntry e = writer_.put_segment(segment_index_++, *segment_);
    for (const BlobRef* b : {&e.records, &e.texts, &e.vectors}) segment_blobs_.push_back(b->file);
    manifest_.count += segment_->count();
    manifest_.segments.push_back(std::move(e));
    segment_.reset();  // its buffers freed now, not when the next segment starts
}

WrittenVersion BankVersionStream::publish() {
    if (added_ == 0) throw Error(st_.describe() + ": no new records to write");
    flush_segment();
    // The manifest, then the pointer: the version exists only once CURRENT names it.
    return writer_.publish(std::move(manifest_));
}

}  // namespace mnemo::kb
