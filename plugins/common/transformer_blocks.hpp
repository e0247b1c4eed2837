// The decoder pieces every plugin of this repository builds on: linear layers, the
// Llama/Qwen2/OLMo-2 attention block with its KV cache, and the SwiGLU MLP. Memory-layer plugins
// replace or extend the MLP, and MIDUS reads the attention output before its projection, so the
// attention is split into "heads" (a' in MIDUS eq. 3) and "output projection".
#pragma once

#include <string>
#include <vector>

#include "llama_config.hpp"
#include "mnemo/plugin.hpp"

namespace mnemo::blocks {

using plugin::Graph;
using plugin::Host;
using plugin::T;

struct Linear {
    mnemo_tid w = -1;
    mnemo_tid b = -1;  // -1: no bias
};

Linear declare_linear(const Host& h, const std::string& name, int64_t out, int64_t in, bool bias);
// y = x Wᵀ (+ b)
T linear(const Graph& g, T x, const Linear& l);

struct Attention {
    mnemo_tid q_norm = -1, k_norm = -1;  // OLMo-2: RMSNorm over the whole q / k projections
    Linear q, k, v, o;
    mnemo_tid k_cache = -1, v_cache = -1;
};

// A K/V cache state [sequences, heads, positions, head_dim] of the context's cache dtype
// (f32/f16/q8_0). A q8_0 cache stores each head's row in blocks of 32, so a head dim that is not a
// multiple of 32 is refused here with a message that says what to pick instead.
mnemo_tid declare_kv_cache(const Host& h, const std::string& name, const mnemo_context_params& ctx, int64_t heads,
                           int64_t head_dim);

// Tensors `<prefix>self_attn.{q,k,v,o}_proj.*` (+ q_norm/k_norm for OLMo-2) and this layer's KV
// cache "<prefix>k_cache" / "<prefix>v_cache" [sequences, kv heads, positions, head dim].
Attention declare_attention(const Host& h, const llama::LlamaConfig& c, const std::string& prefix,
                            const mnemo_context_params& ctx);

// The same attention without an output projection (q/k/v (+ norms), KV cache; `o` stays unset):
// the attention of a MIDUS memory block, whose head outputs a'(x) query the memory directly
// (MIDUS eq. 3). Only attention_heads() may be called on it.
Attention declare_attention_heads(const Host& h, const llama::LlamaConfig& c, const std::string& prefix,
                                  const mnemo_context_params& ctx);

// Per-token inputs every attention reads, fetched once per graph.
struct Positions {
    T pos, seq, inv_freq;
};
Positions positions(const Graph& g, mnemo_tid inv_freq);

// softmax(q kᵀ/√d + causal mask) v for every head of the (already normed) input x, before the
// output projection: [N, heads * head_dim], heads concatenated (MIDUS a'(x), eq. 3).
T attention_heads(const Graph& g, const llama::LlamaConfig& c, const Attention& a, T x, const Positions& p);
// The full attention sub-layer output: attention_heads(x) W_oᵀ (+ b_o).
T attention(const Graph& g, const llama::LlamaConfig& c, const Attention& a, T x, const Positions& p);

// The same with the RoPE pair layout chosen (ROPE op mode): 0 rotate-half pairs (j, j+d/2) as HF
// checkpoints store q/k, 1 interleaved pairs (2j, 2j+1), the complex-number form of Meta's
// original Llama and lingua checkpoints. The overloads above use 0.
T attention_heads(const Graph& g, const llama::LlamaConfig& c, const Attention& a, T x, const Positions& p,
                  int64_t rope_mode);
T attention(const Graph& g, const llama::LlamaConfig& c, const Attention& a, T x, const Positions& p,
            int64_t rope_mode);

// Checkpoints whose attention tensors are not named like HF Llama (lingua: "layers.3.attention.wq").
// q, k, v, o are full tensor names without ".weight"/".bias"; cache prefixes the KV cache state
// names ("<cache>k_cache"). Biases follow c.qkv_bias / c.o_bias; no QK-norm.
struct AttentionNames {
    std::string q, k, v, o, cache;
};
Attention declare_attention(const Host& h, const llama::LlamaConfig& c, const AttentionNames& names,
                            const mnemo_context_params& ctx);

// "model.layers.<i>.": where Hugging Face checkpoints keep decoder layer i.
std::string hf_layer_prefix(int64_t i);

// The model's c.layers decoder layers, layer i declared by declare_layer(hf_layer_prefix(i)).
template <class DeclareLayer>
auto declare_hf_layers(const llama::LlamaConfig& c, DeclareLayer&& declare_layer) {
    std::vector<decltype(declare_layer(std::string()))> layers;
    for (int64_t i = 0; i < c.layers; ++i) layers.push_back(declare_layer(hf_layer_prefix(i)));
    return layers;
}

// The RMSNorm gains of a Hugging Face pre-norm layer: g_in before the attention
// ("<prefix>input_layernorm.weight") and g_post before the FFN ("<prefix>post_attention_layernorm.weight").
struct PreNorms {
    mnemo_tid attn = -1, ffn = -1;
};
PreNorms declare_pre_norms(const Host& h, const llama::LlamaConfig& c, const std::string& prefix);

struct Mlp {
    Linear gate, up, down;
};
Mlp declare_mlp(const Host& h, const llama::LlamaConfig& c, const std::string& prefix);  // <prefix>mlp.*_proj
// W_down (SiLU(W_gate x) ⊙ W_up x)
T mlp(const Graph& g, const Mlp& m, T x);

// The two ends of a decoder and its RoPE table: token embedding, final RMSNorm and LM head. The
// head is the embedding when the config ties them and the checkpoint stores no separate head
// (some tied checkpoints still do; then it is used).
struct EndNames {
    std::string embed = "model.embed_tokens.weight";
    std::string norm = "model.norm.weight";
    std::string head = "lm_head.weight";
};
struct DecoderEnds {
    mnemo_tid embed = -1, final_norm = -1, lm_head = -1, inv_freq = -1;
};
DecoderEnds declare_ends(const Host& h, const llama::LlamaConfig& c, const EndNames& names = {});
// [N, hidden] embeddings of the batch's tokens.
T embed_tokens(const Graph& g, const DecoderEnds& e);
// Logits of the rows that ask for them: only those go through the final norm and the (large) head.
void output_logits(const Graph& g, const DecoderEnds& e, T h, float eps);

// What a Llama-backbone plugin reports after create(); n_layers < 0 means c.layers.
void fill_info(mnemo_model_info& info, const llama::LlamaConfig& c, const std::string& architecture,
               int64_t n_layers = -1);

}  // namespace mnemo::blocks
