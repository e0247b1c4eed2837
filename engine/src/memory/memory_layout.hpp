// Where a model keeps its explicit memories. The plugin reports only the schedule
// (mnemo_memory_spec: chunk length, references per chunk, tokens per head, the prefix ids, ...);
// everything with a shape is read from what it declared anyway — the explicit-memory layers,
// blocks, kv heads and head dims from the states "memory.k.<l>", "memory.v.<l>" and "memory.len",
// retrieval_dim from the graph output "hidden" — and checked against the contract in
// plugin_abi.h, so a plugin cannot say one size in its description and declare another.
#pragma once

#include <cstdint>
#include <vector>

#include "memory/memory_host.hpp"
#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo::detail {

struct MemoryLayout {
    MemorySpec spec;
    struct Layer {
        int32_t k = -1, v = -1;      // state ids of memory.k.<l>, memory.v.<l>
        int64_t blocks = 0, slots = 0;
        int32_t memory_index = -1;   // position in spec.memory_layers, -1 for other layers
    };
    std::vector<Layer> layers;  // every layer of the model
    int32_t len_state = -1;     // memory.len
    // dtype of every memory.k/v state (the context's KV cache type: f32, f16 or q8_0); memories
    // are computed in f32 and rounded into it as they are written (memory_rows.hpp).
    DType dtype = DType::F32;

    int64_t prefix() const { return static_cast<int64_t>(spec.prefix_ids.size()); }
    // Slots per head a block offers the memories of a chunk, after the prefix.
    int64_t memory_slots() const { return static_cast<int64_t>(spec.references_per_chunk) * spec.tokens_per_head; }
};

// Throws Error naming the plugin, the field, state or output, and what the contract needs.
MemoryLayout derive_memory_layout(const mnemo_memory_spec& declared, int64_t n_layers, MemoryHost& host);

}  // namespace mnemo::detail
