// Memory3 (Yang et al. 2024, shared/papers/004 §3.1-3.3): a Llama decoder that reads explicit
// memories, the sparse attention key-values of retrieved reference texts, through its
// self-attention (eq. 4). The plugin builds three graphs (mnemo_graph_purpose):
//   LOGITS        the forward pass; every layer attends to the reference BOS first, the memory
//                 layers also to the memories of the query's chunk (states the engine fills);
//   ENCODE        the memory writer: references laid out as sequences "<s>Reference: ...", with
//                 each layer's keys and values and the memory layers' selection weights (§3.3);
//   ENCODE_QUERY  the same pass up to retrieval_layer, for the retrieval vectors of chunks.
// Positions and the prefix layout are explained in memory3_attention.hpp; the state names and
// shapes are the contract in plugin_abi.h (mnemo_memory_spec).
//
// With mem_insert_way in config.json the blocks also feed UltraMemV2 memory layers (arXiv
// 2508.18756; common/ultramem_memory.hpp), in all three graphs alike, since later layers' keys and
// values and the retrieval hidden state see their outputs. Block i:
//   h = h + W_o MemoryAttn(RMSNorm(h) ⊙ g_in)      reading / writing attention (eq. 4, §3.2-3.3)
//   x = RMSNorm(h) ⊙ g_post
//   h = h + W_down (SiLU(W_gate x) ⊙ W_up x)
//   memory layer l with placement a:b reads x of block a; after block b's MLP, h = h + Mem_l(x_a)
// (the placement rule of plugins/ultramem, olmo/model.py's mem_insert_way).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memory3_attention.hpp"
#include "memory3_config.hpp"
#include "mnemo/plugin.hpp"
#include "transformer_blocks.hpp"
#include "ultramem_memory.hpp"

namespace mnemo::memory3 {
namespace {

// The plugin does not see the engine's batch size; it sizes the memory layers' blocks for the
// default ubatch (SessionOptions::n_ubatch = 256). 256 tokens of one sequence that do not start
// on a chunk boundary touch at most ceil(256 / chunk_length) + 1 chunks, each reading its own
// block; one block more is spare. Every sequence needs a block of its own when decoding, hence
// blocks = max(n_seq, ceil(256 / chunk_length) + 2). A larger ubatch is the engine's to split.
constexpr int64_t kEngineUbatch = 256;
// References written by one ENCODE run (sequences of the encode caches).
constexpr int64_t kEncodeSequences = 4;

struct Layer {
    mnemo_tid attn_norm = -1, ffn_norm = -1;
    blocks::Attention attn;
    blocks::Mlp mlp;
    Prefix prefix;
    EncodeCache encode;  // only for the layers whose attention ENCODE runs (see encode_attention_layers)
};

class Memory3Model {
public:
    static std::unique_ptr<Memory3Model> create(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info) {
        auto m = std::make_unique<Memory3Model>();
        m->cfg_ = read_config(host);
        const Memory3Config& c = m->cfg_;
        m->blocks_ = std::max<int64_t>(ctx.n_seq, (kEngineUbatch + c.chunk_length - 1) / c.chunk_length + 2);
        m->declare(host, ctx);
        blocks::fill_info(info, c.base, describe(c));
        info.n_ctx_train = c.base.max_positions > 0 ? c.base.max_positions - c.reference_length : 0;
        m->fill_memory_spec(info.memory);
        return m;
    }

    void build(Graph& g) const {
        switch (g.purpose()) {
            case MNEMO_GRAPH_LOGITS: return build_logits(g);
            case MNEMO_GRAPH_ENCODE: return build_encode(g, /*query_only=*/false);
            case MNEMO_GRAPH_ENCODE_QUERY: return build_encode(g, /*query_only=*/true);
        }
        throw plugin::PluginError("memory3: graph purpose " + std::to_string(static_cast<int>(g.purpose())) +
                                  " is not LOGITS, ENCODE or ENCODE_QUERY");
    }

private:
    // ENCODE needs every layer's keys and values, and the hidden state after retrieval_layer
    // layers: the attention (and MLP) of layers below max(retrieval_layer, L - 1) must run; the
    // last layer only projects, unless "hidden" is read after it.
    int64_t encode_attention_layers() const { return std::max(cfg_.retrieval_layer, cfg_.base.layers - 1); }
    // Slots of an encode cache: the reference BOS, then a reference (or a retrieval text, which
    // the engine holds to reference_length tokens too).
    int64_t encode_slots() const { return cfg_.n_prefix() + cfg_.reference_length; }

    void declare(Host& h, const mnemo_context_params& ctx) {
        const Memory3Config& c = cfg_;
        ends_ = blocks::declare_ends(h, c.base);
        memory_len_ = h.state("memory.len", MNEMO_DTYPE_I32, {blocks_});
        if (c.n_prefix() > 0) {
            const int32_t b = static_cast<int32_t>(c.n_prefix());
            bos_len_ = h.constant("memory.bos_len", MNEMO_DTYPE_I32, {1}, &b);
        }
        for (int64_t i = 0; i < c.base.layers; ++i) {
            const std::string p = "model.layers." + std::to_string(i) + ".";
            Layer l;
            l.attn_norm = h.weight(p + "input_layernorm.weight", {c.base.hidden});
            l.ffn_norm = h.weight(p + "post_attention_layernorm.weight", {c.base.hidden});
            l.attn = blocks::declare_attention(h, c.base, p, ctx);
            l.mlp = blocks::declare_mlp(h, c.base, p);
            l.prefix = declare_prefix(h, c, i, blocks_, memory_len_, bos_len_, ctx.cache_dtype);
            if (i < encode_attention_layers())
                l.encode = declare_encode_cache(h, c, i, kEncodeSequences, encode_slots(), ctx.cache_dtype);
            layers_.push_back(l);
        }
        if (c.ultramem) {
            // UltraMemLayerV1 keeps a value table per layer; V2 one shared table (full_memory_layer).
            const std::string v1_table = "model.mem_blocks.0.values_for_look_up";
            if (h.has_weight(v1_table))
                throw plugin::PluginError("tensor '" + v1_table + "' is an UltraMem V1 per-layer value table: a memory3 "
                                          "model's memory layers are UltraMemV2's, whose values sit in "
                                          "model.full_memory_layer.values_for_look_up");
            memories_ = ultramem::declare_memory_layers(h, c.base, *c.ultramem);
        }
    }

