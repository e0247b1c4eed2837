// One Memory+ memory layer (lingua's HashingMemory), in the place of a layer's FFN.
//
// For the normed hidden state x [D] of a token (paper §3, official lingua/product_key/memory.py):
//   q_h = (W_q x + b_q)[h k .. (h+1) k)                     H heads, query size k, halves q_h¹, q_h²
//   s¹_h[i] = q_h¹ · K_h¹[i],  s²_h[j] = q_h² · K_h²[j]     sub-keys, i, j < n_keys; no 1/√k, no norm
//   I¹, I² = top-knn of s¹_h, s²_h;  best knn pairs of s¹_h[i] + s²_h[j] over I¹ × I²  -> row i n_keys + j
//   w_h = softmax over the knn chosen pair scores (per head)
//   bag = Σ_h Σ_j w_h[j] V[row_h[j]]                         V: [n_keys², v], heads summed
//   out = W_o (bag ⊙ silu(W_s x + b_s)) + b_o                 swilu_projection (default)
//         W_o bag + b_o (mem_v_dim > 0, no swilu) or bag (neither)
//   PEER: a_h[j] = gelu(x · U[row]) w_h[j],  out = Σ a_h[j] V'[row]   (values_u / values_v)
//   mem_gated: out *= sigmoid(w_g · x + b_g)
#pragma once

#include "memory_plus_config.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::memory_plus {

// Tables every memory layer reads: one set when mem_share_values, else per layer.
struct ValueTables {
    mnemo_tid values = -1;    // [n_keys², v]  product-key values
    mnemo_tid values_u = -1;  // [n_keys², D]  PEER down rows
    mnemo_tid values_v = -1;  // [n_keys², D]  PEER up rows
};

// Constants that turn a [N, 1] logit into a [N, D] sigmoid gate: the op table has no sigmoid,
// and sigmoid(z) = softmax([z, 0])[0] exactly.
struct GateConstants {
    mnemo_tid pair = -1;       // [2, 1] = (1, 0): z -> (z, 0)
    mnemo_tid broadcast = -1;  // [D, 2], every row (1, 0): (p0, p1) -> p0 in every column
};

struct HashingMemory {
    blocks::Linear query;  // query_proj.query_mlps.0: [H k, D]
    mnemo_tid keys = -1;   // [2 H n_keys, k/2], read as [H][2][n_keys][k/2]
    ValueTables tables;
    blocks::Linear swilu, value_proj, gating;  // w = -1 when absent
};

// Tensors of the memory under `prefix` ("layers.4.feed_forward."). `shared` holds the tables of
// the first memory layer when they are shared (empty for that layer itself).
HashingMemory declare_hashing_memory(const plugin::Host& h, const MemoryPlusConfig& c, const std::string& prefix,
                                     const ValueTables* shared);
GateConstants declare_gate_constants(const plugin::Host& h, int64_t hidden);

// The memory's output [N, D] for the normed hidden states x [N, D].
plugin::T hashing_memory(const plugin::Graph& g, const MemoryPlusConfig& c, const HashingMemory& m,
                         const GateConstants& gate, plugin::T x);

}  // namespace mnemo::memory_plus
