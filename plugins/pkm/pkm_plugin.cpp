// XLM transformer language models with product-key memory layers (Lample et al. 2019, "Large
// Memory Layers with Product Keys"; facebookresearch/XLM). Post-LN blocks, used causally:
//   h   = LN_emb(E[token] + P[pos] (+ L[lang]))                 learned positions, no scaling
//   per block l:
//     a = softmax(q kᵀ / √d_head + causal mask) v,  q, k, v = h W_{q,k,v}ᵀ + b   (all biased)
//     h = LN1_l(h + a W_oᵀ + b_o)
//     h = LN2_l(h + FFN_l(h)),  FFN(h) = W_2 GELU_erf(W_1 h + b_1) + b_2
//         with a memory "l_in": LN2_l(h + m(h)) instead (the memory replaces the FFN)
//     h = h + m(h)   for a memory "l_after" (no norm after it)
// logits = h W_predᵀ + b_pred   (W_pred = E when share_inout_emb; no final norm: blocks end in LN)
// The memory m is in pkm_memory.hpp.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/plugin.hpp"
#include "pkm_config.hpp"
#include "pkm_linear.hpp"
#include "pkm_memory.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::pkm {
namespace {

using blocks::Linear;
using plugin::Graph;
using plugin::Host;
using plugin::PluginError;
using plugin::T;

struct Norm {
    mnemo_tid w = -1, b = -1;
};

struct Layer {
    Linear q, k, v, o;
    mnemo_tid k_cache = -1, v_cache = -1;
    Norm ln1, ln2;
    Linear lin1, lin2;  // absent (w = -1) when a memory replaces the FFN
    std::unique_ptr<Memory> mem_in, mem_after;
};

Norm declare_norm(const Host& h, const std::string& name, int64_t d) {
    return Norm{h.weight(name + ".weight", {d}), h.weight(name + ".bias", {d})};
}

class PkmModel {
public:
    PkmModel(Host& host, const mnemo_context_params& ctx, mnemo_model_info& info) : cfg_(read_config(host)) {
        const PkmConfig& c = cfg_;
        if (ctx.n_ctx > c.max_positions)
            throw PluginError("the context holds " + std::to_string(ctx.n_ctx) +
                              " positions but the model learned only " + std::to_string(c.max_positions) +
                              " (max_position_embeddings); use a context of at most " +
                              std::to_string(c.max_positions));
        declare(host, ctx);
        plugin::report(info, {.vocab_size = c.vocab,
                              .n_ctx_train = c.max_positions,
                              .hidden_size = c.dim,
                              .n_layers = c.layers,
                              .architecture = describe(c)});
    }

    void build(Graph& g) const {
        const PkmConfig& c = cfg_;
        const float eps = static_cast<float>(c.ln_eps);
        const T pos = g.positions(), seq = g.seq_ids();

        T h = g.add(g.get_rows(g.param(embed_), g.tokens()), g.get_rows(g.param(pos_embed_), pos));
        if (lang_row_ >= 0) h = g.add(h, g.param(lang_row_));
        h = norm(g, h, ln_emb_, eps);
        for (const Layer& l : layers_) {
            h = norm(g, g.add(h, attention(g, l, h, pos, seq)), l.ln1, eps);
            const T f = l.mem_in ? memory(g, c, *l.mem_in, h)
                                 : blocks::linear(g, g.gelu(blocks::linear(g, h, l.lin1), 1), l.lin2);
            h = norm(g, g.add(h, f), l.ln2, eps);
            if (l.mem_after) h = g.add(h, memory(g, c, *l.mem_after, h));
        }
        // Only the rows that need logits go through the (large) prediction layer.
        h = g.get_rows(h, g.out_rows());
        g.output(g.add(g.matmul(h, g.param(pred_w_)), g.param(pred_b_)));
    }

private:
    static T norm(const Graph& g, T x, const Norm& n, float eps) {
        return g.layer_norm(x, g.param(n.w), g.param(n.b), eps);
    }

