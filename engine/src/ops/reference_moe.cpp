// Reference of the routed experts of an MoE FFN (MOE_FFN), as OLMoE and Mixtral compute them:
// every chosen expert is a SwiGLU MLP, and the token's output is the router-weighted sum.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {

// out[n] = sum_j w[n, j] * down[e] (silu(gate[e] x[n]) * (up[e] x[n])),  e = idx[n, j]
void moe_ffn(const Ctx& c) {
    const In& x = c.in[0];
    const In& idx = c.in[1];
    const In& w = c.in[2];
    const In& gate = c.in[3];
    const In& up = c.in[4];
    const In& down = c.in[5];
    const int64_t n_tok = x.dim(0), dim = x.dim(1), k = idx.dim(1), experts = gate.dim(0), hidden = gate.dim(1);
    for (int64_t i = 0; i < n_tok * k; ++i)
        if (idx.i32(i) < 0 || idx.i32(i) >= experts)
            c.fail("token " + std::to_string(i / k) + " choice " + std::to_string(i % k) + " is expert " +
                   std::to_string(idx.i32(i)) + ", outside 0.." + std::to_string(experts - 1));
    std::vector<double> xd(static_cast<size_t>(dim)), h(static_cast<size_t>(hidden)), acc(static_cast<size_t>(dim));
    // One expert row at a time as floats (a block-quantized row through the reference dequantizer).
    std::vector<float> grow(static_cast<size_t>(dim)), urow(static_cast<size_t>(dim)), drow(static_cast<size_t>(hidden));
    for (int64_t n = 0; n < n_tok; ++n) {
        for (int64_t d = 0; d < dim; ++d) xd[static_cast<size_t>(d)] = x.f(n * dim + d);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < k; ++j) {
            const int64_t e = idx.i32(n * k + j);
            const double wj = w.f(n * k + j);
            for (int64_t f = 0; f < hidden; ++f) {
                double g = 0.0, u = 0.0;
                gate.row_f32(e * hidden + f, grow.data());
                up.row_f32(e * hidden + f, urow.data());
                for (int64_t d = 0; d < dim; ++d) {
                    g += xd[static_cast<size_t>(d)] * grow[static_cast<size_t>(d)];
                    u += xd[static_cast<size_t>(d)] * urow[static_cast<size_t>(d)];
                }
                h[static_cast<size_t>(f)] = g / (1.0 + std::exp(-g)) * u;
            }
            for (int64_t d = 0; d < dim; ++d) {
                double y = 0.0;
                down.row_f32(e * dim + d, drow.data());
                for (int64_t f = 0; f < hidden; ++f) y += drow[static_cast<size_t>(f)] * h[static_cast<size_t>(f)];
                acc[static_cast<size_t>(d)] += wj * y;
            }
        }
        for (int64_t d = 0; d < dim; ++d) c.out[n * dim + d] = static_cast<float>(acc[static_cast<size_t>(d)]);
    }
}

}  // namespace mnemo::reference
