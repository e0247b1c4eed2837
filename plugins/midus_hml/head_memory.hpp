// The MIDUS memory block (arXiv 2512.13751 §2, appendix D):
//   M(x) = x + HML(a'(x)),   a'(x) = Attn'(RMSNorm(x)) = [a_1(x) | ... | a_H(x)]      (eq. 3, 5)
// Attn' is the block's own attention (q/k/v, RoPE, GQA, its own KV cache) without the output
// projection. HML, per head h and token t, with q_h = a_h(x) = [q_row | q_col] (d_p = d_h / 2):
//   S_row = q_row K_h,rowᵀ,  S_col = q_col K_h,colᵀ                                        (eq. 13)
//   I, J = top-k of S_row, S_col;  candidates I x J                                          (eq. 14)
//   σ(i, j) = S_row(i) + S_col(j); Ω = the k best candidates; α = softmax(σ over Ω)          (eq. 15)
//   M̄ = Σ_Ω α V̄[π(i, j)] ∈ R^r,  π(i, j) = i·n + j (0-based),  out_h = M̄ W_h ∈ R^{d_h}       (eq. 4)
// No query projection, no query/key normalisation and no 1/√d_p score scaling (the paper has none).
#pragma once

#include <string>

#include "midus_config.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::midus {

struct MemoryBlock {
    mnemo_tid norm = -1;  // RMSNorm gain before the attention
    blocks::Attention attn;  // q/k/v only
    mnemo_tid keys = -1;     // [H, 2, n, d_p]: per head, row then column sub-keys
    mnemo_tid values = -1;   // [n², r] shared latent value bank V̄
    mnemo_tid value_proj = -1;  // [H, r, d_h] head projections W_h
};

// Tensors "model.memory_blocks.<j>.{input_layernorm, self_attn.{q,k,v}_proj, hml.*}".
MemoryBlock declare_memory_block(const plugin::Host& h, const MidusConfig& c, size_t j, const mnemo_context_params& ctx);

// x + HML(a'(x)) for the hidden state x [N, hidden].
plugin::T memory_block(const plugin::Graph& g, const MidusConfig& c, const MemoryBlock& m, plugin::T x,
                       const blocks::Positions& p);

}  // namespace mnemo::midus
