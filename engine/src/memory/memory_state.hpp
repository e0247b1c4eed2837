// The engine's side of a model that reads explicit memories (Memory3, shared/papers/004): one
// object that a session holds when its model reads them, and the only way the session reaches
// them. The plugin builds the graphs and declares the states (mnemo_memory_spec in
// plugin_abi.h); this decides what goes into them:
//   memory_layout    the spec, derived from the states and graph outputs the plugin declared
//   memory_writer    writing memories and retrieval vectors with the model (§3.3), the prefix
//   chunk_retrieval  the MemorySource: query vectors, prefetch announcements, answers checked
//   chunk_schedule   which chunk's memories each row reads (§3.1)
//   block_cache      the memory blocks of the states, reused by set, least recently used refilled
//   compressed_decoder  VQ_DECODE of compressed memories into a block, on the device
// Everything it needs from the session comes through MemoryHost.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "memory/block_cache.hpp"
#include "memory/chunk_schedule.hpp"

namespace mnemo::detail {

class MemoryState {
public:
    // Derives and checks the layout, runs the prefix pass and writes every block's prefix.
    MemoryState(const mnemo_memory_spec& declared, int64_t n_layers, int32_t n_seq, MemoryHost& host);

    const MemorySpec& spec() const { return layout_.spec; }
    const MemoryStats& stats() const { return stats_; }

    // Where chunks get their memories; nullptr: none (the prefix alone is read).
    void set_source(std::shared_ptr<MemorySource> source);

    // A prompt appended to `seq` at `start`: every chunk retrieves now. Then, for each run of its
    // rows [begin, end), bind_prompt_run writes the MEMORY_BLOCK input of the rows it takes and
    // returns where the run must end (a run reads at most as many chunks as there are blocks).
    using Prompt = ChunkSchedule::Prompt;
    Prompt begin_prompt(int32_t seq, int64_t start, const std::vector<int32_t>& tokens,
                        const std::vector<int32_t>& segment_starts) {
        return schedule_.begin_prompt(seq, start, tokens, segment_starts);
    }
    size_t bind_prompt_run(const Prompt& prompt, size_t begin, size_t end, std::vector<int32_t>& block_input);
    // A batch of generated rows (checked by the session): the MEMORY_BLOCK input of every row.
    void bind_generated(const std::vector<BatchToken>& batch, std::vector<int32_t>& block_input);

    void reset(int32_t seq) { schedule_.reset(seq); }
    void reset_all() { schedule_.reset_all(); }

    std::vector<WrittenMemory> write(const std::vector<std::vector<int32_t>>& references) { return writer_.write(references); }
    std::vector<std::vector<float>> retrieval_vectors(const std::vector<std::vector<int32_t>>& texts) {
        return writer_.retrieval_vectors(texts);
    }

private:
    MemoryStats stats_;
    MemoryLayout layout_;
    MemoryWriter writer_;
    BlockCache blocks_;
    ChunkRetrieval retrieval_;
    ChunkSchedule schedule_;
};

}  // namespace mnemo::detail
