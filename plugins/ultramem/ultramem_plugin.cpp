// UltraMem (model_type "ultramem", arXiv 2411.12364) and UltraMemV2 ("ultramem_v2", arXiv
// 2508.18756) as trained by the official code (ZihaoHuang-notabot/Ultra-Sparse-Memory-Network, an
// OLMo fork): an OLMo "sequential" decoder whose blocks feed memory layers.
//
//   h = h + W_o Attn(RMSNorm(h) ⊙ g_attn)        per-head QK-norm, rotate-half RoPE (olmo_attention.hpp)
//   x = RMSNorm(h) ⊙ g_ff                         (block.ffn_input_after_norm)
//   h = h + W_down (SiLU(W_gate x) ⊙ W_up x)      OLMo SwiGLU: ff_proj = [up; gate], act(gate) * up
//   memory layer l with placement a:b: reads x of block a; after block b returns, h = h + Mem_l(x_a)
//   logits = RMSNorm(h) ⊙ g_f · W_lmᵀ             (W_lm = embeddings when tied)
//
// 'full' placement (V2's every-block layout) is a:a for every block: memory and FFN side by side.
#include <memory>
#include <string>
#include <vector>

#include "decoder_pass.hpp"
#include "mnemo/plugin.hpp"
#include "olmo_attention.hpp"
#include "transformer_blocks.hpp"
#include "ultramem_config.hpp"
#include "ultramem_memory.hpp"

namespace mnemo::ultramem {
namespace {

using plugin::Graph;
using plugin::Host;
using plugin::T;

struct Block {
    blocks::PreNorms norms;  // OLMo attn_norm, ff_norm
    OlmoAttention attn;
    blocks::Mlp mlp;
};

class UltraMemModel {
public:
    UltraMemModel(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info)
        : cfg_(read_ultramem_config(host)), ends_(blocks::declare_ends(host, cfg_.base)) {
        declare_blocks(host, ctx);
        blocks::fill_info(info, cfg_.base, describe(cfg_));
    }

    void build(Graph& g) const {
        const llama::LlamaConfig& b = cfg_.base;
        const blocks::Pass pass(g, b, ends_);
        MemoryPass memory(g, b, cfg_.memory, memories_, b.layers);
        T h = pass.embed();  // [N, D]
        for (int64_t i = 0; i < b.layers; ++i) {
            const Block& blk = blocks_[static_cast<size_t>(i)];
            h = g.add(h, olmo_attention(g, b, blk.attn, pass.norm(h, blk.norms.attn), pass.positions()));
            const T x = pass.norm(h, blk.norms.ffn);
            h = memory.after_block(i, x, g.add(h, blocks::mlp(g, blk.mlp, x)));
        }
        pass.logits(h);
    }

private:
    // OLMo blocks (HF layer names), then the tables the memory layers share and the layers.
    void declare_blocks(Host& h, const mnemo_context_params& ctx) {
        const llama::LlamaConfig& b = cfg_.base;
        blocks_ = blocks::declare_hf_layers(b, [&](const std::string& p) {
            return Block{blocks::declare_pre_norms(h, b, p), declare_olmo_attention(h, b, cfg_.qk_norm, p, ctx),
                         blocks::declare_mlp(h, b, p)};
        });
        memories_ = declare_memory_layers(h, b, cfg_.memory);
    }

    UltraMemConfig cfg_;
    blocks::DecoderEnds ends_;
    std::vector<Block> blocks_;
    MemoryLayers memories_;
};

}  // namespace
}  // namespace mnemo::ultramem

MNEMO_PLUGIN(mnemo::ultramem::UltraMemModel, "ultramem",
             "UltraMem and UltraMemV2 (ByteDance ultra-sparse memory layers on an OLMo decoder, official checkpoints)",
             "ultramem", "ultramem_v2")
