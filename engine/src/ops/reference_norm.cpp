// References of the norm family: RMS_NORM and LAYER_NORM over the last dimension, in double.
#include <cmath>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {

void rms_norm(const Ctx& c) {
    const In& x = c.in[0];
    const In* w = c.in.size() > 1 ? &c.in[1] : nullptr;
    const double eps = c.node.fparams[0];
    const int64_t d = x.last(), rows = leading_rows(x.shape);
    if (d == 0) return;
    for (int64_t r = 0; r < rows; ++r) {
        double sum_sq = 0.0;
        for (int64_t j = 0; j < d; ++j) {
            const double v = x.f(r * d + j);
            sum_sq += v * v;
        }
        const double inv = 1.0 / std::sqrt(sum_sq / static_cast<double>(d) + eps);
        for (int64_t j = 0; j < d; ++j) {
            const double scale = w ? static_cast<double>(w->f(j)) : 1.0;
            c.out[r * d + j] = static_cast<float>(static_cast<double>(x.f(r * d + j)) * inv * scale);
        }
    }
}

void layer_norm(const Ctx& c) {
    const In& x = c.in[0];
    const In* w = c.in.size() > 1 ? &c.in[1] : nullptr;
    const In* b = c.in.size() > 2 ? &c.in[2] : nullptr;
    const double eps = c.node.fparams[0];
    const int64_t d = x.last(), rows = leading_rows(x.shape);
    if (d == 0) return;
    for (int64_t r = 0; r < rows; ++r) {
        // Two passes (mean, then squared deviations): exact enough in double even for rows
        // with a large common offset.
        double sum = 0.0;
        for (int64_t j = 0; j < d; ++j) sum += x.f(r * d + j);
        const double mean = sum / static_cast<double>(d);
        double sum_dev = 0.0;
        for (int64_t j = 0; j < d; ++j) {
            const double dev = x.f(r * d + j) - mean;
            sum_dev += dev * dev;
        }
        const double inv = 1.0 / std::sqrt(sum_dev / static_cast<double>(d) + eps);
        for (int64_t j = 0; j < d; ++j) {
            double v = (static_cast<double>(x.f(r * d + j)) - mean) * inv;
            if (w) v *= w->f(j);
            if (b) v += b->f(j);
            c.out[r * d + j] = static_cast<float>(v);
        }
    }
}

}  // namespace mnemo::reference
