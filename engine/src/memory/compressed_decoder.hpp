// Compressed memories decoded on the device (VQ_DECODE): the source's codebooks uploaded once,
// a buffer of codes per key/value ([blocks][L_mem][Hkv][M][words] i32, M = the block's memory
// slots per head) and, per block, a prepared list of VQ_DECODE nodes (prepared on first use)
// that writes the block's memory slots of every explicit-memory layer and head in place. With an
// f16 or q8_0 memory state, VQ_DECODE writes f32 rows into a scratch buffer and one KV_STORE per
// (key/value, layer) rounds them into the state, so the backend converts on the device too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/memory_host.hpp"
#include "memory/memory_layout.hpp"
#include "memory/memory_set.hpp"

namespace mnemo::detail {

class CompressedDecoder {
public:
    // Throws when the codebooks do not decode this model's head dims or the backend cannot run
    // the nodes; what was uploaded by then is released.
    CompressedDecoder(const MemoryLayout& layout, MemoryHost& host, const MemoryCodec& codec);
    ~CompressedDecoder();
    CompressedDecoder(const CompressedDecoder&) = delete;
    CompressedDecoder& operator=(const CompressedDecoder&) = delete;

    // The same codebooks (by SHA-256): a source attached again keeps this decoder.
    bool decodes(const MemoryCodec& codec) const {
        return codec.keys.sha256 == key_sha_ && codec.values.sha256 == value_sha_;
    }
    // Fill the memory slots of block `block` from the codes of `set`, packed like the f32 path
    // packs keys: per (layer, head) the valid slots of each memory in retrieval order.
    void decode(int32_t block, const MemorySet& set, MemoryStats& stats);

private:
    void release();

    const MemoryLayout& layout_;
    MemoryHost& host_;
    std::vector<void*> buffers_;  // every device buffer below, for release
    void* key_codes_ = nullptr;
    void* value_codes_ = nullptr;
    uint32_t key_words_ = 0, value_words_ = 0;
    std::vector<mnemo_node> templates_;  // per (K/V, layer, head) for block 0 [, then per (K/V, layer) KV_STORE]
    size_t n_decode_ = 0;                // how many of templates_ are VQ_DECODE
    void* store_seq_ = nullptr;          // KV_STORE sequence ids, [blocks][Hkv * M] i32 (non-f32 states)
    std::vector<void*> block_graphs_;    // per block, prepared lazily
    std::string key_sha_, value_sha_;    // the codebooks uploaded
};

}  // namespace mnemo::detail
