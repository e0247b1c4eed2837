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
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "llama_config.hpp"
#include "mnemo/plugin.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::llama {
namespace {

using plugin::Graph;
using plugin::Host;
using plugin::T;

struct Layer {
    mnemo_tid attn_norm = -1, ffn_norm = -1;            // pre-norm variants
    mnemo_tid post_attn_norm = -1, post_ffn_norm = -1;  // OLMo-2
    blocks::Attention attn;
    blocks::Mlp mlp;
};

class LlamaModel {
public:
    static std::unique_ptr<LlamaModel> create(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info) {
        auto m = std::make_unique<LlamaModel>();
        m->cfg_ = read_config(host);
        m->declare(host, ctx);
        const LlamaConfig& c = m->cfg_;
        blocks::fill_info(info, c, describe(c));
        return m;
    }

    void build(Graph& g) const {
        const LlamaConfig& c = cfg_;
        const blocks::Positions p = blocks::positions(g, ends_.inv_freq);
        const float eps = static_cast<float>(c.rms_eps);

        T h = blocks::embed_tokens(g, ends_);  // [N, hidden]
        for (const Layer& l : layers_) {
            const T x = c.post_norms ? h : g.rms_norm(h, g.param(l.attn_norm), eps);
            T o = blocks::attention(g, c, l.attn, x, p);
            if (c.post_norms) o = g.rms_norm(o, g.param(l.post_attn_norm), eps);
            h = g.add(h, o);

            const T x2 = c.post_norms ? h : g.rms_norm(h, g.param(l.ffn_norm), eps);
            T m = blocks::mlp(g, l.mlp, x2);
            if (c.post_norms) m = g.rms_norm(m, g.param(l.post_ffn_norm), eps);
            h = g.add(h, m);
        }
        blocks::output_logits(g, ends_, h, eps);
    }

private:
    void declare(Host& h, const mnemo_context_params& ctx) {
        const LlamaConfig& c = cfg_;
        ends_ = blocks::declare_ends(h, c);
        for (int64_t i = 0; i < c.layers; ++i) {
            const std::string p = "model.layers." + std::to_string(i) + ".";
            Layer l;
            if (c.post_norms) {
                l.post_attn_norm = h.weight(p + "post_attention_layernorm.weight", {c.hidden});
                l.post_ffn_norm = h.weight(p + "post_feedforward_layernorm.weight", {c.hidden});
            } else {
                l.attn_norm = h.weight(p + "input_layernorm.weight", {c.hidden});
                l.ffn_norm = h.weight(p + "post_attention_layernorm.weight", {c.hidden});
            }
            l.attn = blocks::declare_attention(h, c, p, ctx);
            l.mlp = blocks::declare_mlp(h, c, p);
            layers_.push_back(l);
        }
    }

    LlamaConfig cfg_;
    blocks::DecoderEnds ends_;
    std::vector<Layer> layers_;
};

}  // namespace
}  // namespace mnemo::llama

MNEMO_PLUGIN(mnemo::llama::LlamaModel, "llama", "Llama 2/3, Qwen2 and OLMo-2 decoder-only transformers", "llama",
             "qwen2", "olmo2")
