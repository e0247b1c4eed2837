// The Llama family: Llama 2/3 (RoPE with Llama-3 scaling, GQA, RMSNorm, SwiGLU, tied embeddings),
// Qwen2 (q/k/v bias) and OLMo-2 (QK-norm, norms after each sub-layer). Memory-layer plugins
// build on the same blocks.
//
// Pre-norm block (Llama, Qwen2), for the hidden state h of every token:
//   x  = RMSNorm(h) ⊙ g_in                                  RMSNorm(x) = x / sqrt(mean(x²) + ε)
//   q, k, v = x W_qᵀ (+ b_q), x W_kᵀ (+ b_k), x W_vᵀ (+ b_v)
//   q, k = RoPE(q, pos), RoPE(k, pos)
//   a  = softmax(q kᵀ / √d_head + causal mask) v            per head; kv head = head / (H_q / H_kv)
//   h  = h + a W_oᵀ
//   h  = h + W_down (SiLU(W_gate x') ⊙ W_up x'),   x' = RMSNorm(h) ⊙ g_post
// OLMo-2 moves the norms after the sub-layers and normalises q and k over the whole projection:
//   h = h + RMSNorm(Attn(h)) ⊙ g_post_attn,  h = h + RMSNorm(MLP(h)) ⊙ g_post_ffn,
//   q = RMSNorm(x W_qᵀ) ⊙ g_q,  k = RMSNorm(x W_kᵀ) ⊙ g_k   (before splitting heads and RoPE)
// logits = RMSNorm(h) ⊙ g_final W_lmᵀ  (W_lm = W_embed when tied)
#include <memory>
#include <string>
#include <vector>

#include "decoder_pass.hpp"
#include "llama_config.hpp"
#include "mnemo/plugin.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::llama {
namespace {

using plugin::Graph;
using plugin::Host;
using plugin::T;

struct Layer {
    blocks::PreNorms norms;                             // pre-norm variants
    mnemo_tid post_attn_norm = -1, post_ffn_norm = -1;  // OLMo-2
    blocks::Attention attn;
    blocks::Mlp mlp;
};

class LlamaModel {
public:
    LlamaModel(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info)
        : cfg_(read_config(host)), ends_(blocks::declare_ends(host, cfg_)) {
        layers_ = blocks::declare_hf_layers(cfg_, [&](const std::string& p) { return declare_layer(host, p, ctx); });
        blocks::fill_info(info, cfg_, describe(cfg_));
    }

    void build(Graph& g) const {
        const LlamaConfig& c = cfg_;
        const blocks::Pass pass(g, c, ends_);
        T h = pass.embed();  // [N, hidden]
        for (const Layer& l : layers_) {
            const T x = c.post_norms ? h : pass.norm(h, l.norms.attn);
            T o = pass.attention(l.attn, x);
            if (c.post_norms) o = pass.norm(o, l.post_attn_norm);
            h = g.add(h, o);

            const T x2 = c.post_norms ? h : pass.norm(h, l.norms.ffn);
            T m = blocks::mlp(g, l.mlp, x2);
            if (c.post_norms) m = pass.norm(m, l.post_ffn_norm);
            h = g.add(h, m);
        }
        pass.logits(h);
    }

private:
    Layer declare_layer(Host& h, const std::string& p, const mnemo_context_params& ctx) const {
        const LlamaConfig& c = cfg_;
        Layer l;
        if (c.post_norms) {
            l.post_attn_norm = h.weight(p + "post_attention_layernorm.weight", {c.hidden});
            l.post_ffn_norm = h.weight(p + "post_feedforward_layernorm.weight", {c.hidden});
        } else {
            l.norms = blocks::declare_pre_norms(h, c, p);
        }
        l.attn = blocks::declare_attention(h, c, p, ctx);
        l.mlp = blocks::declare_mlp(h, c, p);
        return l;
    }

    LlamaConfig cfg_;
    blocks::DecoderEnds ends_;
    std::vector<Layer> layers_;
};

}  // namespace
}  // namespace mnemo::llama

MNEMO_PLUGIN(mnemo::llama::LlamaModel, "llama", "Llama 2/3, Qwen2 and OLMo-2 decoder-only transformers", "llama",
             "qwen2", "olmo2")
