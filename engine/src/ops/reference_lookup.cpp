// References of the lookup family (memory values): EMBEDDING_BAG (the fused gather-weight-sum),
// UltraMem's index pipeline, the PEER gate and HIVE (MEM_INDEX, PEER_GATE, HIVE).
// A block-quantized table is read a row at a time through the reference dequantizer.
// Written from the op table in mnemo_abi.h; the official code they follow is described in
// shared/notes/memory-layers-reference-code.md (sections 1.3, 2.2 and 7).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {

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
    std::vector<float> vals(static_cast<size_t>(cols));
    for (int64_t n = 0; n < n_bags; ++n) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < m; ++j) {
            const int64_t v = idx.i32(n * m + j), g = v / rows, row = v % rows;
            table.row_f32(row, vals.data());  // a block-quantized row through the dequantizer
            for (int64_t col = 0; col < cols; ++col) {
                const double wj = w.f((n * m + j) * cores + col / core_cols);
                acc[static_cast<size_t>(g * cols + col)] += wj * vals[static_cast<size_t>(col)];
            }
        }
        for (int64_t i = 0; i < groups * cols; ++i)
            c.out[n * groups * cols + i] = static_cast<float>(acc[static_cast<size_t>(i)]);
    }
}

// s = shuffle[v] (or v), g = s / value_num, row = (s % value_num + offset) % A. A shuffled index
// that is negative has no group at all, so it is rejected like g >= G (the integer division
// would otherwise round it into group 0 and the remainder would address a negative row).
void mem_index(const Ctx& c) {
    const In& v = c.in[0];
    const In* shuffle = c.in.size() > 1 ? &c.in[1] : nullptr;
    const int64_t value_num = c.node.iparams[0], offset = c.node.iparams[1], rows = c.node.iparams[2],
                  groups = c.node.iparams[3];
    const bool with_group = c.node.iparams[4] != 0;
    auto* out = reinterpret_cast<int32_t*>(c.out);
    for (int64_t i = 0; i < v.numel(); ++i) {
        int64_t s = v.i32(i);
        if (shuffle) {
            const int64_t size = shuffle->numel();
            if (s < 0 || s >= size)
                c.fail("virtual index " + std::to_string(i) + " is " + std::to_string(s) + ", outside the shuffle's 0.." +
                       std::to_string(size - 1));
            s = shuffle->i32(s);
        }
        if (s < 0 || s / value_num >= groups)
            c.fail("virtual index " + std::to_string(i) + (shuffle ? " shuffles to " : " is ") + std::to_string(s) +
                   ": its group s / value_num = " + std::to_string(s < 0 ? -1 : s / value_num) + " is outside 0.." +
                   std::to_string(groups - 1) + " (value_num " + std::to_string(value_num) + ", " +
                   std::to_string(groups) + " groups)");
        const int64_t g = s / value_num, row = (s % value_num + offset) % rows;
        out[i] = static_cast<int32_t>(with_group ? g * rows + row : row);
    }
}

namespace {

// PEER's exact GELU in its plain erf form (the elementwise GELU's reference uses erfc; both are
// far below f32 rounding, and the goldens were made with this one).
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }

}  // namespace

// out[n, j, ...] = act(table[idx[n, j] % R] . x[n]) * s[n, j, ...]
void peer_gate(const Ctx& c) {
    const In& table = c.in[0];
    const In& idx = c.in[1];
    const In& x = c.in[2];
    const In& sc = c.in[3];
    const int64_t rows = table.dim(0), width = table.dim(1), n_tok = idx.dim(0), m = idx.dim(1);
    const int64_t per_entry = sc.shape.ndim == 3 ? sc.dim(2) : 1;
    const int64_t act = c.node.iparams[0];
    for (int64_t i = 0; i < n_tok * m; ++i) {
        if (idx.i32(i) < 0)
            c.fail("token " + std::to_string(i / m) + " entry " + std::to_string(i % m) + " is index " +
                   std::to_string(idx.i32(i)) + "; indices must be >= 0");
        if (rows == 0) c.fail("the pre-value table has no rows, but the indices name entries");
    }
    std::vector<float> vals(static_cast<size_t>(width));
    for (int64_t n = 0; n < n_tok; ++n)
        for (int64_t j = 0; j < m; ++j) {
            const int64_t row = idx.i32(n * m + j) % rows;
            table.row_f32(row, vals.data());
            double dot = 0.0;
            for (int64_t d = 0; d < width; ++d)
                dot += static_cast<double>(vals[static_cast<size_t>(d)]) * static_cast<double>(x.f(n * width + d));
            const double a = act == 1 ? gelu_erf(dot) : act == 2 ? gelu_tanh(dot) : dot;
            for (int64_t k = 0; k < per_entry; ++k) {
                const int64_t i = (n * m + j) * per_entry + k;
                c.out[i] = static_cast<float>(a * static_cast<double>(sc.f(i)));
            }
        }
}

// out[n, h, :] = (sum_j w[n, h, j] * bank[idx[n, h, j], :]) proj[h]
void hive(const Ctx& c) {
    const In& bank = c.in[0];
    const In& idx = c.in[1];
    const In& w = c.in[2];
    const In& proj = c.in[3];
    const int64_t rows = bank.dim(0), rank = bank.dim(1), n_tok = idx.dim(0), heads = idx.dim(1), m = idx.dim(2);
    const int64_t dh = proj.dim(2);
    for (int64_t i = 0; i < n_tok * heads * m; ++i)
        if (idx.i32(i) < 0 || idx.i32(i) >= rows)
            c.fail("token " + std::to_string(i / (heads * m)) + " head " + std::to_string(i / m % heads) + " entry " +
                   std::to_string(i % m) + " is row " + std::to_string(idx.i32(i)) + ", the bank has " +
                   std::to_string(rows) + " rows");
    std::vector<double> latent(static_cast<size_t>(rank));
    std::vector<float> vals(static_cast<size_t>(rank));
    for (int64_t n = 0; n < n_tok; ++n)
        for (int64_t h = 0; h < heads; ++h) {
            std::fill(latent.begin(), latent.end(), 0.0);
            for (int64_t j = 0; j < m; ++j) {
                const int64_t e = (n * heads + h) * m + j;
                const double wj = w.f(e);
                bank.row_f32(idx.i32(e), vals.data());
                for (int64_t k = 0; k < rank; ++k) latent[static_cast<size_t>(k)] += wj * vals[static_cast<size_t>(k)];
            }
            for (int64_t d = 0; d < dh; ++d) {
                double acc = 0.0;
                for (int64_t k = 0; k < rank; ++k) acc += latent[static_cast<size_t>(k)] * proj.f((h * rank + k) * dh + d);
                c.out[(n * heads + h) * dh + d] = static_cast<float>(acc);
            }
        }
}

}  // namespace mnemo::reference
