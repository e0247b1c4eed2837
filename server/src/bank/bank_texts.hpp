// A segment's texts blob (JSONL, one reference per line, ids in order): what Bank::open reads
// for every segment and what the index writer reads for a version's new segments (their tokens).
#pragma once

#include <cstdint>
#include <vector>

#include "bank.hpp"
#include "bank_format.hpp"
#include "bank_storage.hpp"

namespace mnemo::kb {

// Appends segment `s`'s references (ids s.first_id.. in order) to `out`, the blob's size and
// SHA-256 checked first. `manifest_version`: the version being read (no doc_version above it).
// mnemo::Error names the storage, the blob, the line and the field.
void read_segment_references(const BankStorage& storage, const SegmentEntry& s, uint64_t manifest_version, std::vector<BankReference>& out);

}  // namespace mnemo::kb
