#include "moe_config.hpp"

#include <sstream>

#include "config_checks.hpp"

namespace mnemo::moe {

using config::require;

namespace {

// OLMoE's attention: QK-norm over the whole projections, head_dim always hidden / heads.
void read_olmoe(const plugin::Host& h, MoeConfig& c) {
    llama::LlamaConfig& a = c.attn;
    a.qk_norm = true;
    a.mlp_bias = false;  // OlmoeMLP has no biases whatever the config says
    a.rms_eps = h.get_float("rms_norm_eps", 1e-5);
    require(a.hidden % a.heads == 0 && a.head_dim == a.hidden / a.heads,
            "olmoe derives head_dim from hidden_size / num_attention_heads (" + std::to_string(a.hidden) + " / " +
                std::to_string(a.heads) + "); head_dim " + std::to_string(a.head_dim) + " is not supported");
    // clip_qkv clamps q, k and v to [-c, c]; no released OLMoE checkpoint sets it.
    require(!h.has("clip_qkv"), "clip_qkv is not supported (only null)");
    c.experts = h.get_int("num_experts", 64);
    c.top_k = h.get_int("num_experts_per_tok", 8);
    c.norm_topk_prob = h.get_bool("norm_topk_prob", false);
    c.router = Router::SoftmaxTopk;
    c.names = {"mlp", "gate_proj", "up_proj", "down_proj"};
}

// Mixtral's attention is Llama's without biases; defaults are MixtralConfig's.
void read_mixtral(const plugin::Host& h, MoeConfig& c, int64_t n_ctx) {
    llama::LlamaConfig& a = c.attn;
    a.qkv_bias = a.o_bias = a.mlp_bias = false;
    a.rms_eps = h.get_float("rms_norm_eps", 1e-5);
    a.rope_theta = h.get_float("rope_theta", 1e6);
    require(a.rope_theta > 0, "rope_theta must be > 0");
    if (h.has("sliding_window")) {
        const int64_t w = h.get_int("sliding_window");
        require(w >= n_ctx, "sliding_window " + std::to_string(w) + " is shorter than the context of " +
                                std::to_string(n_ctx) +
                                " positions; sliding-window attention is not supported, so open the model with a "
                                "context of at most " +
                                std::to_string(w) + " positions");
    }
    c.experts = h.get_int("num_local_experts", 8);
    c.top_k = h.get_int("num_experts_per_tok", 2);
    c.router = Router::TopkSoftmax;
    c.names = {"block_sparse_moe", "w1", "w3", "w2"};
}

// Our generic type (benchmark models): Llama attention, optional QK-norm, OLMoE tensor names and
// the router style chosen by "router".
void read_generic(const plugin::Host& h, MoeConfig& c) {
    llama::LlamaConfig& a = c.attn;
    require(!a.mlp_bias, "mlp_bias is not supported: experts have no biases");
    a.qk_norm = h.get_bool("qk_norm", false);
    c.experts = h.get_int("num_experts");
    c.top_k = h.get_int("num_experts_per_tok");
    const std::string router = h.get_string("router", "softmax_topk");
    if (router == "softmax_topk") {
        c.router = Router::SoftmaxTopk;
        c.norm_topk_prob = h.get_bool("norm_topk_prob", false);
    } else if (router == "topk_softmax") {
        c.router = Router::TopkSoftmax;
    } else {
        throw plugin::PluginError("config.json: router '" + router +
                                  "' is not supported (supported: softmax_topk (OLMoE), topk_softmax (Mixtral))");
    }
    c.names = {"mlp", "gate_proj", "up_proj", "down_proj"};
}

}  // namespace

MoeConfig read_moe_config(const plugin::Host& h, int64_t n_ctx) {
    MoeConfig c;
    c.attn = llama::read_config(h);
    const std::string& type = c.attn.model_type;
    const std::string act = h.get_string("hidden_act", "silu");
    require(act == "silu", "hidden_act '" + act + "' is not supported (experts are SwiGLU: silu)");
    std::string experts_field = "num_experts";
    if (type == "olmoe") {
        read_olmoe(h, c);
    } else if (type == "mixtral") {
        read_mixtral(h, c, n_ctx);
        experts_field = "num_local_experts";
    } else if (type == "moe") {
        read_generic(h, c);
    } else {
        throw plugin::PluginError("config.json: model_type '" + type + "' is not one of olmoe, mixtral, moe");
    }
    require(c.experts >= 1, experts_field + " must be >= 1, got " + std::to_string(c.experts));
    require(c.top_k >= 1 && c.top_k <= c.experts, "num_experts_per_tok (" + std::to_string(c.top_k) +
                                                      ") must be between 1 and " + experts_field + " (" +
                                                      std::to_string(c.experts) + ")");
    return c;
}

std::string describe(const MoeConfig& c) {
    std::string base = llama::describe(c.attn);  // "type (..., ffn F, ...)"
    if (!base.empty() && base.back() == ')') base.pop_back();
    std::ostringstream s;
    s << base << "; " << c.experts << " experts, top " << c.top_k << ", router ";
    if (c.router == Router::TopkSoftmax)
        s << "top-k then softmax";
    else
        s << "softmax then top-k" << (c.norm_topk_prob ? " renormalised" : "");
    s << ")";
    return s.str();
}

}  // namespace mnemo::moe
