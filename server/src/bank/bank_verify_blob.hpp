// One blob of a bank read end to end in bounded chunks, as `mnemo-kb verify` does it
// (bank_verify.hpp): its size and SHA-256 against the manifest's, and for a segment its header and
// every record (magic, id, CRC-32, shape) as the bytes go by. Memory stays at two chunks (one
// being checked, the next being read) plus one record whatever the blob's size, so a segment of
// any length is checked without holding it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bank_format.hpp"
#include "bank_storage.hpp"

namespace mnemo::kb {

// What a segment's records must be, for the record checks; absent for any other blob.
struct SegmentLayout {
    SegmentEntry entry;
    uint64_t record_bytes = 0;
    MemorySpec spec;
    // The version's codec; nullptr when its codebooks could not be used (damaged): records are then
    // checked by their header and CRC-32 alone (what the codec adds is their expected size).
    std::shared_ptr<const MemoryCodec> codec;
};

struct BlobCheck {
    BlobRef blob;                     // what the manifest says
    std::vector<std::string> problems;  // empty: the blob is as the manifest says
    uint64_t bytes_read = 0;
    // Segments only.
    uint64_t records_checked = 0;
    std::vector<IdRange> bad_ranges;       // every bad record id, as sorted ranges (a truncated segment is one)
    std::map<uint32_t, std::string> first_bad;  // the first few bad records' ids and why
    uint64_t bad_records() const;
};

// Reads `blob` from `storage` in chunks of `chunk_bytes` (>= 1). With a layout, also checks the
// segment header and each of its records, listing at most `max_listed` bad records with their
// reason. Never throws for the blob's content or a failed read: every finding is a problem.
BlobCheck check_blob(const BankStorage& storage, const BlobRef& blob, const SegmentLayout* layout, size_t chunk_bytes,
                     size_t max_listed);

}  // namespace mnemo::kb
