#include "compress_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mnemo::kb {
namespace {

// softmax(q . keys_j * scale) over j, then the weighted sum of values: out [dv].
void attend(const float* q, const float* keys, const float* values, size_t n, size_t d, size_t dv, std::vector<double>& p,
            std::vector<double>& out) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    double top = -INFINITY;
    for (size_t j = 0; j < n; ++j) {
        double s = 0;
        for (size_t c = 0; c < d; ++c) s += static_cast<double>(q[c]) * keys[j * d + c];
        p[j] = s * scale;
        top = std::max(top, p[j]);
    }
    double total = 0;
    for (size_t j = 0; j < n; ++j) total += p[j] = std::exp(p[j] - top);
    std::fill(out.begin(), out.end(), 0.0);
    for (size_t j = 0; j < n; ++j)
        for (size_t c = 0; c < dv; ++c) out[c] += p[j] / total * values[j * dv + c];
}

}  // namespace

double ErrorSum::relative_sq() const { return ref_sq > 0 ? diff_sq / ref_sq : (diff_sq > 0 ? INFINITY : 0.0); }
double ErrorSum::relative_l2() const { return std::sqrt(relative_sq()); }

void add_reconstruction(ErrorSum& sum, const float* exact, const float* decoded, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        const double x = exact[i], diff = x - decoded[i];
        sum.diff_sq += diff * diff;
        sum.ref_sq += x * x;
    }
}

void add_attention_error(ErrorSum& sum, const float* k, const float* v, const float* k_hat, const float* v_hat, size_t n,
                         size_t d, size_t dv) {
    std::vector<double> p(n), exact(dv), approx(dv);
    for (size_t i = 0; i < n; ++i) {
        attend(k + i * d, k, v, n, d, dv, p, exact);
        attend(k + i * d, k_hat, v_hat, n, d, dv, p, approx);
        for (size_t c = 0; c < dv; ++c) {
            const double diff = exact[c] - approx[c];
            sum.diff_sq += diff * diff;
            sum.ref_sq += exact[c] * exact[c];
        }
    }
}

}  // namespace mnemo::kb
