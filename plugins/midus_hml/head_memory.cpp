#include "head_memory.hpp"

namespace mnemo::midus {

using plugin::Graph;
using plugin::Host;
using plugin::T;

MemoryBlock declare_memory_block(const Host& h, const MidusConfig& c, size_t j, const mnemo_context_params& ctx) {
    const llama::LlamaConfig& b = c.base;
    const std::string p = "model.memory_blocks." + std::to_string(j) + ".";
    MemoryBlock m;
    m.norm = h.weight(p + "input_layernorm.weight", {b.hidden});
    m.attn = blocks::declare_attention_heads(h, b, p, ctx);
    m.keys = h.weight(p + "hml.keys", {b.heads, 2, c.n_keys, c.head_half()});
    m.values = h.weight(p + "hml.values", {c.n_keys * c.n_keys, c.latent_dim}, plugin::kTableDTypes);
    m.value_proj = h.weight(p + "hml.value_proj", {b.heads, c.latent_dim, b.head_dim});
    return m;
}

T memory_block(const Graph& g, const MidusConfig& c, const MemoryBlock& m, T x, const blocks::Positions& p) {
    const llama::LlamaConfig& b = c.base;
    const int64_t n = g.n_tokens(), heads = b.heads, dp = c.head_half();
    const T normed = g.rms_norm(x, g.param(m.norm), static_cast<float>(b.rms_eps));
    // a'(x) [N, H*d_h]: head h's output is its own query, first half rows, second half columns.
    const T queries = g.reshape(blocks::attention_heads(g, b, m.attn, normed, p), {n, heads, 2, dp});
    // [H, 2, n, d_p] is bank 2h+t of [2H, n, d_p, 1] (rank-1 additive product keys), and head h
    // reads query h (one head per query).
    const T keys = g.reshape(g.param(m.keys), {2 * heads, c.n_keys, dp, 1});
    const T scores = g.pk_score(queries, keys, heads, 1);        // [N, 2H, n, 1]
    const T idx = g.pk_topk(scores, c.topk, c.topk);             // [N, H, k], π = i·n + j
    const T chosen = g.pk_pair_scores(scores, idx);              // [N, H, k, 1]
    const T alpha = g.softmax(g.reshape(chosen, {n, heads, c.topk}));
    const T out = g.hive(g.param(m.values), idx, alpha, g.param(m.value_proj));  // [N, H, d_h]
    return g.add(x, g.reshape(out, {n, heads * b.head_dim}));
}

}  // namespace mnemo::midus
