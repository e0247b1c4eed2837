#include "olmo_attention.hpp"

#include <cmath>

namespace mnemo::ultramem {

using plugin::Graph;
using plugin::T;

OlmoAttention declare_olmo_attention(const plugin::Host& h, const llama::LlamaConfig& c, bool qk_norm,
                                     const std::string& prefix, const mnemo_context_params& ctx) {
    OlmoAttention a;
    a.base = blocks::declare_attention(h, c, prefix, ctx);  // c.qk_norm is off: no full-width norms
    if (qk_norm) {
        a.q_norm = h.weight(prefix + "self_attn.q_norm.weight", {c.head_dim});
        a.k_norm = h.weight(prefix + "self_attn.k_norm.weight", {c.head_dim});
    }
    return a;
}

T olmo_attention(const Graph& g, const llama::LlamaConfig& c, const OlmoAttention& a, T x, const blocks::Positions& p) {
    const int64_t n = g.n_tokens();
    const float eps = static_cast<float>(c.rms_eps);
    T q = g.reshape(blocks::linear(g, x, a.base.q), {n, c.heads, c.head_dim});
    T k = g.reshape(blocks::linear(g, x, a.base.k), {n, c.kv_heads, c.head_dim});
    const T v = g.reshape(blocks::linear(g, x, a.base.v), {n, c.kv_heads, c.head_dim});
    if (a.q_norm >= 0) {
        // RMS_NORM normalises the last axis: each head on its own, one gain for all heads.
        q = g.rms_norm(q, g.param(a.q_norm), eps);
        k = g.rms_norm(k, g.param(a.k_norm), eps);
    }
    q = g.rope(q, p.pos, p.inv_freq, 0, c.head_dim);  // OLMo rotate_half: pairs (j, j + d/2)
    k = g.rope(k, p.pos, p.inv_freq, 0, c.head_dim);
    const T kc = g.kv_store(g.param(a.base.k_cache), k, p.seq, p.pos);
    const T vc = g.kv_store(g.param(a.base.v_cache), v, p.seq, p.pos);
    const T out = g.attention(q, kc, vc, p.seq, p.pos, 1.0f / std::sqrt(static_cast<float>(c.head_dim)));
    return blocks::linear(g, g.reshape(out, {n, c.heads * c.head_dim}), a.base.o);
}

}  // namespace mnemo::ultramem
