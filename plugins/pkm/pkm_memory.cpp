#include "pkm_memory.hpp"

#include <cmath>
#include <vector>

#include "pkm_linear.hpp"

namespace mnemo::pkm {

using plugin::Graph;
using plugin::Host;
using plugin::PluginError;
using plugin::T;

namespace {

// Eval-mode BatchNorm1d (torch.nn.BatchNorm1d with track_running_stats, model.eval()) is the
// fixed affine map y = (z - running_mean) / sqrt(running_var + eps) * gamma + beta. With
// z = W x + b it becomes y = (W x) * scale + shift, scale = gamma / sqrt(running_var + eps),
// shift = (b - running_mean) * scale + beta: two [H*k] constants, W stays the stored weight.
void fold_batchnorm(const Host& h, const PkmConfig& c, const std::string& prefix, Memory& m) {
    const int64_t n = c.mem_heads * c.mem_k_dim;
    const std::string bn = prefix + "query_proj.query_mlps.1.";
    const std::vector<float> gamma = h.read_f32(h.weight(bn + "weight", {n}), n);
    const std::vector<float> beta = h.read_f32(h.weight(bn + "bias", {n}), n);
    const std::vector<float> mean = h.read_f32(h.weight(bn + "running_mean", {n}), n);
    const std::vector<float> var = h.read_f32(h.weight(bn + "running_var", {n}), n);
    std::vector<float> bias(static_cast<size_t>(n), 0.0f);
    if (m.query.b >= 0) bias = h.read_f32(m.query.b, n);
    std::vector<float> scale(static_cast<size_t>(n)), shift(static_cast<size_t>(n));
    for (size_t i = 0; i < scale.size(); ++i) {
        const double denom = static_cast<double>(var[i]) + c.mem_bn_eps;
        if (!(denom > 0) || !std::isfinite(denom))
            throw PluginError("tensor '" + bn + "running_var' [" + std::to_string(i) + "] = " + std::to_string(var[i]) +
                              ": running_var + mem_bn_eps must be a positive number");
        const double s = static_cast<double>(gamma[i]) / std::sqrt(denom);
        scale[i] = static_cast<float>(s);
        shift[i] = static_cast<float>((static_cast<double>(bias[i]) - mean[i]) * s + beta[i]);
        if (!std::isfinite(scale[i]) || !std::isfinite(shift[i]))
            throw PluginError("tensors '" + bn + "*': the folded batch norm of channel " + std::to_string(i) +
                              " is not finite");
    }
    m.bn_scale = h.constant_f32(bn + "folded_scale", scale);
    m.bn_shift = h.constant_f32(bn + "folded_shift", shift);
}

}  // namespace

Memory declare_memory(const Host& h, const PkmConfig& c, const std::string& key) {
    const std::string p = "memories." + key + ".";
    Memory m;
    m.query =
        declare_linear(h, p + "query_proj.query_mlps.0", c.mem_heads * c.mem_k_dim, c.dim, c.mem_query_bias);
    if (c.mem_query_batchnorm) fold_batchnorm(h, c, p, m);
    m.keys = h.weight(p + "keys", {c.mem_heads, 2, c.mem_n_keys, c.mem_k_dim / 2});
    m.values = h.weight(p + "values.weight", {c.mem_n_keys * c.mem_n_keys, c.mem_v_dim}, plugin::kTableDTypes);
    return m;
}

T memory(const Graph& g, const PkmConfig& c, const Memory& m, T x) {
    const int64_t n = g.n_tokens(), heads = c.mem_heads, half = c.mem_k_dim / 2, knn = c.mem_knn;
    T q;
    if (m.bn_scale >= 0)
        q = g.add(g.mul(g.matmul(x, g.param(m.query.w)), g.param(m.bn_scale)), g.param(m.bn_shift));
    else
        q = blocks::linear(g, x, m.query);
    // XLM views the query as [N*H, k] and splits each head's k into halves q1 | q2: that is
    // PK_SCORE's [N, Q=H, 2, k/2] with one query per head. keys [H, 2, n_keys, k/2] are
    // PK_SCORE's [2H, n_keys, k/2, Rk=1] (side t of head h is row 2h+t).
    const T q4 = g.reshape(q, {n, heads, 2, half});
    const T keys = g.reshape(g.param(m.keys), {2 * heads, c.mem_n_keys, half, 1});
    const T scores = g.pk_score(q4, keys, heads, 1);  // [N, 2H, n_keys, 1]
    const T idx = g.pk_topk(scores, knn, knn);        // [N, H, knn]: i * n_keys + j
    T w = g.reshape(g.pk_pair_scores(scores, idx), {n, heads, knn});
    const float inv_t = static_cast<float>(1.0 / c.mem_temperature);
    if (c.mem_score_softmax)
        w = g.softmax(w, inv_t);  // per head over its knn scores
    else if (c.mem_temperature != 1.0)
        w = g.scale(w, inv_t);
    // Heads are summed: one bag of H*knn (row, weight) entries per token.
    return g.embedding_bag(g.param(m.values), g.reshape(idx, {n, heads * knn}), g.reshape(w, {n, heads * knn}));
}

}  // namespace mnemo::pkm