    // XLM MultiHeadAttention: q is divided by √d_head before q kᵀ; causal over the cache.
    T attention(const Graph& g, const Layer& l, T x, T pos, T seq) const {
        const PkmConfig& c = cfg_;
        const int64_t n = g.n_tokens();
        const T q = g.reshape(blocks::linear(g, x, l.q), {n, c.heads, c.head_dim});
        const T k = g.reshape(blocks::linear(g, x, l.k), {n, c.heads, c.head_dim});
        const T v = g.reshape(blocks::linear(g, x, l.v), {n, c.heads, c.head_dim});
        const T kc = g.kv_store(g.param(l.k_cache), k, seq, pos);
        const T vc = g.kv_store(g.param(l.v_cache), v, seq, pos);
        const T a = g.attention(q, kc, vc, seq, pos, 1.0f / std::sqrt(static_cast<float>(c.head_dim)));
        return blocks::linear(g, g.reshape(a, {n, c.dim}), l.o);
    }

    void declare(Host& h, const mnemo_context_params& ctx) {
        const PkmConfig& c = cfg_;
        // GET_ROWS tables (and, tied, the prediction's MATMUL): they may stay block-quantized.
        embed_ = h.weight("embeddings.weight", {c.vocab, c.dim}, plugin::kLinearDTypes);
        pos_embed_ = h.weight("position_embeddings.weight", {c.max_positions, c.dim}, plugin::kLinearDTypes);
        if (c.lang_id >= 0) {
            // Every token carries the same language: its embedding row is one constant vector.
            const mnemo_tid table = h.weight("lang_embeddings.weight", {c.n_langs, c.dim});
            const std::vector<float> all = h.read_f32(table, c.n_langs * c.dim);
            lang_row_ = h.constant_f32(
                "lang_embeddings.row",
                std::vector<float>(all.begin() + c.lang_id * c.dim, all.begin() + (c.lang_id + 1) * c.dim));
        }
        ln_emb_ = declare_norm(h, "layer_norm_emb", c.dim);
        for (int64_t i = 0; i < c.layers; ++i) {
            const std::string id = std::to_string(i);
            const std::string att = "attentions." + id + ".";
            Layer l;
            l.q = declare_linear(h, att + "q_lin", c.dim, c.dim, true);
            l.k = declare_linear(h, att + "k_lin", c.dim, c.dim, true);
            l.v = declare_linear(h, att + "v_lin", c.dim, c.dim, true);
            l.o = declare_linear(h, att + "out_lin", c.dim, c.dim, true);
            l.k_cache = blocks::declare_kv_cache(h, att + "k_cache", ctx, c.heads, c.head_dim);
            l.v_cache = blocks::declare_kv_cache(h, att + "v_cache", ctx, c.heads, c.head_dim);
            l.ln1 = declare_norm(h, "layer_norm1." + id, c.dim);
            l.ln2 = declare_norm(h, "layer_norm2." + id, c.dim);
            if (c.has_memory(i, MemWhere::In)) {
                l.mem_in = std::make_unique<Memory>(declare_memory(h, c, id + "_in"));
            } else {
                l.lin1 = declare_linear(h, "ffns." + id + ".lin1", c.ffn, c.dim, true);
                l.lin2 = declare_linear(h, "ffns." + id + ".lin2", c.dim, c.ffn, true);
            }
            if (c.has_memory(i, MemWhere::After))
                l.mem_after = std::make_unique<Memory>(declare_memory(h, c, id + "_after"));
            layers_.push_back(std::move(l));
        }
        // XLM ties pred_layer.proj.weight to the embeddings (share_inout_emb) but its state dict
        // still holds the tied copy; use the embeddings unless the model is untied.
        pred_w_ = c.tied ? embed_ : h.weight("pred_layer.proj.weight", {c.vocab, c.dim}, plugin::kLinearDTypes);
        pred_b_ = declare_bias(h, "pred_layer.proj.bias", c.vocab);
    }

    PkmConfig cfg_;
    mnemo_tid embed_ = -1, pos_embed_ = -1, lang_row_ = -1, pred_w_ = -1, pred_b_ = -1;
    Norm ln_emb_;
    std::vector<Layer> layers_;
};

}  // namespace
}  // namespace mnemo::pkm

MNEMO_PLUGIN(mnemo::pkm::PkmModel, "pkm", "XLM transformers with product-key memory layers (Lample et al. 2019)", "pkm")
