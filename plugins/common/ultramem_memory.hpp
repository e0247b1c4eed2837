// One UltraMem / UltraMemV2 memory layer: Tucker-decomposed query-key retrieval (TDQKR), the
// shuffled index pipeline and the implicit value expansion with multi-core scoring (IVE + MCS),
// plus UltraMemV2's shared value table windows and pre-value gate. Tensor names mirror the official
// state dict under model.mem_blocks.{l}. / model.full_memory_layer. (docs/models/ultramem*.md).
// Shared by the ultramem plugin and the memory3 plugin (UltraMemV2 layers on a Llama backbone).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "llama_config.hpp"
#include "mnemo/plugin.hpp"
#include "ultramem_fields.hpp"

namespace mnemo::ultramem {

// UltraMemV2's model.full_memory_layer: the value (and pre-value) table every layer windows into.
struct SharedTables {
    mnemo_tid values = -1;      // [A, vdim]
    mnemo_tid pre_values = -1;  // [A, pre_vdim]; -1 without pre-values
};

struct MemoryLayer {
    int64_t index = 0;  // memory-layer number l (offsets, names)
    mnemo_tid query_proj = -1, query_norm = -1;
    mnemo_tid keys = -1, keys_norm = -1;  // keys [2H, Nk, kdim, R] (official [H, 2, Nk, kdim, R])
    mnemo_tid u = -1, v = -1;             // rank-1 buffers tucker_core_u/v [H, R]
    std::vector<mnemo_tid> cores;         // tucker_core.{c} [H, R, R]
    mnemo_tid shuffle = -1;               // shuffle_index, i32 permutation of the virtual values
    mnemo_tid values = -1;                // V1: this layer's values_for_look_up [knum², vdim]
    mnemo_tid pre_values_proj = -1;       // V2: [pre_vdim, D]
    mnemo_tid values_proj = -1;           // [D, values_proj_in]
};

// Declares memory layer l's tensors and checks what shapes alone cannot: shuffle_index is a
// permutation, the rank-1 buffers exist and are not all zero.
// b is the backbone (hidden size, RMSNorm epsilon).
MemoryLayer declare_memory_layer(const plugin::Host& h, const llama::LlamaConfig& b, const MemoryLayersConfig& c,
                                 int64_t l);
SharedTables declare_shared_tables(const plugin::Host& h, const MemoryLayersConfig& c);

// The layer's output [N, D] for x [N, D], the ff_norm output of the block it reads.
plugin::T memory_layer(const plugin::Graph& g, const llama::LlamaConfig& b, const MemoryLayersConfig& c,
                       const MemoryLayer& m, const SharedTables& s, plugin::T x);

// Every memory layer of a model, declared once (the shared tables, then layer 0, 1, ...).
struct MemoryLayers {
    SharedTables shared;
    std::vector<MemoryLayer> layers;
};
MemoryLayers declare_memory_layers(const plugin::Host& h, const llama::LlamaConfig& b, const MemoryLayersConfig& c);

// The memory layers inside one graph's pass over the decoder blocks, by placement a:b: the layer
// reads x = block a's FFN input (its ff_norm output) and its output is added to the residual
// after block b's FFN (olmo/model.py's forward loop, mem_insert_way). A decoder calls, for every
// block i it runs: h += FFN(x); h = pass.after_block(i, x, h).
class MemoryPass {
public:
    // Blocks from `visited_blocks` on are never finished in this graph: memory layers that would
    // add after them are left out (their output would reach nothing).
    MemoryPass(const plugin::Graph& g, const llama::LlamaConfig& b, const MemoryLayersConfig& c,
               const MemoryLayers& m, int64_t visited_blocks);

    // Runs the memory layers that read block i's x, then adds to h every output placed after block i.
    plugin::T after_block(int64_t i, plugin::T x, plugin::T h);

private:
    const plugin::Graph& g_;
    const llama::LlamaConfig& b_;
    const MemoryLayersConfig& c_;
    const MemoryLayers& m_;
    int64_t visited_;
    std::map<int64_t, std::vector<plugin::T>> pending_;  // add block -> outputs to add after it
};

}  // namespace mnemo::ultramem
