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
        blocks::fill_info(info, c, describe(m->cfg_));
        return m;
    }

    void build(Graph& g) const {
        const llama::LlamaConfig& c = cfg_.attn;
        const blocks::Positions p = blocks::positions(g, ends_.inv_freq);
        const float eps = static_cast<float>(c.rms_eps);

        T h = blocks::embed_tokens(g, ends_);  // [N, hidden]
        for (const Layer& l : layers_) {
            h = g.add(h, blocks::attention(g, c, l.attn, g.rms_norm(h, g.param(l.attn_norm), eps), p));
            h = g.add(h, moe_ffn(g, cfg_, l.moe, g.rms_norm(h, g.param(l.ffn_norm), eps)));
        }
        blocks::output_logits(g, ends_, h, eps);
    }

private:
    void declare(Host& h, const mnemo_context_params& ctx) {
        const llama::LlamaConfig& c = cfg_.attn;
        ends_ = blocks::declare_ends(h, c);
        for (int64_t i = 0; i < c.layers; ++i) {
            const std::string p = "model.layers." + std::to_string(i) + ".";
            Layer l;
            l.attn_norm = h.weight(p + "input_layernorm.weight", {c.hidden});
            l.ffn_norm = h.weight(p + "post_attention_layernorm.weight", {c.hidden});
            l.attn = blocks::declare_attention(h, c, p, ctx);
            l.moe = declare_moe(h, cfg_, p);
            layers_.push_back(l);
        }
    }

    MoeConfig cfg_;
    blocks::DecoderEnds ends_;
    std::vector<Layer> layers_;
};

}  // namespace
}  // namespace mnemo::moe

MNEMO_PLUGIN(mnemo::moe::MoeModel, "moe", "Mixture-of-experts decoders: OLMoE, Mixtral and generic MoE", "olmoe",
             "mixtral", "moe")
