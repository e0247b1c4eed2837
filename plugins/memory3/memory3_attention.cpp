#include "memory3_attention.hpp"

#include <cmath>

namespace mnemo::memory3 {
namespace {

constexpr int64_t kRopeMode = 0;  // HF checkpoints: rotate-half pairs (j, j + d/2)

float attention_scale(const llama::LlamaConfig& c) { return 1.0f / std::sqrt(static_cast<float>(c.head_dim)); }

T rotate(const Graph& g, const llama::LlamaConfig& c, T x, const blocks::Positions& p, int64_t offset) {
    return g.rope(x, p.pos, p.inv_freq, kRopeMode, c.head_dim, offset);
}

}  // namespace

Projections project(const Graph& g, const llama::LlamaConfig& c, const blocks::Attention& a, T x) {
    const int64_t n = g.n_tokens();
    return Projections{g.reshape(blocks::linear(g, x, a.q), {n, c.heads, c.head_dim}),
                       g.reshape(blocks::linear(g, x, a.k), {n, c.kv_heads, c.head_dim}),
                       g.reshape(blocks::linear(g, x, a.v), {n, c.kv_heads, c.head_dim})};
}

Prefix declare_prefix(const Host& h, const Memory3Config& c, int64_t layer, int64_t blocks, mnemo_tid len,
                      mnemo_tid bos_len, int32_t cache_dtype) {
    const llama::LlamaConfig& b = c.base;
    const std::string l = std::to_string(layer);
    Prefix p;
    if (c.is_memory_layer(layer)) {
        // Slots [0, b) the reference BOS, then up to references_per_chunk memories of
        // tokens_per_head keys each; "memory.len" says how many slots of a block are filled.
        p.k = h.state("memory.k." + l, static_cast<mnemo_dtype>(cache_dtype), {blocks, b.kv_heads, c.memory_slots(), b.head_dim});
        p.v = h.state("memory.v." + l, static_cast<mnemo_dtype>(cache_dtype), {blocks, b.kv_heads, c.memory_slots(), b.head_dim});
        p.len = len;
        p.per_block = true;
    } else {
        // §3.2: the reference BOS "is placed at every head at every layer", the memories only at
        // the memory layers: one block shared by every query. An empty BOS (b = 0) keeps the
        // contract's (empty) states but reads nothing: plain causal attention.
        p.k = h.state("memory.k." + l, static_cast<mnemo_dtype>(cache_dtype), {1, b.kv_heads, c.n_prefix(), b.head_dim});
        p.v = h.state("memory.v." + l, static_cast<mnemo_dtype>(cache_dtype), {1, b.kv_heads, c.n_prefix(), b.head_dim});
        p.len = bos_len;
    }
    return p;
}

T read_attention(const Graph& g, const Memory3Config& c, const blocks::Attention& a, const Prefix& p, T x,
                 const blocks::Positions& pos) {
    const llama::LlamaConfig& b = c.base;
    const Projections pr = project(g, b, a, x);
    // The context follows the memories' interval 0..R-1 (§3.2 parallel positions, Figure 9).
    const T q = rotate(g, b, pr.q, pos, c.reference_length);
    const T k = rotate(g, b, pr.k, pos, c.reference_length);
    const T kc = g.kv_store(g.param(a.k_cache), k, pos.seq, pos.pos);
    const T vc = g.kv_store(g.param(a.v_cache), pr.v, pos.seq, pos.pos);
    const float scale = attention_scale(b);
    T out;
    if (p.per_block) {
        // Eq. 4 of §3.2: Y_i = softmax(q_i · concat(K_BOS, K_0..K_4, K_ctx[:i])ᵀ / √d_h)
        //                     concat(V_BOS, V_0..V_4, V_ctx[:i]) W_O,
        // the memories K_j, V_j being those of the chunk query i belongs to: the engine puts a
        // chunk's memories in one block and says which block each row reads.
        out = g.attention(q, kc, vc, pos.seq, pos.pos, g.param(p.k), g.param(p.v), g.param(p.len),
                          g.input(MNEMO_INPUT_MEMORY_BLOCK), scale);
    } else if (p.len >= 0) {
        out = g.attention(q, kc, vc, pos.seq, pos.pos, g.param(p.k), g.param(p.v), g.param(p.len), scale);
    } else {
        out = g.attention(q, kc, vc, pos.seq, pos.pos, scale);
    }
    return blocks::linear(g, g.reshape(out, {g.n_tokens(), b.heads * b.head_dim}), a.o);
}

EncodeCache declare_encode_cache(const Host& h, const Memory3Config& c, int64_t layer, int64_t sequences,
                                 int64_t slots, int32_t cache_dtype) {
    const llama::LlamaConfig& b = c.base;
    const std::string l = std::to_string(layer);
    return EncodeCache{h.state("encode.k." + l, static_cast<mnemo_dtype>(cache_dtype), {sequences, b.kv_heads, slots, b.head_dim}),
                       h.state("encode.v." + l, static_cast<mnemo_dtype>(cache_dtype), {sequences, b.kv_heads, slots, b.head_dim})};
}

T write_attention(const Graph& g, const Memory3Config& c, const blocks::Attention& a, const EncodeCache* cache,
                  int64_t layer, T x, const blocks::Positions& pos, bool mark) {
    const llama::LlamaConfig& b = c.base;
    const Projections pr = project(g, b, a, x);
    const float scale = attention_scale(b);
    // A reference is encoded as the text "<s>Reference: ..." in slots 0..b+n-1; rotating slot s at
    // s - b puts the BOS at -b..-1 and reference token j at j, where reading expects its key
    // ("sparsification is applied after RoPE", §3.2).
    const int64_t offset = -c.n_prefix();
    const T k = rotate(g, b, pr.k, pos, offset);
    if (mark) {
        const std::string l = std::to_string(layer);
        g.mark_output("k." + l, k);
        g.mark_output("v." + l, pr.v);
        if (c.is_memory_layer(layer)) {
            // §3.3: w_j = Σ_i softmax_j(q_i k_jᵀ / √d_h) (or Σ_i exp(...)) over the reference's
            // own tokens: pre-RoPE q and k, no causal mask, the BOS (slots < b) left out. With
            // GQA a kv head's weight sums its whole query group (ATTN_MASS).
            g.mark_output("mass." + l, g.attn_mass(pr.q, pr.k, pos.seq, pos.pos, static_cast<int64_t>(c.selection),
                                                   c.n_prefix(), scale));
        }
    }
    if (!cache) return T{};
    const T q = rotate(g, b, pr.q, pos, offset);
    const T kc = g.kv_store(g.param(cache->k), k, pos.seq, pos.pos);
    const T vc = g.kv_store(g.param(cache->v), pr.v, pos.seq, pos.pos);
    const T out = g.attention(q, kc, vc, pos.seq, pos.pos, scale);
    return blocks::linear(g, g.reshape(out, {g.n_tokens(), b.heads * b.head_dim}), a.o);
}

}  // namespace mnemo::memory3
