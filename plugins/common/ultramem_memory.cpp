// Forward of one memory layer for the tokens' inputs x [N, D] (UltraMem arXiv 2411.12364 eqs.
// 4-17, UltraMemV2 arXiv 2508.18756 eqs. 12 and 15, with the official code's semantics):
//
//   q      = query_proj x, cut into kdim chunks, each RMS-normed with query_norm;
//            head h reads the 2*kdim block h // 2: row query = its first kdim, column = the rest
//   S_t    = q_t · RMSNorm_kdim(keys_t) ⊙ keys_norm        [2H, Nk, R]      (eq. 4; no 1/√d)
//   s1, s2 = u·S_row, v·S_col;  I1, I2 = top-knn of each    (eqs. 6-9, u/v = stored buffers)
//   T_c    = S_row[I1] C_c S_col[I2]ᵀ; best knn pairs by Σ_c T_c; virtual = I1·Nk + I2 (eqs. 10, 16)
//   s      = shuffle[virtual];  g = s / value_num;  row = (s % value_num + offset) % A
//   V2:      T_c ← act(pre_values[row] · pre_values_proj x) · T_c        (V2 eq. 15; act = id / GELU)
//   out[g, slice_c] += T_c · V[row, slice_c]                (IVE eq. 15 + MCS eq. 17; raw scores)
//   y      = values_proj · out  (out flattened g-major; V2 with value_expand_time 1: Σ_g first)
#include "ultramem_memory.hpp"

#include <algorithm>

