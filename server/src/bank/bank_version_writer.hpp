// The steps every writer of a bank version shares (build, add, delete, compact): find the
// published version, write the new version's blobs (never over a blob any stored manifest
// names; garbage of an interrupted attempt under the same name goes first), then the manifest,
// then the CURRENT pointer. Until that last step the previous version is the published one, whole,
// so a crash anywhere leaves a servable bank (docs/kb-storage.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "bank_format.hpp"
#include "bank_index_writer.hpp"
#include "bank_storage.hpp"

namespace mnemo::kb {

// The manifest of the version CURRENT names, or nothing when there is no CURRENT.
std::optional<BankManifest> read_current_manifest(const BankStorage& storage);

struct WrittenVersion {
    BankManifest manifest;
    uint64_t bytes_written = 0;  // new blobs, manifest included
    IndexWriteReport index;      // what the index step did (bank_index_writer.hpp)
};

// One new segment being filled in id order: records (each already encoded with its id), their
// texts lines and retrieval vectors.
class SegmentBuilder {
public:
    SegmentBuilder(uint64_t record_bytes, uint32_t first_id, size_t retrieval_dim);
    uint32_t first_id() const { return first_id_; }
    uint32_t count() const { return count_; }
    uint32_t next_id() const { return first_id_ + count_; }
    // `record` must be record_bytes long, `texts_line` one JSON line ending in '\n', `vector`
    // retrieval_dim floats.
    void add(std::string_view record, std::string_view texts_line, const float* vector);

private:
    friend class VersionWriter;
    uint64_t record_bytes_;
    uint32_t first_id_;
    size_t dim_;
    uint32_t count_ = 0;
    std::string records_, texts_, vectors_;
};

class VersionWriter {
public:
    // Takes the bank's writer lock (BankStorage::lock_writer: another writer at work is an error
    // naming it), then reads the published manifest and the blob names of every stored manifest
    // (kept whatever CURRENT names: a reader may still hold an older version). The lock is held
    // until the writer is destroyed.
    explicit VersionWriter(BankStorage& storage);

    const std::optional<BankManifest>& current() const { return current_; }
    uint64_t version() const { return version_; }  // the one being written: published + 1

    // A blob of the new version (see above).
    BlobRef put(const std::string& name, std::string_view bytes);
    // A content-named blob (codebook, tokenizer file): stored once, shared by every version.
    BlobRef put_shared(const std::string& prefix, std::string_view bytes);
    // The three blobs of the new version's n-th new segment.
    SegmentEntry put_segment(size_t n, const SegmentBuilder& segment);
    // The manifest (its version and creation time set here), then CURRENT: the version exists
    // from here on. Checks the manifest by parsing what it writes, so a writer's mistake is an
    // error before publishing, never a bank that does not open.
    WrittenVersion publish(BankManifest manifest);

    uint64_t written() const { return written_; }
    // What publish()'s index step did (bank_index_writer.hpp): for reports and measurements.
    const IndexWriteReport& index_report() const { return index_report_; }

private:
    BankStorage& st_;
    std::unique_ptr<WriterLock> lock_;
    std::optional<std::string> current_pointer_;  // CURRENT's bytes as read: publish() swaps only from them
    std::optional<BankManifest> current_;
    uint64_t version_ = 1;
    std::set<std::string> keep_;
    uint64_t written_ = 0;
    IndexWriteReport index_report_;
};

}  // namespace mnemo::kb
