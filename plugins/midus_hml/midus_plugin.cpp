// MIDUS-HML (Memory-Infused Depth Up-Scaling with the Head-wise Memory Layer, arXiv 2512.13751):
// a Llama decoder whose up-scaled depth is memory blocks inserted before anchor blocks,
//   f(x) = B_{L-1} ∘ ... ∘ B_{i_{D-1}} ∘ M_{D-1} ∘ ... ∘ B_{i_0} ∘ M_0 ∘ ... ∘ B_0(x)   (eq. 2 / 11)
// Base blocks keep the Hugging Face Llama tensor names, so a Llama checkpoint plus the memory
// tensors loads (tools/convert/midus_from_llama.py writes such a folder). The memory block itself
// is in head_memory.hpp; docs/models/midus_hml.md has config, tensors and the open choices.
#include <memory>
#include <string>
#include <vector>

#include "decoder_pass.hpp"
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
    blocks::PreNorms norms;
    blocks::Attention attn;
    blocks::Mlp mlp;
    int64_t memory = -1;  // index of the memory block that runs right before this one, or -1
};

class MidusModel {
public:
    MidusModel(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info)
        : cfg_(read_midus_config(host)), ends_(blocks::declare_ends(host, cfg_.base)) {
        declare_blocks(host, ctx);
        const llama::LlamaConfig& b = cfg_.base;
        blocks::fill_info(info, b, describe(cfg_), b.layers + static_cast<int64_t>(cfg_.anchors.size()));
    }

    void build(Graph& g) const {
        const blocks::Pass pass(g, cfg_.base, ends_);
        T h = pass.embed();  // [N, hidden]
        for (const BaseBlock& l : layers_) {
            if (l.memory >= 0) h = memory_block(g, cfg_, memory_[static_cast<size_t>(l.memory)], h, pass.positions());
            h = g.add(h, pass.attention(l.attn, pass.norm(h, l.norms.attn)));
            h = g.add(h, blocks::mlp(g, l.mlp, pass.norm(h, l.norms.ffn)));
        }
        pass.logits(h);
    }

private:
    // Base blocks under their Llama names, then the memory blocks before the anchors.
    void declare_blocks(Host& h, const mnemo_context_params& ctx) {
        const llama::LlamaConfig& b = cfg_.base;
        layers_ = blocks::declare_hf_layers(b, [&](const std::string& p) {
            return BaseBlock{blocks::declare_pre_norms(h, b, p), blocks::declare_attention(h, b, p, ctx),
                             blocks::declare_mlp(h, b, p)};
        });
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
