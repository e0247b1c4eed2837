// References of the memory-layer selection and bag ops: ARGTOPK, TAKE_ALONG, EMBEDDING_BAG.
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

// The weighted bag sum of PyTorch's EmbeddingBag(mode="sum", per_sample_weights) as the product-key
// memories use it (shared/notes/memory-layers-reference-code.md sections 3.3-3.4 and 4), extended
// with UltraMem's groups and per-core weights (section 1.3 step 7, the FusedLookup kernel): entry j
// reads row idx % R into group idx / R, and with w [N, m, P] core p weights only its contiguous
// C/P columns. One output row per bag, accumulated here in double.
void embedding_bag(const Ctx& c) {
    const In& table = c.in[0];
    const In& idx = c.in[1];
    const In& w = c.in[2];
    const int64_t rows = table.dim(0), cols = table.dim(1), n_bags = idx.dim(0), m = idx.dim(1);
    const int64_t groups = c.node.iparams[0] == 0 ? 1 : c.node.iparams[0];
    const int64_t cores = w.shape.ndim == 3 ? w.dim(2) : 1;
    const int64_t core_cols = cols / cores;  // the shape rule checked that the cores divide C
    const int64_t limit = groups * rows;
    for (int64_t i = 0; i < n_bags * m; ++i)
        if (idx.i32(i) < 0 || idx.i32(i) >= limit)
            c.fail("bag " + std::to_string(i / m) + " entry " + std::to_string(i % m) +
                   (groups == 1 ? " is row " + std::to_string(idx.i32(i)) + ", table has " + std::to_string(rows) + " rows"
                                : " is index " + std::to_string(idx.i32(i)) + ", outside 0.." + std::to_string(limit - 1) +
                                      " (" + std::to_string(groups) + " groups x " + std::to_string(rows) + " table rows)"));
    std::vector<double> acc(static_cast<size_t>(groups * cols));
    for (int64_t n = 0; n < n_bags; ++n) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < m; ++j) {
            const int64_t v = idx.i32(n * m + j), g = v / rows, row = v % rows;
            for (int64_t col = 0; col < cols; ++col) {
                const double wj = w.f((n * m + j) * cores + col / core_cols);
                acc[static_cast<size_t>(g * cols + col)] += wj * table.f(row * cols + col);
            }
        }
        for (int64_t i = 0; i < groups * cols; ++i)
            c.out[n * groups * cols + i] = static_cast<float>(acc[static_cast<size_t>(i)]);
    }
}

}  // namespace mnemo::reference
