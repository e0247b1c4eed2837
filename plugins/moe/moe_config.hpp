// Mixture-of-experts hyper-parameters of OLMoE, Mixtral and our generic "moe" type, read from
// config.json on top of the Llama-family attention config they share.
#pragma once

#include <cstdint>
#include <string>

#include "llama_config.hpp"
#include "mnemo/plugin.hpp"

namespace mnemo::moe {

// How the router turns its logits l = x W_gᵀ [E] into the weights of the k chosen experts.
enum class Router {
    // OLMoE: p = softmax(l) over all E experts, the k largest p are chosen and weighted by p
    // itself (which sum to < 1), or by p / Σ_chosen p when norm_topk_prob.
    SoftmaxTopk,
    // Mixtral: the k largest l are chosen and weighted by softmax over those k logits (they sum
    // to 1). Mathematically the same as SoftmaxTopk with norm_topk_prob.
    TopkSoftmax,
};

// Where a layer's router and experts live in the checkpoint.
struct TensorNames {
    std::string block;   // "mlp" (OLMoE, moe) or "block_sparse_moe" (Mixtral)
    std::string gate;    // expert gate projection: "gate_proj" or "w1"
    std::string up;      // "up_proj" or "w3"
    std::string down;    // "down_proj" or "w2"
};

struct MoeConfig {
    llama::LlamaConfig attn;  // attention, norms, RoPE, vocab (ffn = each expert's width)
    int64_t experts = 0;      // E
    int64_t top_k = 0;        // k experts per token
    Router router = Router::SoftmaxTopk;
    bool norm_topk_prob = false;  // SoftmaxTopk only: renormalise the k chosen probabilities
    TensorNames names;
};

// Reads and checks config.json for model_type olmoe, mixtral or moe; errors name the field.
// n_ctx is the context the model is opened with (Mixtral's sliding window must cover it).
MoeConfig read_moe_config(const plugin::Host& host, int64_t n_ctx);

// "olmoe (2 layers, dim 32, ..., 8 experts, top 2, softmax then top-k)"
std::string describe(const MoeConfig& c);

}  // namespace mnemo::moe
