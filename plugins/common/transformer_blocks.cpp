#include "transformer_blocks.hpp"

#include <cmath>

#include "rope_frequencies.hpp"

namespace mnemo::blocks {

Linear declare_linear(const Host& h, const std::string& name, int64_t out, int64_t in, bool bias) {
    Linear l;
    l.w = h.weight(name + ".weight", {out, in}, plugin::kLinearDTypes);  // only ever MATMUL's W
    if (bias) l.b = h.weight(name + ".bias", {out});
    return l;
}

mnemo_tid declare_kv_cache(const Host& h, const std::string& name, const mnemo_context_params& ctx, int64_t heads,
                           int64_t head_dim) {
    if (ctx.cache_dtype == MNEMO_DTYPE_Q8_0 && head_dim % 32 != 0)
        throw plugin::PluginError("KV cache '" + name + "': a q8_0 cache needs a head dim that is a multiple of 32 (its block), this model's is " +
                                  std::to_string(head_dim) + ": use cache type f16 or f32");
    return h.state(name, static_cast<mnemo_dtype>(ctx.cache_dtype), {ctx.n_seq, heads, ctx.n_ctx, head_dim});
}

T linear(const Graph& g, T x, const Linear& l) {
    T y = g.matmul(x, g.param(l.w));
    return l.b >= 0 ? g.add(y, g.param(l.b)) : y;
}

namespace {

// q, k, v, then o (unless n.o is empty), then the KV cache "<n.cache>k_cache" / "v_cache"
// [sequences, kv heads, positions, head dim]; with norms, OLMo-2's QK-norm gains
// "<norms>q_norm.weight" / "k_norm.weight" come first.
Attention declare_projections(const Host& h, const llama::LlamaConfig& c, const AttentionNames& n,
                              const std::string* norms, const mnemo_context_params& ctx) {
    const int64_t q_dim = c.heads * c.head_dim;
    const int64_t kv_dim = c.kv_heads * c.head_dim;
    Attention a;
    if (norms) {
        a.q_norm = h.weight(*norms + "q_norm.weight", {q_dim});
        a.k_norm = h.weight(*norms + "k_norm.weight", {kv_dim});
    }
    a.q = declare_linear(h, n.q, q_dim, c.hidden, c.qkv_bias);
    a.k = declare_linear(h, n.k, kv_dim, c.hidden, c.qkv_bias);
    a.v = declare_linear(h, n.v, kv_dim, c.hidden, c.qkv_bias);
    if (!n.o.empty()) a.o = declare_linear(h, n.o, c.hidden, q_dim, c.o_bias);
    a.k_cache = declare_kv_cache(h, n.cache + "k_cache", ctx, c.kv_heads, c.head_dim);
    a.v_cache = declare_kv_cache(h, n.cache + "v_cache", ctx, c.kv_heads, c.head_dim);
    return a;
}

// The Hugging Face layout: "<prefix>self_attn.{q,k,v,o}_proj" (and q_norm/k_norm with QK-norm).
Attention declare_hf_attention(const Host& h, const llama::LlamaConfig& c, const std::string& prefix, bool with_output,
                               const mnemo_context_params& ctx) {
    const std::string s = prefix + "self_attn.";
    const AttentionNames n{s + "q_proj", s + "k_proj", s + "v_proj", with_output ? s + "o_proj" : "", prefix};
    return declare_projections(h, c, n, c.qk_norm ? &s : nullptr, ctx);
}

}  // namespace

Attention declare_attention(const Host& h, const llama::LlamaConfig& c, const std::string& prefix,
                            const mnemo_context_params& ctx) {
    return declare_hf_attention(h, c, prefix, /*with_output=*/true, ctx);
}

Attention declare_attention_heads(const Host& h, const llama::LlamaConfig& c, const std::string& prefix,
                                  const mnemo_context_params& ctx) {
    return declare_hf_attention(h, c, prefix, /*with_output=*/false, ctx);
}

Positions positions(const Graph& g, mnemo_tid inv_freq) {
    return Positions{g.positions(), g.seq_ids(), g.param(inv_freq)};
}

T attention_heads(const Graph& g, const llama::LlamaConfig& c, const Attention& a, T x, const Positions& p) {
    return attention_heads(g, c, a, x, p, /*rope_mode=*/0);
}

T attention_heads(const Graph& g, const llama::LlamaConfig& c, const Attention& a, T x, const Positions& p,
                  int64_t rope_mode) {
    const int64_t n = g.n_tokens();
    const float eps = static_cast<float>(c.rms_eps);
    T q = linear(g, x, a.q);
    T k = linear(g, x, a.k);
    T v = linear(g, x, a.v);
    if (c.qk_norm) {
        q = g.rms_norm(q, g.param(a.q_norm), eps);
        k = g.rms_norm(k, g.param(a.k_norm), eps);
    }
    if (c.rope_interleaved) rope_mode = 1;  // GGUF llama weights (llama_config.hpp)
    q = g.rope(g.reshape(q, {n, c.heads, c.head_dim}), p.pos, p.inv_freq, rope_mode, c.head_dim);
    k = g.rope(g.reshape(k, {n, c.kv_heads, c.head_dim}), p.pos, p.inv_freq, rope_mode, c.head_dim);
    v = g.reshape(v, {n, c.kv_heads, c.head_dim});
    const T kc = g.kv_store(g.param(a.k_cache), k, p.seq, p.pos);
    const T vc = g.kv_store(g.param(a.v_cache), v, p.seq, p.pos);
    const T out = g.attention(q, kc, vc, p.seq, p.pos, 1.0f / std::sqrt(static_cast<float>(c.head_dim)));
    return g.reshape(out, {n, c.heads * c.head_dim});
}

T attention(const Graph& g, const llama::LlamaConfig& c, const Attention& a, T x, const Positions& p) {
    return linear(g, attention_heads(g, c, a, x, p), a.o);
}

T attention(const Graph& g, const llama::LlamaConfig& c, const Attention& a, T x, const Positions& p,
            int64_t rope_mode) {
    return linear(g, attention_heads(g, c, a, x, p, rope_mode), a.o);
}

Attention declare_attention(const Host& h, const llama::LlamaConfig& c, const AttentionNames& n,
                            const mnemo_context_params& ctx) {
    return declare_projections(h, c, n, /*norms=*/nullptr, ctx);
}

std::string hf_layer_prefix(int64_t i) { return "model.layers." + std::to_string(i) + "."; }

PreNorms declare_pre_norms(const Host& h, const llama::LlamaConfig& c, const std::string& prefix) {
    PreNorms n;
    n.attn = h.weight(prefix + "input_layernorm.weight", {c.hidden});
    n.ffn = h.weight(prefix + "post_attention_layernorm.weight", {c.hidden});
    return n;
}

Mlp declare_mlp(const Host& h, const llama::LlamaConfig& c, const std::string& prefix) {
    Mlp m;
    m.gate = declare_linear(h, prefix + "mlp.gate_proj", c.ffn, c.hidden, c.mlp_bias);
    m.up = declare_linear(h, prefix + "mlp.up_proj", c.ffn, c.hidden, c.mlp_bias);
    m.down = declare_linear(h, prefix + "mlp.down_proj", c.hidden, c.ffn, c.mlp_bias);
    return m;
}

T mlp(const Graph& g, const Mlp& m, T x) { return linear(g, g.swiglu(linear(g, x, m.gate), linear(g, x, m.up)), m.down); }

DecoderEnds declare_ends(const Host& h, const llama::LlamaConfig& c, const EndNames& names) {
    DecoderEnds e;
    // The embedding feeds GET_ROWS (and MATMUL when tied), the head MATMUL: both may stay packed.
    e.embed = h.weight(names.embed, {c.vocab, c.hidden}, plugin::kLinearDTypes);
    e.final_norm = h.weight(names.norm, {c.hidden});
    e.lm_head = (c.tied_embeddings && !h.has_weight(names.head)) ? e.embed
                                                                  : h.weight(names.head, {c.vocab, c.hidden}, plugin::kLinearDTypes);
    e.inv_freq =
        h.constant_f32("rope.inv_freq", llama::rope_inverse_frequencies(c.head_dim, c.rope_theta, c.rope_scaling));
    return e;
}

T embed_tokens(const Graph& g, const DecoderEnds& e) { return g.get_rows(g.param(e.embed), g.tokens()); }

void output_logits(const Graph& g, const DecoderEnds& e, T h, float eps) {
    h = g.get_rows(h, g.out_rows());
    h = g.rms_norm(h, g.param(e.final_norm), eps);
    g.output(g.matmul(h, g.param(e.lm_head)));
}

void fill_info(mnemo_model_info& info, const llama::LlamaConfig& c, const std::string& architecture, int64_t n_layers) {
    plugin::report(info, {.vocab_size = c.vocab,
                          .n_ctx_train = c.max_positions,
                          .hidden_size = c.hidden,
                          .n_layers = n_layers < 0 ? c.layers : n_layers,
                          .architecture = architecture});
}

}  // namespace mnemo::blocks
