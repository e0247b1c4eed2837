// The attention of the OLMo fork UltraMem is trained with (olmo/model.py, OLMoBlock.attention):
// q, k, v from one fused projection (split into HF q_proj/k_proj/v_proj by the converter), then
// q_norm / k_norm — RMSNorm gains of size head_dim, shared by all heads — applied to every head
// AFTER the split into heads and before RoPE. (Upstream OLMo and OLMo-2 normalise the whole
// projection instead; that is blocks::attention with qk_norm.)
#pragma once

#include <string>

#include "transformer_blocks.hpp"

namespace mnemo::ultramem {

struct OlmoAttention {
    blocks::Attention base;              // q/k/v/o projections and the KV cache (no OLMo-2 norms)
    mnemo_tid q_norm = -1, k_norm = -1;  // [head_dim] each; -1 without QK-norm
};

// `<prefix>self_attn.{q,k,v,o}_proj.weight` and, with qk_norm, `<prefix>self_attn.{q,k}_norm.weight`.
OlmoAttention declare_olmo_attention(const plugin::Host& h, const llama::LlamaConfig& c, bool qk_norm,
                                     const std::string& prefix, const mnemo_context_params& ctx);

// W_o softmax(q kᵀ/√d + causal mask) v with q = RoPE(RMSNorm_head(x W_qᵀ) ⊙ g_q), likewise k.
plugin::T olmo_attention(const plugin::Graph& g, const llama::LlamaConfig& c, const OlmoAttention& a, plugin::T x,
                         const blocks::Positions& p);

}  // namespace mnemo::ultramem
