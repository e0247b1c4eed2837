// `mnemo-kb delete BANK ID...` as a library call: a new version in which the named documents'
// records are retired (listed in the manifest's "retired"; their segments are untouched until
// `compact`). Atomic like every publish (bank_version_writer.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bank_storage.hpp"

namespace mnemo::kb {

struct BankDeleteReport {
    uint64_t version = 0;          // published
    uint64_t documents = 0;        // deleted
    uint64_t retired_records = 0;  // their records
    uint64_t live_records = 0;     // served by the new version
    uint64_t retired_total = 0;    // retired records of the new version (before `compact`)
    uint64_t bytes_written = 0;
};

// doc_ids: as `build`/`add` named them (a corpus file's path relative to its folder, a JSONL
// id); repeats count once. Throws mnemo::Error naming every id that is not a live document of
// the published version, before anything is written.
BankDeleteReport delete_documents(const std::shared_ptr<BankStorage>& storage, const std::vector<std::string>& doc_ids);

}  // namespace mnemo::kb
