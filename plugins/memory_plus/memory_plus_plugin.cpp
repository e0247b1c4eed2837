// Memory+ (Berges et al. 2024, "Memory Layers at Scale"; code facebookresearch/memory on lingua):
// a Llama-style pre-norm decoder in which the FFN of the layers listed in mem_layers is replaced by
// a product-key memory (hashing_memory.hpp). Tensor names are lingua's own, so a converted
// checkpoint is its state dict:
//   x = RMSNorm(h) ⊙ attention_norm;  h = h + Attn(x)            RoPE on interleaved pairs
//   x = RMSNorm(h) ⊙ ffn_norm;        h = h + FFN(x)  or  h + Memory(x) in a memory layer
//   FFN(x) = w2 (silu(w1 x) ⊙ w3 x);  logits = output(RMSNorm(h) ⊙ norm)
#include <memory>
#include <string>
#include <vector>

#include "decoder_pass.hpp"
#include "hashing_memory.hpp"
#include "memory_plus_config.hpp"
#include "mnemo/plugin.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::memory_plus {
namespace {

using plugin::Graph;
using plugin::Host;
using plugin::T;

struct Layer {
    mnemo_tid attn_norm = -1, ffn_norm = -1;
    blocks::Attention attn;
    bool memory = false;
    blocks::Mlp mlp;      // dense layers
    HashingMemory mem;    // memory layers
};

class MemoryPlusModel {
public:
    MemoryPlusModel(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info)
        : cfg_(read_memory_plus_config(host)),
          ends_(blocks::declare_ends(host, cfg_.base, {"tok_embeddings.weight", "norm.weight", "output.weight"})) {
        declare_layers(host, ctx);
        blocks::fill_info(info, cfg_.base, describe(cfg_));
    }

    void build(Graph& g) const {
        const blocks::Pass pass(g, cfg_.base, ends_);
        const int64_t rope_mode = cfg_.rope_interleaved ? 1 : 0;
        T h = pass.embed();  // [N, D]
        for (const Layer& l : layers_) {
            h = g.add(h, pass.attention(l.attn, pass.norm(h, l.attn_norm), rope_mode));
            const T x = pass.norm(h, l.ffn_norm);
            h = g.add(h, l.memory ? hashing_memory(g, cfg_, l.mem, gate_, x) : blocks::mlp(g, l.mlp, x));
        }
        pass.logits(h);
    }

private:
    // lingua's layer names; the first memory layer holds the value table the others may share.
    void declare_layers(Host& h, const mnemo_context_params& ctx) {
        const llama::LlamaConfig& b = cfg_.base;
        const ValueTables* shared = nullptr;
        for (int64_t i = 0; i < b.layers; ++i) {
            const std::string p = "layers." + std::to_string(i) + ".";
            Layer l;
            l.attn_norm = h.weight(p + "attention_norm.weight", {b.hidden});
            l.ffn_norm = h.weight(p + "ffn_norm.weight", {b.hidden});
            const std::string a = p + "attention.";
            l.attn = blocks::declare_attention(h, b, blocks::AttentionNames{a + "wq", a + "wk", a + "wv", a + "wo", p}, ctx);
            l.memory = cfg_.is_memory_layer(i);
            const std::string f = p + "feed_forward.";
            if (l.memory) {
                l.mem = declare_hashing_memory(h, cfg_, f, shared);
                if (cfg_.share_values && !shared) {
                    shared_tables_ = l.mem.tables;
                    shared = &shared_tables_;
                }
            } else {
                // lingua's FeedForward: w1 gate, w3 up, w2 down, no biases.
                l.mlp.gate = blocks::declare_linear(h, f + "w1", b.ffn, b.hidden, b.mlp_bias);
                l.mlp.up = blocks::declare_linear(h, f + "w3", b.ffn, b.hidden, b.mlp_bias);
                l.mlp.down = blocks::declare_linear(h, f + "w2", b.hidden, b.ffn, b.mlp_bias);
            }
            layers_.push_back(l);
        }
        if (cfg_.gated) gate_ = declare_gate_constants(h, b.hidden);
    }

    MemoryPlusConfig cfg_;
    blocks::DecoderEnds ends_;
    ValueTables shared_tables_;
    GateConstants gate_;
    std::vector<Layer> layers_;
};

}  // namespace
}  // namespace mnemo::memory_plus

MNEMO_PLUGIN(mnemo::memory_plus::MemoryPlusModel, "memory_plus",
             "Memory+ (Meta memory layers at scale, lingua checkpoints): product-key memory layers in a Llama decoder",
             "memory_plus")
