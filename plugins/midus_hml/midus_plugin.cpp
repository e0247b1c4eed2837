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
        blocks::fill_info(info, b, describe(m->cfg_), b.layers + static_cast<int64_t>(m->cfg_.anchors.size()));
        return m;
    }

    void build(Graph& g) const {
        const llama::LlamaConfig& b = cfg_.base;
        const blocks::Positions p = blocks::positions(g, ends_.inv_freq);
        const float eps = static_cast<float>(b.rms_eps);

        T h = blocks::embed_tokens(g, ends_);  // [N, hidden]
        for (const BaseBlock& l : layers_) {
            if (l.memory >= 0) h = memory_block(g, cfg_, memory_[static_cast<size_t>(l.memory)], h, p);
            h = g.add(h, blocks::attention(g, b, l.attn, g.rms_norm(h, g.param(l.attn_norm), eps), p));
            h = g.add(h, blocks::mlp(g, l.mlp, g.rms_norm(h, g.param(l.ffn_norm), eps)));
        }
        blocks::output_logits(g, ends_, h, eps);
    }

private:
    void declare(Host& h, const mnemo_context_params& ctx) {
        const llama::LlamaConfig& b = cfg_.base;
        ends_ = blocks::declare_ends(h, b);
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
    }

    MidusConfig cfg_;
    blocks::DecoderEnds ends_;
    std::vector<BaseBlock> layers_;
    std::vector<MemoryBlock> memory_;
};

}  // namespace
}  // namespace mnemo::midus

MNEMO_PLUGIN(mnemo::midus::MidusModel, "midus_hml",
             "MIDUS-HML: Llama with head-wise product-key memory blocks before anchor blocks", "midus_hml")
