// Mixture-of-experts decoders: OLMoE (HF OlmoeForCausalLM), Mixtral (HF MixtralForCausalLM) and
// our generic "moe" type. The dense-FFN baseline the memory-layer papers compare against
// (UltraMem's MoE baseline is OLMoE-style).
//
// Pre-norm block, for the hidden state h of every token:
//   x  = RMSNorm(h) ⊙ g_in
//   h  = h + Attn(x)                 Llama attention; OLMoE (and moe with qk_norm) normalises q and
//                                    k over the whole projections before RoPE, like OLMo-2
//   x' = RMSNorm(h) ⊙ g_post
//   l  = x' W_gᵀ                     router logits [E]
//   OLMoE:   p = softmax(l), S = top-k(p), w_e = p_e (or p_e / Σ_S p when norm_topk_prob)
//   Mixtral: S = top-k(l), w = softmax(l_S)
//   h  = h + Σ_{e∈S} w_e W_down[e] (SiLU(W_gate[e] x') ⊙ W_up[e] x')
// logits = RMSNorm(h) ⊙ g_final W_lmᵀ  (W_lm = W_embed when tied)
#include <memory>
#include <string>
#include <vector>

#include "mnemo/plugin.hpp"
#include "moe_block.hpp"
#include "moe_config.hpp"
#include "rope_frequencies.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::moe {
namespace {

using plugin::Graph;
using plugin::Host;
using plugin::T;

struct Layer {
    mnemo_tid attn_norm = -1, ffn_norm = -1;
    blocks::Attention attn;
    MoeBlock moe;
};

class MoeModel {
public:
    static std::unique_ptr<MoeModel> create(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info) {
        auto m = std::make_unique<MoeModel>();
        m->cfg_ = read_moe_config(host, ctx.n_ctx);
        m->declare(host, ctx);
        const llama::LlamaConfig& c = m->cfg_.attn;
        info.vocab_size = c.vocab;
        info.n_ctx_train = c.max_positions;
        info.hidden_size = c.hidden;
        info.n_layers = c.layers;
        std::snprintf(info.architecture, sizeof info.architecture, "%s", describe(m->cfg_).c_str());
        return m;
    }

    void build(Graph& g) const {
        const llama::LlamaConfig& c = cfg_.attn;
        const blocks::Positions p = blocks::positions(g, inv_freq_);
        const float eps = static_cast<float>(c.rms_eps);

        T h = g.get_rows(g.param(embed_), g.tokens());  // [N, hidden]
        for (const Layer& l : layers_) {
            h = g.add(h, blocks::attention(g, c, l.attn, g.rms_norm(h, g.param(l.attn_norm), eps), p));
            h = g.add(h, moe_ffn(g, cfg_, l.moe, g.rms_norm(h, g.param(l.ffn_norm), eps)));
        }
        // Only the rows that need logits go through the final norm and the LM head.
        h = g.get_rows(h, g.out_rows());
        h = g.rms_norm(h, g.param(final_norm_), eps);
        g.output(g.matmul(h, g.param(lm_head_)));
    }

private:
    void declare(Host& h, const mnemo_context_params& ctx) {
        const llama::LlamaConfig& c = cfg_.attn;
        embed_ = h.weight("model.embed_tokens.weight", {c.vocab, c.hidden});
        for (int64_t i = 0; i < c.layers; ++i) {
            const std::string p = "model.layers." + std::to_string(i) + ".";
            Layer l;
            l.attn_norm = h.weight(p + "input_layernorm.weight", {c.hidden});
            l.ffn_norm = h.weight(p + "post_attention_layernorm.weight", {c.hidden});
            l.attn = blocks::declare_attention(h, c, p, ctx);
            l.moe = declare_moe(h, cfg_, p);
            layers_.push_back(l);
        }
        final_norm_ = h.weight("model.norm.weight", {c.hidden});
        lm_head_ = (c.tied_embeddings && !h.has_weight("lm_head.weight")) ? embed_
                                                                           : h.weight("lm_head.weight", {c.vocab, c.hidden});
        inv_freq_ = h.constant_f32("rope.inv_freq",
                                   llama::rope_inverse_frequencies(c.head_dim, c.rope_theta, c.rope_scaling));
    }

    MoeConfig cfg_;
    mnemo_tid embed_ = -1, final_norm_ = -1, lm_head_ = -1, inv_freq_ = -1;
    std::vector<Layer> layers_;
};

}  // namespace
}  // namespace mnemo::moe

MNEMO_PLUGIN(mnemo::moe::MoeModel, "moe", "Mixture-of-experts decoders: OLMoE, Mixtral and generic MoE", "olmoe",
             "mixtral", "moe")
