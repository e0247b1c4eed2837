// The memory-layer ops: ARGTOPK (rank product-key scores), TAKE_ALONG (pick the scores of the
// chosen keys) and EMBEDDING_BAG (the fused gather-weight-sum that reads the value table).
//
// ARGTOPK must return exactly the reference's indices (ties to the lower index, NaN last; see
// mnemo_abi.h), so it compares order-preserving integer keys, never floats with tolerance.
// EMBEDDING_BAG is bandwidth-bound on the table rows it gathers: each output segment is kept in
// registers while every row of its bag streams past once.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernel_api.hpp"
#include "scalar_math.hpp"
#include "simd_avx2.hpp"

namespace mnemo_cpu {
namespace {

// ------------------------------------------------------------------ ARGTOPK

// Up to this k a row keeps a sorted list of its best k (insertion; most elements are rejected by
// one comparison with the current k-th best). Beyond it, the row is partially sorted instead:
// insertion would cost O(D k).
constexpr int64_t kInsertionMaxK = 64;

// An integer that orders like the value under ARGTOPK's rules: larger key = ranks first. NaN is
// below every number; -0.0 is folded into +0.0 so that the two tie.
inline int32_t rank_key(float v) {
    if (std::isnan(v)) return INT32_MIN;
    if (v == 0.0f) v = 0.0f;
    int32_t bits;
    std::memcpy(&bits, &v, 4);
    // Negative floats order backwards as integers: flip their magnitude bits.
    return bits ^ ((bits >> 31) & 0x7FFFFFFF);
}

struct Ranked {
    int32_t key;
    int32_t index;
};

// Rank order: larger key first, then lower index (a strict total order: results are unique).
inline bool ranks_before(const Ranked& a, const Ranked& b) {
    return a.key != b.key ? a.key > b.key : a.index < b.index;
}

// Rows scanned in index order: a newcomer ties-loses to every kept entry of equal key, so it is
// inserted after them (strict > on the key keeps the lower index first).
void topk_insertion(const float* x, int64_t d, int64_t k, Ranked* best, int32_t* out) {
    int64_t count = 0;
    for (int64_t j = 0; j < d; ++j) {
        const int32_t key = rank_key(x[j]);
        if (count == k && key <= best[k - 1].key) continue;
        int64_t pos = count < k ? count++ : k - 1;
        while (pos > 0 && best[pos - 1].key < key) {
            best[pos] = best[pos - 1];
            --pos;
        }
        best[pos] = Ranked{key, static_cast<int32_t>(j)};
    }
    for (int64_t j = 0; j < k; ++j) out[j] = best[j].index;
}

void topk_partial_sort(const float* x, int64_t d, int64_t k, Ranked* all, int32_t* out) {
    for (int64_t j = 0; j < d; ++j) all[j] = Ranked{rank_key(x[j]), static_cast<int32_t>(j)};
    std::partial_sort(all, all + k, all + d, ranks_before);
    for (int64_t j = 0; j < k; ++j) out[j] = all[j].index;
}

void argtopk_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& xt = p.node.inputs[0];
    const int64_t d = xt.shape[xt.ndim - 1], k = p.node.iparams[0], rows = outer_rows(xt);
    const float* x = static_cast<const float*>(p.in[0]);
    auto* out = static_cast<int32_t*>(p.out);
    auto* scratch = reinterpret_cast<Ranked*>(call.scratch + static_cast<size_t>(ith) * call.scratch_stride);
    int64_t r0, r1;
    split_range(rows, ith, nth, 1, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) {
        if (k <= kInsertionMaxK) topk_insertion(x + r * d, d, k, scratch, out + r * k);
        else topk_partial_sort(x + r * d, d, k, scratch, out + r * k);
    }
}

// ------------------------------------------------------------------ TAKE_ALONG

void take_along_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& xt = p.node.inputs[0];
    const mnemo_tensor& it = p.node.inputs[1];
    const int64_t d = xt.shape[xt.ndim - 1], k = it.shape[it.ndim - 1], rows = outer_rows(xt);
    const float* x = static_cast<const float*>(p.in[0]);
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    float* y = static_cast<float*>(p.out);
    int64_t r0, r1;
    split_range(rows, ith, nth, 1, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < k; ++j) y[r * k + j] = x[r * d + idx[r * k + j]];
}