    // The schedule only: the engine reads the memory layers, blocks, heads and dimensions from
    // the states declare() made, and retrieval_dim from the "hidden" output.
    void fill_memory_spec(mnemo_memory_spec& s) const {
        const Memory3Config& c = cfg_;
        s = mnemo_memory_spec{};
        s.enabled = 1;
        s.tokens_per_head = static_cast<int32_t>(c.tokens_per_head);
        s.reference_length = static_cast<int32_t>(c.reference_length);
        s.chunk_length = static_cast<int32_t>(c.chunk_length);
        s.references_per_chunk = static_cast<int32_t>(c.references_per_chunk);
        s.encode_sequences = static_cast<int32_t>(kEncodeSequences);
        s.retrieval_layer = static_cast<int32_t>(c.retrieval_layer);
        s.n_prefix = static_cast<int32_t>(c.n_prefix());
        std::copy(c.prefix_ids.begin(), c.prefix_ids.end(), s.prefix_ids);
    }

    // The UltraMemV2 memory layers of one graph whose blocks 0..visited_blocks-1 run their MLP;
    // none when config.json has no mem_insert_way.
    std::optional<ultramem::MemoryPass> memory_pass(const Graph& g, int64_t visited_blocks) const {
        if (!cfg_.ultramem) return std::nullopt;
        return std::make_optional<ultramem::MemoryPass>(g, cfg_.base, *cfg_.ultramem, memories_, visited_blocks);
    }

    // Block i after its attention: x = RMSNorm(h) ⊙ g_post, h + W_down (SiLU(W_gate x) ⊙ W_up x),
    // then the memory layers that read x or add after block i.
    T feed_forward(const Graph& g, std::optional<ultramem::MemoryPass>& memory, int64_t i, const Layer& l,
                   T h) const {
        const T x = g.rms_norm(h, g.param(l.ffn_norm), static_cast<float>(cfg_.base.rms_eps));
        h = g.add(h, blocks::mlp(g, l.mlp, x));
        return memory ? memory->after_block(i, x, h) : h;
    }

    void build_logits(const Graph& g) const {
        const float eps = static_cast<float>(cfg_.base.rms_eps);
        const blocks::Positions p = blocks::positions(g, ends_.inv_freq);
        std::optional<ultramem::MemoryPass> memory = memory_pass(g, cfg_.base.layers);
        T h = blocks::embed_tokens(g, ends_);
        for (int64_t i = 0; i < cfg_.base.layers; ++i) {
            const Layer& l = layers_[static_cast<size_t>(i)];
            h = g.add(h, read_attention(g, cfg_, l.attn, l.prefix, g.rms_norm(h, g.param(l.attn_norm), eps), p));
            h = feed_forward(g, memory, i, l, h);
        }
        blocks::output_logits(g, ends_, h, eps);
    }

    // Positions are slots of the encode caches, sequence ids their rows (0..kEncodeSequences-1).
    void build_encode(const Graph& g, bool query_only) const {
        const float eps = static_cast<float>(cfg_.base.rms_eps);
        const blocks::Positions p = blocks::positions(g, ends_.inv_freq);
        const int64_t last = query_only ? cfg_.retrieval_layer : cfg_.base.layers;  // layers to visit
        // Blocks below both bounds run their MLP; the memory layers follow them as in LOGITS.
        std::optional<ultramem::MemoryPass> memory = memory_pass(g, std::min(last, encode_attention_layers()));
        T h = blocks::embed_tokens(g, ends_);
        if (cfg_.retrieval_layer == 0) g.mark_output("hidden", h);
        for (int64_t i = 0; i < last; ++i) {
            const Layer& l = layers_[static_cast<size_t>(i)];
            const bool runs = i < encode_attention_layers();
            const T x = g.rms_norm(h, g.param(l.attn_norm), eps);
            const T a = write_attention(g, cfg_, l.attn, runs ? &l.encode : nullptr, i, x, p, !query_only);
            if (!runs) break;  // the last layer: its keys and values are marked, nothing reads further
            h = feed_forward(g, memory, i, l, g.add(h, a));
            if (i + 1 == cfg_.retrieval_layer) g.mark_output("hidden", h);
        }
    }

    Memory3Config cfg_;
    int64_t blocks_ = 0;
    blocks::DecoderEnds ends_;
    mnemo_tid memory_len_ = -1, bos_len_ = -1;
    std::vector<Layer> layers_;
    ultramem::MemoryLayers memories_;  // UltraMemV2 memory layers (none without mem_insert_way)
};

}  // namespace
}  // namespace mnemo::memory3

MNEMO_PLUGIN(mnemo::memory3::Memory3Model, "memory3", "Memory3: a Llama decoder reading explicit memories",
             "memory3")
