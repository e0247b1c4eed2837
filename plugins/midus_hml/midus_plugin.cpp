// MIDUS-HML (Memory-Infused Depth Up-Scaling with the Head-wise Memory Layer, arXiv 2512.13751):
// a Llama decoder whose up-scaled depth is memory blocks inserted before anchor blocks,
//   f(x) = B_{L-1} ∘ ... ∘ B_{i_{D-1}} ∘ M_{D-1} ∘ ... ∘ B_{i_0} ∘ M_0 ∘ ... ∘ B_0(x)   (eq. 2 / 11)
// Base blocks keep the Hugging Face Llama tensor names, so a Llama checkpoint plus the memory
// tensors loads (tools/convert/midus_from_llama.py writes such a folder). The memory block itself
// is in head_memory.hpp; docs/models/midus_hml.md has config, tensors and the open choices.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "head_memory.hpp"
#include "midus_config.hpp"
#include "mnemo/plugin.hpp"
#include "rope_frequencies.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::midus {
namespace {

using plugin::Graph;
using plugin::Host;
using plugin::T;

struct BaseBlock {
    mnemo_tid attn_norm = -1, ffn_norm = -1;
    blocks::Attention attn;
    blocks::Mlp mlp;
    int64_t memory = -1;  // index of the memory block that runs right before this one, or -1
};

class MidusModel {
public:
    static std::unique_ptr<MidusModel> create(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info) {
        auto m = std::make_unique<MidusModel>();
        m->cfg_ = read_midus_config(host);
        m->declare(host, ctx);
        const llama::LlamaConfig& b = m->cfg_.base;
        info.vocab_size = b.vocab;
        info.n_ctx_train = b.max_positions;
        info.hidden_size = b.hidden;
        info.n_layers = b.layers + static_cast<int64_t>(m->cfg_.anchors.size());
        std::snprintf(info.architecture, sizeof info.architecture, "%s", describe(m->cfg_).c_str());
        return m;
    }

    void build(Graph& g) const {
        const llama::LlamaConfig& b = cfg_.base;
        const blocks::Positions p = blocks::positions(g, inv_freq_);
        const float eps = static_cast<float>(b.rms_eps);

        T h = g.get_rows(g.param(embed_), g.tokens());  // [N, hidden]
        for (const BaseBlock& l : layers_) {
            if (l.memory >= 0) h = memory_block(g, cfg_, memory_[static_cast<size_t>(l.memory)], h, p);
            h = g.add(h, blocks::attention(g, b, l.attn, g.rms_norm(h, g.param(l.attn_norm), eps), p));
            h = g.add(h, blocks::mlp(g, l.mlp, g.rms_norm(h, g.param(l.ffn_norm), eps)));
        }
        h = g.get_rows(h, g.out_rows());  // only the rows that need logits
        h = g.rms_norm(h, g.param(final_norm_), eps);
        g.output(g.matmul(h, g.param(lm_head_)));
    }

private:
    void declare(Host& h, const mnemo_context_params& ctx) {
        const llama::LlamaConfig& b = cfg_.base;
        embed_ = h.weight("model.embed_tokens.weight", {b.vocab, b.hidden});
        for (int64_t i = 0; i < b.layers; ++i) {
            const std::string p = "model.layers." + std::to_string(i) + ".";
            BaseBlock l;
            l.attn_norm = h.weight(p + "input_layernorm.weight", {b.hidden});
            l.ffn_norm = h.weight(p + "post_attention_layernorm.weight", {b.hidden});
            l.attn = blocks::declare_attention(h, b, p, ctx);
            l.mlp = blocks::declare_mlp(h, b, p);
            layers_.push_back(l);
        }
        for (size_t j = 0; j < cfg_.anchors.size(); ++j) {
            memory_.push_back(declare_memory_block(h, cfg_, j, ctx));
            layers_[static_cast<size_t>(cfg_.anchors[j])].memory = static_cast<int64_t>(j);
        }
        final_norm_ = h.weight("model.norm.weight", {b.hidden});
        // Some tied checkpoints still store lm_head.weight; use it when present.
        const bool tied = b.tied_embeddings && !h.has_weight("lm_head.weight");
        lm_head_ = tied ? embed_ : h.weight("lm_head.weight", {b.vocab, b.hidden});
        inv_freq_ = h.constant_f32("rope.inv_freq",
                                   llama::rope_inverse_frequencies(b.head_dim, b.rope_theta, b.rope_scaling));
    }

    MidusConfig cfg_;
    mnemo_tid embed_ = -1, final_norm_ = -1, lm_head_ = -1, inv_freq_ = -1;
    std::vector<BaseBlock> layers_;
    std::vector<MemoryBlock> memory_;
};

}  // namespace
}  // namespace mnemo::midus

MNEMO_PLUGIN(mnemo::midus::MidusModel, "midus_hml",
             "MIDUS-HML: Llama with head-wise product-key memory blocks before anchor blocks", "midus_hml")