// ------------------------------------------------------------------ EMBEDDING_BAG

// Work is split into (bag, column block) tasks. With as many bags as threads a task is a whole
// bag; with fewer (decode: one bag, C in the thousands) the columns are split too so that every
// thread streams its share of each gathered row. Blocks are multiples of 64 columns (8 vectors),
// and the per-column sum order (over j) is the same for any split, so results never depend on
// the thread count.
int64_t column_block(int64_t n_bags, int64_t cols, int nth) {
    if (n_bags >= nth || cols <= 64) return cols > 0 ? cols : 1;
    const int64_t per_bag = (static_cast<int64_t>(nth) * 2 + n_bags - 1) / n_bags;  // ~2 tasks per thread
    const int64_t block = (cols + per_bag - 1) / per_bag;
    return std::max<int64_t>(64, (block + 63) / 64 * 64);
}

struct BagArgs {
    const char* table;
    size_t row_bytes;
    const int32_t* idx;  // this bag's m indices
    const float* w;      // this bag's m weights
    int64_t m;
};

void bag_columns_scalar(const BagArgs& b, int32_t dtype, int64_t c0, int64_t c1, float* y) {
    for (int64_t c = c0; c < c1; ++c) y[c] = 0.0f;
    for (int64_t j = 0; j < b.m; ++j) {
        const void* row = b.table + static_cast<size_t>(b.idx[j]) * b.row_bytes;
        const float wj = b.w[j];
        for (int64_t c = c0; c < c1; ++c) y[c] += wj * load_weight(row, dtype, static_cast<size_t>(c));
    }
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
// 32 columns at a time in four accumulators held across the whole bag; then 8 at a time; the
// last < 8 columns in scalar code with the same per-column order.
template <int DT>
MNEMO_AVX2 void bag_columns_avx2(const BagArgs& b, int64_t c0, int64_t c1, float* y) {
    int64_t c = c0;
    for (; c + 32 <= c1; c += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
        for (int64_t j = 0; j < b.m; ++j) {
            const void* row = b.table + static_cast<size_t>(b.idx[j]) * b.row_bytes;
            const __m256 wj = _mm256_set1_ps(b.w[j]);
            a0 = _mm256_fmadd_ps(wj, avx2::load8<DT>(row, static_cast<size_t>(c)), a0);
            a1 = _mm256_fmadd_ps(wj, avx2::load8<DT>(row, static_cast<size_t>(c + 8)), a1);
            a2 = _mm256_fmadd_ps(wj, avx2::load8<DT>(row, static_cast<size_t>(c + 16)), a2);
            a3 = _mm256_fmadd_ps(wj, avx2::load8<DT>(row, static_cast<size_t>(c + 24)), a3);
        }
        _mm256_storeu_ps(y + c, a0);
        _mm256_storeu_ps(y + c + 8, a1);
        _mm256_storeu_ps(y + c + 16, a2);
        _mm256_storeu_ps(y + c + 24, a3);
    }
    for (; c + 8 <= c1; c += 8) {
        __m256 a = _mm256_setzero_ps();
        for (int64_t j = 0; j < b.m; ++j) {
            const void* row = b.table + static_cast<size_t>(b.idx[j]) * b.row_bytes;
            a = _mm256_fmadd_ps(_mm256_set1_ps(b.w[j]), avx2::load8<DT>(row, static_cast<size_t>(c)), a);
        }
        _mm256_storeu_ps(y + c, a);
    }
    for (; c < c1; ++c) {
        float a = 0.0f;
        for (int64_t j = 0; j < b.m; ++j) {
            const void* row = b.table + static_cast<size_t>(b.idx[j]) * b.row_bytes;
            a = std::fma(b.w[j], avx2::load1<DT>(row, static_cast<size_t>(c)), a);
        }
        y[c] = a;
    }
}
#endif

template <bool AVX2>
void embedding_bag_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_tensor& table = p.node.inputs[0];
    const int64_t cols = table.shape[1];
    const int64_t n_bags = p.node.inputs[1].shape[0], m = p.node.inputs[1].shape[1];
    const int32_t dtype = table.dtype;
    const size_t esize = dtype == MNEMO_DTYPE_F32 ? 4 : 2;
    const int64_t block = column_block(n_bags, cols, nth);
    const int64_t blocks_per_bag = (cols + block - 1) / block;
    int64_t t0, t1;
    split_range(n_bags * blocks_per_bag, ith, nth, 1, &t0, &t1);
    float* out = static_cast<float*>(p.out);
    for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / blocks_per_bag;
        const int64_t c0 = (t % blocks_per_bag) * block, c1 = std::min(cols, c0 + block);
        const BagArgs b{static_cast<const char*>(p.in[0]), static_cast<size_t>(cols) * esize,
                        static_cast<const int32_t*>(p.in[1]) + n * m, static_cast<const float*>(p.in[2]) + n * m, m};
        float* y = out + n * cols;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        if constexpr (AVX2) {
            switch (dtype) {
                case MNEMO_DTYPE_F16: bag_columns_avx2<MNEMO_DTYPE_F16>(b, c0, c1, y); break;
                case MNEMO_DTYPE_BF16: bag_columns_avx2<MNEMO_DTYPE_BF16>(b, c0, c1, y); break;
                default: bag_columns_avx2<MNEMO_DTYPE_F32>(b, c0, c1, y); break;
            }
            continue;
        }
#endif
        bag_columns_scalar(b, dtype, c0, c1, y);
    }
}

