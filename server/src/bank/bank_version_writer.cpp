#include "bank_version_writer.hpp"

#include "bank_index_writer.hpp"

#include <unistd.h>

#include <cstdio>

#include "mnemo/error.hpp"
#include "sha256_hex.hpp"

namespace mnemo::kb {
namespace {

// Names every stored manifest (any version CURRENT ever named that is still stored) uses, so
// that clearing garbage never touches them.
std::set<std::string> published_names(const BankStorage& st, const std::optional<BankManifest>& current) {
    std::set<std::string> names;
    if (!current) return names;
    for (uint64_t v = 1; v <= current->version; ++v) {
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
            for (const NamedBlob& b : manifest_blobs(m)) names.insert(b.blob.file);
        } catch (const Error&) {
            // An unreadable old manifest: keep it, and everything else is checked by name below.
        }
    }
    return names;
}

// "mnemo-kb on HOST, pid N": who holds a bank's writer lock, for the writer that finds it taken.
std::string writer_identity() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "an unknown host");
    return "mnemo-kb on " + std::string(host) + ", pid " + std::to_string(::getpid());
}

std::optional<BankManifest> manifest_of_pointer(const BankStorage& storage, const std::optional<std::string>& cur) {
    if (!cur) return std::nullopt;
    const uint64_t v = parse_current_pointer(*cur, storage.describe() + ": " + kCurrentPointer);
    const std::string where = storage.describe() + ": " + manifest_name(v);
    const std::optional<std::string> text = storage.read_blob(manifest_name(v), kMaxManifestBytes);
    if (!text) throw Error(where + ": missing (CURRENT names it)");
    return manifest_from_json(*text, where);
}

}  // namespace

std::optional<BankManifest> read_current_manifest(const BankStorage& storage) {
    return manifest_of_pointer(storage, storage.read_blob(kCurrentPointer, kMaxPointerBytes));
}

SegmentBuilder::SegmentBuilder(uint64_t record_bytes, uint32_t first_id, size_t retrieval_dim)
    : record_bytes_(record_bytes), first_id_(first_id), dim_(retrieval_dim) {}

void SegmentBuilder::add(std::string_view record, std::string_view texts_line, const float* vector) {
    if (record.size() != record_bytes_)
        throw Error("segment: record " + std::to_string(next_id()) + " is " + std::to_string(record.size()) + " bytes, expected " +
                    std::to_string(record_bytes_));
    if (texts_line.empty() || texts_line.back() != '\n') throw Error("segment: record " + std::to_string(next_id()) + ": texts line without its newline");
    records_.append(record);
    texts_.append(texts_line);
    vectors_.append(reinterpret_cast<const char*>(vector), dim_ * sizeof(float));  // little-endian hosts
    ++count_;
}

VersionWriter::VersionWriter(BankStorage& storage)
    : st_(storage),
      lock_(storage.lock_writer(writer_identity())),
      current_pointer_(storage.read_blob(kCurrentPointer, kMaxPointerBytes)),
      current_(manifest_of_pointer(storage, current_pointer_)) {
    version_ = (current_ ? current_->version : 0) + 1;
    keep_ = published_names(st_, current_);
}

BlobRef VersionWriter::put(const std::string& name, std::string_view bytes) {
    lock_->renew();
    if (st_.exists(name)) {
        if (keep_.count(name)) throw Error(st_.describe() + ": '" + name + "' belongs to a published version; not replacing it");
        st_.remove_blob(name);  // garbage of an interrupted attempt at this version
    }
    st_.write_blob(name, bytes);
    written_ += bytes.size();
    return {name, sha256_hex(bytes), bytes.size()};
}

BlobRef VersionWriter::put_shared(const std::string& prefix, std::string_view bytes) {
    lock_->renew();
    const std::string sha = sha256_hex(bytes);
    const std::string name = prefix + sha.substr(0, 16);
    if (st_.exists(name)) {
        const std::optional<std::string> old = st_.read_blob(name);
        if (old && sha256_hex(*old) == sha) return {name, sha, bytes.size()};
        if (keep_.count(name)) throw Error(st_.describe() + ": '" + name + "' is damaged (its SHA-256 is not the one in its name)");
        st_.remove_blob(name);
    }
    st_.write_blob(name, bytes);
    written_ += bytes.size();
    return {name, sha, bytes.size()};
}

SegmentEntry VersionWriter::put_segment(size_t n, const SegmentBuilder& seg) {
    if (seg.count_ == 0) throw Error(st_.describe() + ": an empty segment is not written");
    SegmentEntry e;
    e.first_id = seg.first_id_;
    e.count = seg.count_;
    e.records = put(segment_blob_name("seg", version_, n, "rec"), segment_header(seg.record_bytes_, e.first_id, e.count) + seg.records_);
    e.texts = put(segment_blob_name("texts", version_, n, "jsonl"), seg.texts_);
    e.vectors = put(segment_blob_name("vectors", version_, n, "f32"), seg.vectors_);
    return e;
}

WrittenVersion VersionWriter::publish(BankManifest m) {
    m.version = version_;
    m.created = utc_now();
    // The version's retrieval indexes, stored before its manifest names them (bank_index_writer.hpp).
    m.index = write_version_indexes(*this, st_, version_, current_, m, &index_report_);
    const std::string json = manifest_to_json(m);
    manifest_from_json(json, st_.describe() + ": the new " + manifest_name(version_));  // what a reader will check
    put(manifest_name(version_), json);
    lock_->renew();
    st_.publish_pointer(kCurrentPointer, current_pointer_content(version_), current_pointer_);
    return {std::move(m), written_, index_report_};
}

}  // namespace mnemo::kb
