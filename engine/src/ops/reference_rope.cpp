// Reference of ROPE: rotate-half or interleaved pairs, angles from the exact integer position
// (plus the optional offset) times the inverse frequency, in double.
#include <cmath>
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {

void rope(const Ctx& c) {
    const In& x = c.in[0];
    const In& pos = c.in[1];
    const In& inv_freq = c.in[2];
    const int64_t mode = c.node.iparams[0], rot = c.node.iparams[1];
    const int64_t offset = c.node.iparams[2];  // 0 when the caller sets none
    const int64_t n_tok = x.dim(0), heads = x.dim(1), d = x.dim(2), half = rot / 2;
    std::vector<double> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    for (int64_t n = 0; n < n_tok; ++n) {
        // The shifted position is an integer (exact in int64 and, below 2^53, in double).
        const double p = static_cast<double>(static_cast<int64_t>(pos.i32(n)) + offset);
        for (int64_t j = 0; j < half; ++j) {
            const double angle = p * static_cast<double>(inv_freq.f(j));
            cos_t[static_cast<size_t>(j)] = std::cos(angle);
            sin_t[static_cast<size_t>(j)] = std::sin(angle);
        }
        for (int64_t h = 0; h < heads; ++h) {
            const int64_t base = (n * heads + h) * d;
            for (int64_t j = rot; j < d; ++j) c.out[base + j] = x.f(base + j);
            for (int64_t j = 0; j < half; ++j) {
                // mode 0 pairs element j with j + R/2 (HF rotate_half); mode 1 pairs 2j with 2j+1.
                const int64_t i0 = mode == 0 ? j : 2 * j;
                const int64_t i1 = mode == 0 ? j + half : 2 * j + 1;
                const double a = x.f(base + i0), b = x.f(base + i1);
                const double co = cos_t[static_cast<size_t>(j)], si = sin_t[static_cast<size_t>(j)];
                c.out[base + i0] = static_cast<float>(a * co - b * si);
                c.out[base + i1] = static_cast<float>(b * co + a * si);
            }
        }
    }
}

}  // namespace mnemo::reference
