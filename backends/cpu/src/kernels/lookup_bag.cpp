// EMBEDDING_BAG, the fused gather-weight-sum that reads a memory layer's value table (lookup
// family; registered by lookup.cpp). It is bandwidth-bound on the table rows it gathers: each
// output segment is kept in registers while every row of its bag streams past once
// (lookup_bag.hpp).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernel_api.hpp"
#include "lookup_bag.hpp"
#include "vector_isa.hpp"

namespace mnemo_cpu {
namespace {


// Work is split into (bag, group, column block) tasks. With as many (bag, group) segments as
// threads a task is a whole segment; with fewer (decode: one bag, C in the hundreds) the columns
// are split too so that every thread streams its share of each gathered row. A block is at least
// one 32-column pass of the bag loop (bag.hpp: a cache line of f16/bf16, two of f32), and the
// per-column sum order (entries in bag order) is the same for any split, so results never depend
// on the thread count.
// A block-quantized table's blocks are never split between tasks (a q4_k block is 256 columns).
int64_t column_block(int64_t segments, int64_t cols, int nth, int64_t table_block) {
    const int64_t min_block = std::max<int64_t>(32, table_block);
    if (segments >= nth || cols <= min_block) return cols > 0 ? cols : 1;
    const int64_t per_segment = (static_cast<int64_t>(nth) * 2 + segments - 1) / segments;  // ~2 tasks per thread
    const int64_t block = (cols + per_segment - 1) / per_segment;
    return std::max<int64_t>(min_block, (block + min_block - 1) / min_block * min_block);
}

int64_t bag_groups(const mnemo_node& n) { return n.iparams[0] == 0 ? 1 : n.iparams[0]; }

// Per-thread scratch of an EMBEDDING_BAG task: the rows and weights of the entries of one
// (bag, group) segment, in bag order.
struct BagScratch {
    const char** rows;
    float* w;
    int32_t* entry;  // j of each selected entry, to find its (per-core) weight
};

BagScratch bag_scratch(const KernelCall& call, int ith, int64_t m) {
    float* base = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    BagScratch s;
    s.rows = reinterpret_cast<const char**>(base);
    s.w = base + 2 * m;  // a pointer takes the room of two floats
    s.entry = reinterpret_cast<int32_t*>(s.w + m);
    return s;
}

size_t bag_scratch_floats(int64_t m) { return static_cast<size_t>(4 * m); }

// VECTOR: this build's vector kernels (AVX2 or NEON, vector_isa.hpp).
template <bool VECTOR>
void embedding_bag_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& table = p.node.inputs[0];
    const mnemo_tensor& wt = p.node.inputs[2];
    const int64_t rows = table.shape[0], cols = table.shape[1];
    const int64_t n_bags = p.node.inputs[1].shape[0], m = p.node.inputs[1].shape[1];
    const int64_t groups = bag_groups(p.node);
    const int64_t cores = wt.ndim == 3 ? wt.shape[2] : 1, core_cols = cols / cores;
    const int32_t dtype = table.dtype;
    const size_t row_bytes = dtype_row_bytes(dtype, cols);
    const int64_t block = column_block(n_bags * groups, cols, nth, mnemo::dtype_block(static_cast<mnemo::DType>(dtype)).elems);
    const int64_t blocks = (cols + block - 1) / block;
    int64_t t0, t1;
    split_range(n_bags * groups * blocks, ith, nth, 1, &t0, &t1);
    const char* base = static_cast<const char*>(p.in[0]);
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    const float* w = static_cast<const float*>(p.in[2]);
    float* out = static_cast<float*>(p.out);
    const BagScratch s = bag_scratch(call, ith, m);
    int64_t have_segment = -1, have_core = -1, count = 0;
    for (int64_t t = t0; t < t1; ++t) {
        const int64_t segment = t / blocks, n = segment / groups, g = segment % groups;
        if (segment != have_segment) {
            // The entries of bag n that fall in group g: indices g*R .. g*R + R-1.
            const int64_t first = g * rows;
            count = 0;
            for (int64_t j = 0; j < m; ++j) {
                const int64_t row = static_cast<int64_t>(idx[n * m + j]) - first;
                if (row < 0 || row >= rows) continue;
                s.rows[count] = base + static_cast<size_t>(row) * row_bytes;
                s.entry[count++] = static_cast<int32_t>(j);
            }
            have_segment = segment;
            have_core = -1;
        }
        const int64_t c0 = (t % blocks) * block, c1 = std::min(cols, c0 + block);
        float* y = out + segment * cols;  // out[n, g*C ...]: segments are laid out bag-major, then group
        // Core p weights columns [p*C/P, (p+1)*C/P): a block may straddle a core boundary.
        for (int64_t core = c0 / core_cols; core < cores && core * core_cols < c1; ++core) {
            if (core != have_core) {
                for (int64_t e = 0; e < count; ++e) s.w[e] = w[(n * m + s.entry[e]) * cores + core];
                have_core = core;
            }
            const int64_t a = std::max(c0, core * core_cols), b = std::min(c1, (core + 1) * core_cols);
            bag_columns_for(VECTOR, dtype, BagRows{s.rows, s.w, count}, a, b, y);
        }
    }
}

}  // namespace

KernelFn select_embedding_bag(PreparedNode& p, Isa isa) {
    p.scratch_floats = bag_scratch_floats(p.node.inputs[1].shape[1]);
    return has_vector_kernels(isa) ? embedding_bag_kernel<true> : embedding_bag_kernel<false>;
}

// A multiply-add per bag entry and column.
double embedding_bag_work(const mnemo_node& n) {
    return static_cast<double>(numel(n.inputs[1])) * static_cast<double>(n.inputs[0].shape[1]);
}

bool check_embedding_bag(const PreparedNode& p, char* message, size_t cap) {
    return check_index_range(static_cast<const int32_t*>(p.in[1]), numel(p.node.inputs[1]),
                             bag_groups(p.node) * p.node.inputs[0].shape[0], "embedding_bag (groups x table rows)", message, cap);
}

}  // namespace mnemo_cpu
