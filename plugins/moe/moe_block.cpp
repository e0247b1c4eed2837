#include "moe_block.hpp"

#include <vector>

namespace mnemo::moe {

using plugin::Graph;
using plugin::Host;
using plugin::T;

MoeBlock declare_moe(const Host& h, const MoeConfig& c, const std::string& prefix) {
    const int64_t d = c.attn.hidden, f = c.attn.ffn;
    const std::string block = prefix + c.names.block + ".";
    const auto expert_names = [&](const std::string& proj) {
        std::vector<std::string> names;
        for (int64_t e = 0; e < c.experts; ++e)
            names.push_back(block + "experts." + std::to_string(e) + "." + proj + ".weight");
        return names;
    };
    const std::string extra = block + "experts." + std::to_string(c.experts) + "." + c.names.gate + ".weight";
    if (h.has_weight(extra))
        throw plugin::PluginError("the checkpoint holds '" + extra + "', but config.json says there are " +
                                  std::to_string(c.experts) + " experts per layer");
    MoeBlock b;
    b.router = h.weight(block + "gate.weight", {c.experts, d}, plugin::kLinearDTypes);  // MATMUL's W
    b.gate = h.weight_stack(expert_names(c.names.gate), {f, d}, plugin::kLinearDTypes);
    b.up = h.weight_stack(expert_names(c.names.up), {f, d}, plugin::kLinearDTypes);
    b.down = h.weight_stack(expert_names(c.names.down), {d, f}, plugin::kLinearDTypes);
    return b;
}

T moe_ffn(const Graph& g, const MoeConfig& c, const MoeBlock& b, T x) {
    const T logits = g.matmul(x, g.param(b.router));  // [N, E]
    T experts, weights;                                // [N, k] i32, [N, k] f32
    if (c.router == Router::SoftmaxTopk) {
        // Rank by the probabilities, as OLMoE does (same order as the logits, softmax being
        // monotonic, but ties after rounding then break the same way).
        const T probs = g.softmax(logits);
        experts = g.argtopk(probs, c.top_k);
        // p_i / Σ_chosen p_j = exp(l_i) / Σ_chosen exp(l_j): renormalising the chosen
        // probabilities is a softmax over the chosen logits.
        weights = c.norm_topk_prob ? g.softmax(g.take_along(logits, experts)) : g.take_along(probs, experts);
    } else {
        experts = g.argtopk(logits, c.top_k);
        weights = g.softmax(g.take_along(logits, experts));
    }
    return g.moe_ffn(x, experts, weights, g.param(b.gate), g.param(b.up), g.param(b.down));
}

}  // namespace mnemo::moe
