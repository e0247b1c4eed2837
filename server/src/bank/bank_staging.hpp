// The build's checkpoints: each memorized batch as one blob "staging-<key>-batch-<n>", written
// durably before the next batch starts. <key> hashes the model fingerprint, the batch size and
// every reference's tokens, so a re-run over the same corpus finds its batches and a changed
// corpus never reads stale ones. Blob layout: "MNEMOSTG", u32 format 1, u32 count, u32 f32
// record_bytes, u32 retrieval_dim, then per memory its f32 record (memory_record.hpp; id = index
// in the batch) and its retrieval vector, then u32 CRC-32 of everything before it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bank_storage.hpp"
#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo::kb {

std::string staging_key(const std::string& fingerprint, size_t batch, const std::vector<std::vector<int32_t>>& references);
std::string staging_prefix(const std::string& key);  // "staging-<key>-"
std::string staging_blob(const std::string& key, size_t batch_index);

std::string encode_staged_batch(const std::vector<WrittenMemory>& memories, const MemorySpec& spec);
// Nothing when the blob is damaged or not of this spec (the batch is then memorized again).
std::optional<std::vector<WrittenMemory>> decode_staged_batch(const std::string& bytes, const MemorySpec& spec, size_t expected_count);

// Removes every staging blob (of any key): a finished build leaves none.
void remove_staging(BankStorage& storage);

}  // namespace mnemo::kb
