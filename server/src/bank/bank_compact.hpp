// `mnemo-kb compact BANK` as a library call: a new version whose segments hold only the live
// records, renumbered 0..live-1 in their old order, with no "retired" list. Segments wholly before
// the first retired id are kept as they are (their ids do not move); every later one is rewritten
// (records re-encoded under their new ids, texts lines and vectors copied). The old version's
// blobs stay: a reader that opened it keeps reading correct bytes until it reloads. A compacted
// version ranks every query exactly as the version it was made from (ids aside), because retired
// records were never in that version's indexes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "bank_storage.hpp"

namespace mnemo::kb {

struct BankCompactOptions {
    std::shared_ptr<BankStorage> storage;
    uint32_t segment_records = 65536;  // records per rewritten segment
    std::function<void(uint64_t done, uint64_t total)> progress;  // records passed over; may be empty
};

struct BankCompactReport {
    uint64_t from_version = 0;
    uint64_t version = 0;            // published; 0 when there was nothing to compact
    uint64_t records_before = 0;     // record ids of the old version, retired included
    uint64_t records_after = 0;      // = its live records
    uint64_t retired_removed = 0;
    uint64_t segments_kept = 0;      // reused as they are
    uint64_t segments_written = 0;
    uint64_t bytes_written = 0;
};

// Throws mnemo::Error naming the storage and the blob or record at fault (a damaged record is
// never copied: every one is checked as it is read); nothing is published then.
BankCompactReport compact_bank(const BankCompactOptions& options);

}  // namespace mnemo::kb
