// One product-key memory layer (Lample et al. 2019, sec. 3; XLM's HashingMemoryProductFast),
// for the hidden state x of every token:
//   q       = BN(W_q x + b_q)                    [H, k]  (BN in eval mode, optional)
//   q_h     = [q1_h ; q2_h]                      two halves of k/2
//   s1_h(i) = q1_h . K[h,0,i],  s2_h(j) = q2_h . K[h,1,j]      i, j in 0..n_keys-1
//   I1, I2  = top-knn of s1_h, s2_h;  best knn pairs (i, j) in I1 x I2 by s1_h(i) + s2_h(j)
//   w_h     = softmax((s1_h(i) + s2_h(j)) / temperature) over the knn pairs
//   m(x)    = sum_h sum_(i,j) w_h(i,j) V[i * n_keys + j]          one bag of H * knn rows
#pragma once

#include <string>

#include "mnemo/plugin.hpp"
#include "pkm_config.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::pkm {

struct Memory {
    blocks::Linear query;     // query_proj.query_mlps.0 (bias folded into shift with BN)
    mnemo_tid bn_scale = -1;  // gamma / sqrt(running_var + eps)          [H * k]
    mnemo_tid bn_shift = -1;  // (b_q - running_mean) * scale + beta      [H * k]
    mnemo_tid keys = -1;      // [H, 2, n_keys, k/2]
    mnemo_tid values = -1;    // values.weight [n_keys^2, v_dim]
};

// Declares `memories.<key>.*` (key "2_in" / "2_after") and folds the query batch norm.
Memory declare_memory(const plugin::Host& h, const PkmConfig& c, const std::string& key);

// m(x) for x [N, dim]: [N, v_dim].
plugin::T memory(const plugin::Graph& g, const PkmConfig& c, const Memory& m, plugin::T x);

}  // namespace mnemo::pkm