bool check_range(const int32_t* idx, int64_t count, int64_t limit, const char* what, char* message, size_t cap) {
    for (int64_t i = 0; i < count; ++i)
        if (idx[i] < 0 || idx[i] >= limit) {
            std::snprintf(message, cap, "%s: index %lld is %d, outside 0..%lld", what, static_cast<long long>(i), idx[i],
                          static_cast<long long>(limit - 1));
            return false;
        }
    return true;
}

}  // namespace

bool check_memory_indices(const PreparedNode& p, char* message, size_t cap) {
    const mnemo_tensor& idx = p.node.inputs[1];
    const auto* data = static_cast<const int32_t*>(p.in[1]);
    if (p.node.op == MNEMO_OP_TAKE_ALONG) {
        const mnemo_tensor& x = p.node.inputs[0];
        return check_range(data, numel(idx), x.shape[x.ndim - 1], "take_along (x has D columns)", message, cap);
    }
    if (p.node.op == MNEMO_OP_EMBEDDING_BAG)
        return check_range(data, numel(idx), p.node.inputs[0].shape[0], "embedding_bag (table rows)", message, cap);
    return true;
}

KernelFn select_memory_ops(PreparedNode& p, Isa isa) {
    p.scratch_floats = 0;
    switch (p.node.op) {
        case MNEMO_OP_ARGTOPK: {
            const mnemo_tensor& x = p.node.inputs[0];
            const int64_t k = p.node.iparams[0];
            const int64_t entries = k <= kInsertionMaxK ? k : x.shape[x.ndim - 1];
            p.scratch_floats = static_cast<size_t>(entries) * (sizeof(Ranked) / sizeof(float));
            return argtopk_kernel;
        }
        case MNEMO_OP_TAKE_ALONG: return take_along_kernel;
        case MNEMO_OP_EMBEDDING_BAG:
#if defined(MNEMO_HAVE_AVX2_KERNELS)
            if (isa == Isa::Avx2) return embedding_bag_kernel<true>;
#endif
            (void)isa;
            return embedding_bag_kernel<false>;
        default: return nullptr;
    }
}

}  // namespace mnemo_cpu
