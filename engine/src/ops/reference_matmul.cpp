// Reference of MATMUL: y = x W^T, every dot product in double. A block-quantized W (q8_0 ... q6_k)
// is read through the reference dequantizer: its weights are exactly the floats it decodes to.
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {

void matmul(const Ctx& c) {
    const In& x = c.in[0];
    const In& w = c.in[1];
    const int64_t k_dim = x.last(), m_dim = w.dim(0), rows = leading_rows(x.shape);
    // Decode the activations once and each weight row once (outer loop over W rows), so the
    // inner dot product is a plain double loop: the 4096x4096 conformance cases stay quick.
    std::vector<double> xd(static_cast<size_t>(rows * k_dim)), wrow(static_cast<size_t>(k_dim));
    std::vector<float> wf(static_cast<size_t>(k_dim));
    for (int64_t i = 0; i < rows * k_dim; ++i) xd[static_cast<size_t>(i)] = x.f(i);
    for (int64_t m = 0; m < m_dim; ++m) {
        w.row_f32(m, wf.data());
        for (int64_t k = 0; k < k_dim; ++k) wrow[static_cast<size_t>(k)] = wf[static_cast<size_t>(k)];
        for (int64_t n = 0; n < rows; ++n) {
            const double* xr = xd.data() + n * k_dim;
            double acc = 0.0;
            for (int64_t k = 0; k < k_dim; ++k) acc += xr[k] * wrow[static_cast<size_t>(k)];
            c.out[n * m_dim + m] = static_cast<float>(acc);
        }
    }
}

}  // namespace mnemo::reference
