// One UltraMem / UltraMemV2 memory layer: Tucker-decomposed query-key retrieval (TDQKR), the
// shuffled index pipeline and the implicit value expansion with multi-core scoring (IVE + MCS),
// plus UltraMemV2's shared value table windows and pre-value gate. Tensor names mirror the official
// state dict under model.mem_blocks.{l}. / model.full_memory_layer. (docs/models/ultramem*.md).
#pragma once

#include <string>
#include <vector>

#include "mnemo/plugin.hpp"
#include "ultramem_config.hpp"

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
MemoryLayer declare_memory_layer(const plugin::Host& h, const UltraMemConfig& c, int64_t l);
SharedTables declare_shared_tables(const plugin::Host& h, const UltraMemConfig& c);

// The layer's output [N, D] for x [N, D], the ff_norm output of the block it reads.
plugin::T memory_layer(const plugin::Graph& g, const UltraMemConfig& c, const MemoryLayer& m, const SharedTables& s,
                       plugin::T x);

}  // namespace mnemo::ultramem
