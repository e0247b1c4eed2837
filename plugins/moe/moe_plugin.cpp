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

#include "decoder_pass.hpp"
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
    blocks::PreNorms norms;
    blocks::Attention attn;
    MoeBlock moe;
};

class MoeModel {
public:
    MoeModel(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info)
        : cfg_(read_moe_config(host, ctx.n_ctx)), ends_(blocks::declare_ends(host, cfg_.attn)) {
        const llama::LlamaConfig& c = cfg_.attn;
        layers_ = blocks::declare_hf_layers(c, [&](const std::string& p) {
            return Layer{blocks::declare_pre_norms(host, c, p), blocks::declare_attention(host, c, p, ctx),
                         declare_moe(host, cfg_, p)};
        });
        blocks::fill_info(info, c, describe(cfg_));
    }

    void build(Graph& g) const {
        const blocks::Pass pass(g, cfg_.attn, ends_);
        T h = pass.embed();  // [N, hidden]
        for (const Layer& l : layers_) {
            h = g.add(h, pass.attention(l.attn, pass.norm(h, l.norms.attn)));
            h = g.add(h, moe_ffn(g, cfg_, l.moe, pass.norm(h, l.norms.ffn)));
        }
        pass.logits(h);
    }

private:
    MoeConfig cfg_;
    blocks::DecoderEnds ends_;
    std::vector<Layer> layers_;
};

}  // namespace
}  // namespace mnemo::moe

MNEMO_PLUGIN(mnemo::moe::MoeModel, "moe", "Mixture-of-experts decoders: OLMoE, Mixtral and generic MoE", "olmoe",
             "mixtral", "moe")
