// References of the top-k family: ARGTOPK (one tie order for every backend) and TAKE_ALONG.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {

// ARGTOPK's order (see mnemo_abi.h): value descending, NaN below every number, ties to the
// lower index. Memory layers rank product keys with torch.topk, whose order among equal scores
// is unspecified, and bf16 scores do tie (shared/notes/memory-layers-reference-code.md, section 8
// item 8), so backends would disagree; a fixed order makes every backend return the same indices.
// A stable sort keeps equal values in index order.
bool ranks_before(float a, float b) {
    if (std::isnan(a)) return false;  // NaN never ranks before anything
    if (std::isnan(b)) return true;
    return a > b;
}

void argtopk(const Ctx& c) {
    const In& x = c.in[0];
    const int64_t d = x.last(), k = c.node.iparams[0], rows = leading_rows(x.shape);
    auto* out = reinterpret_cast<int32_t*>(c.out);
    std::vector<int32_t> order(static_cast<size_t>(d));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < d; ++j) order[static_cast<size_t>(j)] = static_cast<int32_t>(j);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t a, int32_t b) { return ranks_before(x.f(r * d + a), x.f(r * d + b)); });
        for (int64_t j = 0; j < k; ++j) out[r * k + j] = order[static_cast<size_t>(j)];
    }
}

void take_along(const Ctx& c) {
    const In& x = c.in[0];
    const In& idx = c.in[1];
    const int64_t d = x.last(), k = idx.last(), rows = leading_rows(x.shape);
    for (int64_t i = 0; i < rows * k; ++i)
        if (idx.i32(i) < 0 || idx.i32(i) >= d)
            c.fail("index " + std::to_string(i) + " is " + std::to_string(idx.i32(i)) + ", outside 0.." +
                   std::to_string(d - 1) + " (x has D = " + std::to_string(d) + ")");
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < k; ++j) c.out[r * k + j] = x.f(r * d + idx.i32(r * k + j));
}

}  // namespace mnemo::reference
