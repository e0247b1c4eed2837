// config.json of a Memory+ model (Meta, "Memory Layers at Scale"; facebookresearch/memory, lingua):
// a Llama-style backbone (the HF field names plugins/common reads) plus the memory fields of
// lingua's ProductKeyArgs, under the same names. docs/models/memory_plus.md lists them all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llama_config.hpp"

namespace mnemo::memory_plus {

struct MemoryPlusConfig {
    llama::LlamaConfig base;
    // lingua rotates interleaved pairs (2j, 2j+1) (RoPE as a complex product), unlike HF's halves.
    bool rope_interleaved = true;

    std::vector<int64_t> mem_layers;  // these layers' FFN is replaced by the memory (sorted)
    int64_t n_keys = 0;               // mem_n_keys: sub-keys per side; n_keys² value rows
    int64_t heads = 0;                // mem_heads (official code asserts >= 2)
    int64_t knn = 0;                  // mem_knn: candidates per side and rows read per head
    int64_t k_dim = 0;                // mem_k_dim: query size per head (two halves of k_dim/2)
    int64_t v_dim = 0;                // value row size: mem_v_dim, or hidden_size when it is -1
    bool v_dim_given = false;         // mem_v_dim > 0: value_proj maps v_dim -> hidden
    bool share_values = true;         // mem_share_values: ONE table for every memory layer
    bool swilu = true;                // swilu_projection: value_proj(bag ⊙ silu(W x + b))
    bool gated = false;               // mem_gated: out *= sigmoid(w·x + b)
    bool peer = false;                // peer_variant: PEER experts instead of the value bag
    bool query_bias = true;           // mem_query_bias: bias of query_proj.query_mlps.0

    bool is_memory_layer(int64_t layer) const;
    int64_t first_memory_layer() const { return mem_layers.front(); }
    // value_proj exists (and is applied) in the product-key path.
    bool value_proj() const { return !peer && (v_dim_given || swilu); }
};

// Reads and checks config.json; errors name the field and what was expected.
MemoryPlusConfig read_memory_plus_config(const plugin::Host& host);

std::string describe(const MemoryPlusConfig& c);

}  // namespace mnemo::memory_plus
