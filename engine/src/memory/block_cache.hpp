// The memory blocks of the explicit-memory layers' states, used as a cache: each block holds the
// prefix (reference BOS) keys/values and the memories of one set; a run binds one block per distinct
// set it reads, reusing a block that holds the same memories and otherwise refilling the least
// recently used one — from f32 keys/values on the host, or from codes decoded on the device.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "memory/compressed_decoder.hpp"
#include "memory/memory_writer.hpp"

namespace mnemo::detail {

class BlockCache {
public:
    // Writes every block of every layer's state: the prefix, memory.len = n_prefix.
    BlockCache(const MemoryLayout& layout, MemoryHost& host, MemoryStats& stats, MemoryWriter::Prefix prefix);

    size_t blocks() const { return block_set_.size(); }
    // An empty set: the prefix alone.
    const std::shared_ptr<const MemorySet>& empty() const { return empty_; }

    // Blocks for the distinct sets of one run (at most blocks()); row r reads sets[row_set[r]],
    // and block_of_row[r] gets that set's block (the MEMORY_BLOCK graph input).
    void bind(const std::vector<std::shared_ptr<const MemorySet>>& sets, const std::vector<int32_t>& row_set,
              std::vector<int32_t>& block_of_row);
    // Forget what the blocks hold (a new source may reuse the old one's memory ids).
    void forget();
    // The codec of the source's compressed memories: a decoder for it, unless the current one
    // decodes the same codebooks. nullptr keeps the current one for a later source.
    void set_codec(const MemoryCodec* codec);

private:
    void upload(int32_t block, const MemorySet& set);

    const MemoryLayout& layout_;
    MemoryHost& host_;
    MemoryStats& stats_;
    MemoryWriter::Prefix prefix_;
    std::shared_ptr<const MemorySet> empty_ = std::make_shared<MemorySet>();
    std::vector<std::shared_ptr<const MemorySet>> block_set_;  // resident set of each block
    std::vector<uint64_t> block_stamp_;                        // last use, for eviction
    uint64_t clock_ = 0;
    std::unique_ptr<CompressedDecoder> decoder_;
    // Scratch of one bind, kept so that a decode step allocates nothing.
    std::vector<int32_t> block_of_;  // per set
    std::vector<char> taken_;        // per block
};

}  // namespace mnemo::detail
