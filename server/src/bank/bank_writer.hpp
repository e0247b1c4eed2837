// Writing the version `build` or `add` publishes, in a stream: the codebooks and tokenizer files
// when the storage does not hold them yet, then the new records one at a time, each segment
// (records, texts, vectors) written as soon as it is full, so a build holds one segment in RAM
// whatever the corpus's size; the base version's records that the new documents replace marked
// retired; last the manifest and the CURRENT pointer (bank_version_writer.hpp: a crash anywhere
// leaves the previous version published).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bank_format.hpp"
#include "bank_storage.hpp"
#include "bank_version_writer.hpp"
#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo::kb {

struct BankDocumentRef {
    std::string doc_id, title, source;
    std::string metadata_json;              // empty: none
    std::vector<int32_t> title_tokens = {};  // the title tokenized (BM25 counts it with each reference)
};

struct BankVersionSpec {
    std::optional<BankManifest> base;  // the published version to extend (add), or none (build)
    MemoryFolderModel model;
    const MemoryCodec* codec = nullptr;  // must outlive the stream
    std::string key_factory, value_factory;
    // The model folder's tokenizer files (name, bytes), stored unless `base` has a tokenizer.
    std::vector<std::pair<std::string, std::string>> tokenizer_files;
    uint32_t segment_records = 65536;  // records per new segment file
    // Records of `base` the new version retires (the documents the new ones replace).
    std::vector<uint32_t> retire;
};

// Writes version (published version) + 1, record by record, and publishes it. Blobs of that
// version left by an interrupted earlier attempt are removed as their names come up (no stored
// manifest names them). The new records' texts lines carry doc_version = the new version.
class BankVersionStream {
public:
    // Checks the spec against the published version (add: it must still be `base`), writes the
    // codebooks and tokenizer files.
    BankVersionStream(BankStorage& storage, BankVersionSpec spec);

    // The next new record (id: the base's count + records added so far): `memory` compressed with
    // the spec's codec and holding its retrieval vector, its reference's tokens and text, its
    // document. Writes the segment when it holds segment_records records.
    void add(const WrittenMemory& memory, const std::vector<int32_t>& tokens, const std::string& text, const BankDocumentRef& doc);

    uint64_t added() const { return added_; }
    uint64_t version() const { return writer_.version(); }
    // The segment blobs written so far: what a cancelled build removes again (a killed one leaves
    // them to the next attempt at this version, which replaces them).
    const std::vector<std::string>& segment_blobs() const { return segment_blobs_; }

    // The codec's fit the manifest records (bank_format.hpp): a build sets what its codec trained
    // on; by default it is the base version's (add), or none.
    void set_codec_fit(const std::optional<CodecFitFigures>& fit) { manifest_.codec_fit = fit; }

    // The last segment, the manifest, then CURRENT. Throws when nothing was added.
    WrittenVersion publish();

private:
    void flush_segment();

    BankStorage& st_;
    BankVersionSpec spec_;
    VersionWriter writer_;
    BankManifest manifest_;
    std::optional<SegmentBuilder> segment_;
    size_t segment_index_ = 0;
    uint64_t first_new_ = 0;  // the base's count: the first new record's id
    uint64_t added_ = 0;
    std::vector<std::string> segment_blobs_;
};

}  // namespace mnemo::kb