namespace mnemo::ultramem {

using plugin::Graph;
using plugin::Host;
using plugin::PluginError;
using plugin::T;

namespace {

std::string num(int64_t v) { return std::to_string(v); }

void check_permutation(const Host& h, mnemo_tid id, const std::string& name, int64_t count) {
    const std::vector<int32_t> p = h.read_i32(id, count);
    std::vector<int64_t> seen(static_cast<size_t>(count), -1);
    for (int64_t i = 0; i < count; ++i) {
        const int64_t v = p[static_cast<size_t>(i)];
        if (v < 0 || v >= count)
            throw PluginError(name + " is not a permutation of 0.." + num(count - 1) + ": entry " + num(i) + " is " +
                              num(v) + ", outside that range");
        if (seen[static_cast<size_t>(v)] >= 0)
            throw PluginError(name + " is not a permutation of 0.." + num(count - 1) + ": value " + num(v) +
                              " appears at entries " + num(seen[static_cast<size_t>(v)]) + " and " + num(i) +
                              " (every virtual value must map to exactly one physical one)");
        seen[static_cast<size_t>(v)] = i;
    }
}

mnemo_tid rank1_buffer(const Host& h, const MemoryLayersConfig& c, const std::string& name) {
    if (!h.has_weight(name))
        throw PluginError("tensor '" + name + "' is missing: the rank-1 Tucker buffers tucker_core_u/v select the " +
                          "stage-1 candidates and are set by training (an SVD of the summed core before each step); " +
                          "convert them from the checkpoint's buffers (tools/convert/ultramem_to_mnemo.py), do not "
                          "drop them");
    const mnemo_tid id = h.weight(name, {c.heads, c.rank});
    const std::vector<float> w = h.read_f32(id, c.heads * c.rank);
    for (int64_t hd = 0; hd < c.heads; ++hd) {
        bool zero = true;
        for (int64_t r = 0; r < c.rank; ++r) zero = zero && w[static_cast<size_t>(hd * c.rank + r)] == 0.0f;
        if (zero)
            throw PluginError("tensor '" + name + "' is all zero for memory head " + num(hd) +
                              ": these buffers start at zero and are only set by training steps, so every stage-1 "
                              "score would tie (an untrained or incompletely exported checkpoint)");
    }
    return id;
}

}  // namespace

MemoryLayer declare_memory_layer(const Host& h, const llama::LlamaConfig& b, const MemoryLayersConfig& c, int64_t l) {
    const int64_t D = b.hidden;
    const std::string p = "model.mem_blocks." + num(l) + ".";
    MemoryLayer m;
    m.index = l;
    // The projections only feed MATMUL (may stay block-quantized); the tables feed EMBEDDING_BAG.
    m.query_proj = h.weight(p + "query_proj.weight", {2 * c.query_blocks * c.kdim, D}, plugin::kLinearDTypes);
    m.query_norm = h.weight(p + "query_norm.weight", {c.kdim});
    m.keys = h.weight(p + "keys", {2 * c.heads, c.sub_keys, c.kdim, c.rank});
    m.keys_norm = h.weight(p + "keys_norm.weight", {c.kdim});
    for (int64_t i = 0; i < c.cores; ++i) m.cores.push_back(h.weight(p + "tucker_core." + num(i), {c.heads, c.rank, c.rank}));
    m.u = rank1_buffer(h, c, p + "tucker_core_u");
    m.v = rank1_buffer(h, c, p + "tucker_core_v");
    m.shuffle = h.weight(p + "shuffle_index", {c.virtual_values}, plugin::dtype_bit(MNEMO_DTYPE_I32));
    check_permutation(h, m.shuffle, p + "shuffle_index", c.virtual_values);
    if (!c.v2()) m.values = h.weight(p + "values_for_look_up", {c.table_rows, c.vdim}, plugin::kTableDTypes);
    if (c.v2() && c.pre_vdim > 0) m.pre_values_proj = h.weight(p + "pre_values_proj.weight", {c.pre_vdim, D}, plugin::kLinearDTypes);
    m.values_proj = h.weight(p + "values_proj.weight", {D, c.values_proj_in()}, plugin::kLinearDTypes);
    return m;
}

SharedTables declare_shared_tables(const Host& h, const MemoryLayersConfig& c) {
    SharedTables s;
    if (!c.v2() || c.memories.empty()) return s;
    s.values = h.weight("model.full_memory_layer.values_for_look_up", {c.table_rows, c.vdim}, plugin::kTableDTypes);
    if (c.pre_vdim > 0)
        s.pre_values = h.weight("model.full_memory_layer.pre_values_for_look_up", {c.table_rows, c.pre_vdim}, plugin::kTableDTypes);
    return s;
}

T memory_layer(const Graph& g, const llama::LlamaConfig& b, const MemoryLayersConfig& c, const MemoryLayer& m,
               const SharedTables& s, T x) {
    const int64_t n = g.n_tokens();
    const float eps = static_cast<float>(b.rms_eps);
    const int64_t bag = c.heads * c.knn;  // heads concatenated, head-major

    // Queries: every kdim chunk normed alone; [N, blocks, 2 (row, column), kdim].
    T q = g.reshape(g.matmul(x, g.param(m.query_proj)), {n, 2 * c.query_blocks, c.kdim});
    q = g.reshape(g.rms_norm(q, g.param(m.query_norm), eps), {n, c.query_blocks, 2, c.kdim});
    const T scores = g.pk_score(q, g.param(m.keys), g.param(m.keys_norm), eps, c.heads, /*share=*/2);

    std::vector<T> cores;
    for (mnemo_tid id : m.cores) cores.push_back(g.param(id));
    const T picked = g.pk_topk(scores, g.param(m.u), g.param(m.v), cores, c.knn, c.knn);      // [N, H, knn]
    T weights = g.reshape(g.pk_pair_scores(scores, picked, cores), {n, bag, c.cores});     // raw T_c
    const T virt = g.reshape(picked, {n, bag});

    // V1 keeps the E groups apart (one projector slice each). V2 with value_expand_time 1 sums them,
    // which is the same bag without the group (the group still bounds-checks the shuffle output).
    const bool grouped = !c.sum_groups();
    const T table = g.param(c.v2() ? s.values : m.values);
    const T idx = g.mem_index(virt, g.param(m.shuffle), c.value_num, c.window_offset(m.index), c.table_rows, c.groups,
                              grouped);
    if (c.v2() && c.pre_vdim > 0) {
        const T pre_x = g.matmul(x, g.param(m.pre_values_proj));  // [N, pre_vdim]
        weights = g.peer_gate(g.param(s.pre_values), idx, pre_x, weights, c.glu_act ? 1 : 0);
    }
    const T out = g.embedding_bag(table, idx, weights, grouped ? c.groups : 1);  // [N, groups*vdim] or [N, vdim]
    return g.matmul(out, g.param(m.values_proj));
}

MemoryLayers declare_memory_layers(const Host& h, const llama::LlamaConfig& b, const MemoryLayersConfig& c) {
    MemoryLayers m;
    m.shared = declare_shared_tables(h, c);
    for (int64_t l = 0; l < static_cast<int64_t>(c.memories.size()); ++l) m.layers.push_back(declare_memory_layer(h, b, c, l));
    return m;
}

MemoryPass::MemoryPass(const Graph& g, const llama::LlamaConfig& b, const MemoryLayersConfig& c, const MemoryLayers& m,
                       int64_t visited_blocks)
    : g_(g), b_(b), c_(c), m_(m), visited_(visited_blocks) {}

T MemoryPass::after_block(int64_t i, T x, T h) {
    for (size_t l = 0; l < m_.layers.size(); ++l) {
        const Placement& p = c_.memories[l];
        if (p.read_block == i && p.add_block < visited_)
            pending_[p.add_block].push_back(memory_layer(g_, b_, c_, m_.layers[l], m_.shared, x));
    }
    if (auto it = pending_.find(i); it != pending_.end()) {
        for (T y : it->second) h = g_.add(h, y);
        pending_.erase(it);
    }
    return h;
}

}  // namespace mnemo::ultramem
