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
#include <map>
#include <memory>
#include <string>
#include <vector>

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
    mnemo_tid attn_norm = -1, ffn_norm = -1;
    OlmoAttention attn;
    blocks::Mlp mlp;
};

class UltraMemModel {
public:
    static std::unique_ptr<UltraMemModel> create(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info) {
        auto m = std::make_unique<UltraMemModel>();
        m->cfg_ = read_ultramem_config(host);
        m->declare(host, ctx);
        const llama::LlamaConfig& b = m->cfg_.base;
        blocks::fill_info(info, b, describe(m->cfg_));
        return m;
    }

    void build(Graph& g) const {
        const llama::LlamaConfig& b = cfg_.base;
        const blocks::Positions p = blocks::positions(g, ends_.inv_freq);
        const float eps = static_cast<float>(b.rms_eps);

        T h = blocks::embed_tokens(g, ends_);  // [N, D]
        std::map<int64_t, std::vector<T>> pending;      // add block -> memory outputs to add after it
        for (int64_t i = 0; i < b.layers; ++i) {
            const Block& blk = blocks_[static_cast<size_t>(i)];
            h = g.add(h, olmo_attention(g, b, blk.attn, g.rms_norm(h, g.param(blk.attn_norm), eps), p));
            const T x = g.rms_norm(h, g.param(blk.ffn_norm), eps);
            h = g.add(h, blocks::mlp(g, blk.mlp, x));
            for (size_t l = 0; l < memories_.size(); ++l)
                if (cfg_.memories[l].read_block == i)
                    pending[cfg_.memories[l].add_block].push_back(memory_layer(g, cfg_, memories_[l], shared_, x));
            if (auto it = pending.find(i); it != pending.end()) {
                for (T y : it->second) h = g.add(h, y);
                pending.erase(it);
            }
        }
        blocks::output_logits(g, ends_, h, eps);
    }

private:
    void declare(Host& h, const mnemo_context_params& ctx) {
        const llama::LlamaConfig& b = cfg_.base;
        ends_ = blocks::declare_ends(h, b);
        for (int64_t i = 0; i < b.layers; ++i) {
            const std::string p = "model.layers." + std::to_string(i) + ".";
            Block blk;
            blk.attn_norm = h.weight(p + "input_layernorm.weight", {b.hidden});     // OLMo attn_norm
            blk.ffn_norm = h.weight(p + "post_attention_layernorm.weight", {b.hidden});  // OLMo ff_norm
            blk.attn = declare_olmo_attention(h, b, cfg_.qk_norm, p, ctx);
            blk.mlp = blocks::declare_mlp(h, b, p);
            blocks_.push_back(blk);
        }
        shared_ = declare_shared_tables(h, cfg_);
        for (int64_t l = 0; l < static_cast<int64_t>(cfg_.memories.size()); ++l)
            memories_.push_back(declare_memory_layer(h, cfg_, l));
    }

    UltraMemConfig cfg_;
    blocks::DecoderEnds ends_;
    std::vector<Block> blocks_;
    SharedTables shared_;
    std::vector<MemoryLayer> memories_;
};

}  // namespace
}  // namespace mnemo::ultramem

MNEMO_PLUGIN(mnemo::ultramem::UltraMemModel, "ultramem",
             "UltraMem and UltraMemV2 (ByteDance ultra-sparse memory layers on an OLMo decoder, official checkpoints)",
             "ultramem", "ultramem_v2")
