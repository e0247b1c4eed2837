// Reference of ATTN_MASS (Memory3 §3.3 token selection): how much attention each key token of a
// short reference receives from the counted tokens of its own sequence, summed over the query
// heads of each kv group. Straight from the formula in mnemo_abi.h, quadratic per sequence, in
// double; no index can be bad (a negative sequence id only means "not counted").
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {

void attn_mass(const Ctx& c) {
    const In& q = c.in[0];
    const In& k = c.in[1];
    const In& seq = c.in[2];
    const In& pos = c.in[3];
    const bool softmax = c.node.iparams[0] == 0;
    const int64_t first = c.node.iparams[1];
    const double scale = c.node.fparams[0];
    const int64_t n_tok = q.dim(0), hq = q.dim(1), d = q.dim(2), hkv = k.dim(1), group = hq / hkv;
    auto counted = [&](int64_t t) { return seq.i32(t) >= 0 && pos.i32(t) >= first; };

    std::vector<double> mass(static_cast<size_t>(n_tok * hkv), 0.0), a(static_cast<size_t>(n_tok));
    for (int64_t i = 0; i < n_tok; ++i) {
        if (!counted(i)) continue;
        for (int64_t h = 0; h < hq; ++h) {
            const int64_t g = h / group;
            // a[j] = exp(s_h(i, j)) for the keys i sees; the max is taken out before exp and put
            // back into the normaliser, so large scores neither overflow nor change the result.
            double mx = -INFINITY;
            for (int64_t j = 0; j < n_tok; ++j) {
                if (!counted(j) || seq.i32(j) != seq.i32(i)) continue;
                double dot = 0.0;
                for (int64_t e = 0; e < d; ++e)
                    dot += static_cast<double>(q.f((i * hq + h) * d + e)) * static_cast<double>(k.f((j * hkv + g) * d + e));
                a[static_cast<size_t>(j)] = scale * dot;
                mx = std::max(mx, a[static_cast<size_t>(j)]);
            }
            double sum = 0.0;
            for (int64_t j = 0; j < n_tok; ++j)
                if (counted(j) && seq.i32(j) == seq.i32(i)) sum += std::exp(a[static_cast<size_t>(j)] - mx);
            for (int64_t j = 0; j < n_tok; ++j) {
                if (!counted(j) || seq.i32(j) != seq.i32(i)) continue;
                const double s = a[static_cast<size_t>(j)];
                mass[static_cast<size_t>(j * hkv + g)] += softmax ? std::exp(s - mx) / sum : std::exp(s);
            }
        }
    }
    for (int64_t i = 0; i < n_tok * hkv; ++i) c.out[i] = static_cast<float>(mass[static_cast<size_t>(i)]);
}

}  // namespace mnemo::reference
