// Writing the version `build` or `add` publishes: new segments (records, texts, vectors), the
// codebooks and tokenizer files when the storage does not hold them yet, the base version's
// records that the new documents replace marked retired, the manifest, and last the CURRENT
// pointer (bank_version_writer.hpp: a crash anywhere leaves the previous version published).
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
    std::string metadata_json;  // empty: none
};

struct NewBankRecords {
    std::vector<WrittenMemory> memories;          // compressed with `codec`, ids first_id.. in order
    std::vector<std::vector<int32_t>> tokens;     // each reference's token ids
    std::vector<std::string> texts;
    std::vector<const BankDocumentRef*> documents;  // each reference's document
};

struct BankVersionSpec {
    std::optional<BankManifest> base;  // the published version to extend (add), or none (build)
    MemoryFolderModel model;
    const MemoryCodec* codec = nullptr;
    std::string key_factory, value_factory;
    // The model folder's tokenizer files (name, bytes), stored unless `base` has a tokenizer.
    std::vector<std::pair<std::string, std::string>> tokenizer_files;
    uint32_t segment_records = 65536;  // records per new segment file
    // Records of `base` the new version retires (the documents the new ones replace).
    std::vector<uint32_t> retire;
};

// Writes version (published version) + 1 and publishes it. Blobs of that version left by an
// interrupted earlier attempt are removed first (no stored manifest names them). The new
// records' texts lines carry doc_version = the new version.
WrittenVersion write_bank_version(BankStorage& storage, const BankVersionSpec& spec, const NewBankRecords& records);

}  // namespace mnemo::kb
