// The build's checkpoints: each memorized batch as one blob "staging-<key>-batch-<n>", written
// durably before the next batch starts. <key> hashes the model fingerprint, the batch size and
// every reference's tokens, so a re-run over the same corpus finds its batches and a changed
// corpus never reads stale ones. Blob layout: "MNEMOSTG", u32 format 1, u32 count, u32 f32
// record_bytes, u32 retrieval_dim, then per memory its f32 record (memory_record.hpp; id = index
// in the batch) and its retrieval vector, then u32 CRC-32 of everything before it.
//
// A build that trains its codec also checkpoints the trained codec, "staging-<key>-codec-<opts>"
// (<opts> hashes the factories, training iterations, sample size and seed: another codec's
// checkpoint is never read), so a build stopped while encoding resumes without training again.
// Layout: "MNEMOSTC", u32 format 1, u32 n, the key codebook's n canonical bytes
// (mnemo/memory/vq_codebook.hpp), u32 m, the value codebook's m bytes, u32 CRC-32 of all before.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bank_storage.hpp"
#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo::kb {

// `reference(i)` gives reference i's tokens, i < count: the tokens are hashed batch by batch, so no
// copy of the whole corpus is made.
std::string staging_key(const std::string& fingerprint, size_t batch, size_t count,
                        const std::function<const std::vector<int32_t>&(size_t)>& reference);
std::string staging_prefix(const std::string& key);  // "staging-<key>-"
std::string staging_blob(const std::string& key, size_t batch_index);

std::string encode_staged_batch(const std::vector<WrittenMemory>& memories, const MemorySpec& spec);
// Nothing when the blob is damaged or not of this spec (the batch is then memorized again).
std::optional<std::vector<WrittenMemory>> decode_staged_batch(const std::string& bytes, const MemorySpec& spec, size_t expected_count);

// The codec checkpoint's blob name for these codec options (factories as resolved, never empty).
std::string staging_codec_blob(const std::string& key, const std::string& key_factory, const std::string& value_factory,
                               int opq_iterations, int kmeans_iterations, size_t sample, uint64_t seed);
std::string encode_staged_codec(const MemoryCodec& codec);
// Nothing when the blob is damaged (the codec is then trained again).
std::optional<MemoryCodec> decode_staged_codec(const std::string& bytes);

// Removes every staging blob (of any key): a finished build leaves none.
void remove_staging(BankStorage& storage);

}  // namespace mnemo::kb
