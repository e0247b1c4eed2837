#include "hashing_memory.hpp"

#include <vector>

namespace mnemo::memory_plus {
namespace {

using plugin::Graph;
using plugin::Host;
using plugin::T;

// With shared values lingua keeps the table under the first memory layer's name only; a copy under
// a later layer would be ambiguous (which one is meant?), so it is refused rather than ignored.
void refuse_copy(const Host& h, const MemoryPlusConfig& c, const std::string& name) {
    if (h.has_weight(name))
        throw plugin::PluginError("checkpoint: tensor '" + name + "' is present, but mem_share_values is true: the one " +
                                  "shared table is read from layer " + std::to_string(c.first_memory_layer()) +
                                  " (remove the copy, or set mem_share_values to false)");
}

ValueTables declare_tables(const Host& h, const MemoryPlusConfig& c, const std::string& prefix) {
    const int64_t rows = c.n_keys * c.n_keys;
    ValueTables t;
    if (c.peer) {
        t.values_u = h.weight(prefix + "values_u.weight", {rows, c.base.hidden}, plugin::kTableDTypes);
        t.values_v = h.weight(prefix + "values_v.weight", {rows, c.base.hidden}, plugin::kTableDTypes);
    } else {
        t.values = h.weight(prefix + "values.weight", {rows, c.v_dim}, plugin::kTableDTypes);
    }
    return t;
}

}  // namespace

HashingMemory declare_hashing_memory(const Host& h, const MemoryPlusConfig& c, const std::string& prefix,
                                     const ValueTables* shared) {
    const int64_t d = c.base.hidden;
    HashingMemory m;
    m.query = blocks::declare_linear(h, prefix + "query_proj.query_mlps.0", c.heads * c.k_dim, d, c.query_bias);
    m.keys = h.weight(prefix + "keys", {2 * c.heads * c.n_keys, c.k_dim / 2});
    if (shared) {
        for (const char* t : {"values.weight", "values_u.weight", "values_v.weight"}) refuse_copy(h, c, prefix + t);
        m.tables = *shared;
    } else {
        m.tables = declare_tables(h, c, prefix);
    }
    // The PEER variant still constructs value_proj / swilu_projection in lingua but never applies
    // them, so they are not declared (a converted folder does not carry them).
    if (!c.peer && c.swilu) m.swilu = blocks::declare_linear(h, prefix + "swilu_projection", c.v_dim, d, true);
    if (c.value_proj()) m.value_proj = blocks::declare_linear(h, prefix + "value_proj", d, c.v_dim, true);
    if (c.gated) m.gating = blocks::declare_linear(h, prefix + "gating", 1, d, true);
    return m;
}

GateConstants declare_gate_constants(const Host& h, int64_t hidden) {
    GateConstants k;
    const std::vector<float> pair = {1.0f, 0.0f};
    k.pair = h.constant("memory_plus.gate_pair", MNEMO_DTYPE_F32, {2, 1}, pair.data());
    std::vector<float> broadcast(static_cast<size_t>(hidden * 2), 0.0f);
    for (int64_t d = 0; d < hidden; ++d) broadcast[static_cast<size_t>(2 * d)] = 1.0f;
    k.broadcast = h.constant("memory_plus.gate_broadcast", MNEMO_DTYPE_F32, {hidden, 2}, broadcast.data());
    return k;
}

T hashing_memory(const Graph& g, const MemoryPlusConfig& c, const HashingMemory& m, const GateConstants& gate, T x) {
    const int64_t n = g.n_tokens();
    const int64_t half = c.k_dim / 2;

    // Queries [N, H, 2, k/2]: head h's row half then column half, as lingua splits q_h.
    const T q = g.reshape(blocks::linear(g, x, m.query), {n, c.heads, 2, half});
    // keys [2H n_keys, k/2] viewed [2H, n_keys, k/2, 1]: (head, side) major, as PK_SCORE reads them.
    const T keys = g.reshape(g.param(m.keys), {2 * c.heads, c.n_keys, half, 1});
    const T scores = g.pk_score(q, keys, c.heads, 1);         // [N, 2H, n_keys, 1]
    const T rows = g.pk_topk(scores, c.knn, c.knn);             // [N, H, knn]: i n_keys + j, best first
    const T pair = g.pk_pair_scores(scores, rows);              // [N, H, knn, 1]: s¹[i] + s²[j]
    const T w = g.softmax(g.reshape(pair, {n, c.heads, c.knn}));  // per head, over its knn rows

    // One bag of H knn entries per token: the heads are summed.
    const T idx = g.reshape(rows, {n, c.heads * c.knn});
    const T wf = g.reshape(w, {n, c.heads * c.knn});

    T out;
    if (c.peer) {
        const T a = g.peer_gate(g.param(m.tables.values_u), idx, x, wf, /*GELU erf*/ 1);
        out = g.embedding_bag(g.param(m.tables.values_v), idx, a);
    } else {
        out = g.embedding_bag(g.param(m.tables.values), idx, wf);  // [N, v]
        if (c.swilu) out = g.swiglu(blocks::linear(g, x, m.swilu), out);
        if (c.value_proj()) out = blocks::linear(g, out, m.value_proj);
    }
    if (c.gated) {
        const T z = blocks::linear(g, x, m.gating);                                  // [N, 1]
        const T p = g.softmax(g.matmul(z, g.param(gate.pair)));                      // [N, 2]: (σ(z), 1 - σ(z))
        out = g.mul(out, g.matmul(p, g.param(gate.broadcast)));                      // σ(z) in every column
    }
    return out;
}

}  // namespace mnemo::memory_plus
