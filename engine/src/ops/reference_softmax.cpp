// Reference of SOFTMAX over the last dimension (max-subtracted, in double).
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {

void softmax(const Ctx& c) {
    const In& x = c.in[0];
    const double scale = c.node.fparams[0] == 0.0f ? 1.0 : static_cast<double>(c.node.fparams[0]);
    const int64_t d = x.last(), rows = leading_rows(x.shape);
    std::vector<double> e(static_cast<size_t>(d));
    for (int64_t r = 0; r < rows; ++r) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < d; ++j) mx = std::max(mx, scale * x.f(r * d + j));
        double sum = 0.0;
        for (int64_t j = 0; j < d; ++j) {
            e[static_cast<size_t>(j)] = std::exp(scale * x.f(r * d + j) - mx);
            sum += e[static_cast<size_t>(j)];
        }
        for (int64_t j = 0; j < d; ++j) c.out[r * d + j] = static_cast<float>(e[static_cast<size_t>(j)] / sum);
    }
}

}  // namespace mnemo::reference
