// The weighted sum of gathered rows over a column range, shared by EMBEDDING_BAG (lookup_bag.cpp)
// and HIVE (lookup.cpp):  y[c] = sum_e w[e] * row_e[c]  for c in [c0, c1).
//
// These ops are bound by the gathered rows, which sit at random places in a table far larger than
// any cache. Each output segment is therefore held in registers while every row streams past
// once, rows are widened from f16/bf16 on the fly, and rows are prefetched ahead of use because
// the hardware prefetcher cannot guess a random row. The sum over e runs in entry order
// for every column, whatever the column range, so results do not depend on how a kernel splits
// its columns between threads.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "dot.hpp"
#include "kernel_api.hpp"
#include "lookup_quant.hpp"
#include "mnemo/ops/dtype.hpp"
#include "vector_isa.hpp"

namespace mnemo_cpu {

struct BagRows {
    const char* const* rows;  // entry e's row (column 0)
    const float* w;           // entry e's weight
    int64_t count;
};

template <int DT>
void bag_columns_scalar(const BagRows& b, int64_t c0, int64_t c1, float* y) {
    for (int64_t c = c0; c < c1; ++c) y[c] = 0.0f;
    for (int64_t e = 0; e < b.count; ++e) {
        const float we = b.w[e];
        for (int64_t c = c0; c < c1; ++c) y[c] += we * weight_at<DT>(b.rows[e], static_cast<size_t>(c));
    }
}

inline void bag_columns_scalar_any(int32_t dtype, const BagRows& b, int64_t c0, int64_t c1, float* y) {
    switch (dtype) {
        case MNEMO_DTYPE_F16: return bag_columns_scalar<MNEMO_DTYPE_F16>(b, c0, c1, y);
        case MNEMO_DTYPE_BF16: return bag_columns_scalar<MNEMO_DTYPE_BF16>(b, c0, c1, y);
        default: return bag_columns_scalar<MNEMO_DTYPE_F32>(b, c0, c1, y);
    }
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
namespace avx2 {

// How many entries ahead the first pass fetches rows: enough to cover a DRAM miss at the rate
// one 32-column step consumes a row, few enough to stay within the line fill buffers.
constexpr int64_t kBagPrefetchAhead = 6;

// The 32 columns of one row a pass reads: one cache line of f16/bf16, two of f32.
template <size_t ESIZE>
MNEMO_AVX2_INLINE void prefetch_line(const char* p) {
    _mm_prefetch(p, _MM_HINT_T0);
    if constexpr (ESIZE == 4) _mm_prefetch(p + 64, _MM_HINT_T0);
}

// 32 columns at a time in four accumulators held across the whole bag; then 8 at a time; the
// last < 8 columns in scalar code (fma, so every column is rounded the same way).
template <int DT>
MNEMO_AVX2 void bag_columns(const BagRows& b, int64_t c0, int64_t c1, float* y) {
    constexpr size_t esize = DT == MNEMO_DTYPE_F32 ? 4 : 2;
    // Rows sit at random places, so the hardware prefetcher cannot help. The first pass over the
    // entries fetches its line of the row a few entries ahead; every pass also fetches the same
    // row's line for the next pass, so from the second pass on all of a pass's lines are already
    // in flight, however short the bag.
    int64_t c = c0;
    for (; c + 32 <= c1; c += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
        const size_t at = static_cast<size_t>(c);
        const bool first_pass = c == c0, next_pass = c + 32 < c1;
        for (int64_t e = 0; e < b.count; ++e) {
            if (first_pass && e + kBagPrefetchAhead < b.count) prefetch_line<esize>(b.rows[e + kBagPrefetchAhead] + at * esize);
            if (next_pass) prefetch_line<esize>(b.rows[e] + (at + 32) * esize);
            const char* row = b.rows[e];
            const __m256 we = _mm256_set1_ps(b.w[e]);
            a0 = _mm256_fmadd_ps(we, load8<DT>(row, at), a0);
            a1 = _mm256_fmadd_ps(we, load8<DT>(row, at + 8), a1);
            a2 = _mm256_fmadd_ps(we, load8<DT>(row, at + 16), a2);
            a3 = _mm256_fmadd_ps(we, load8<DT>(row, at + 24), a3);
        }
        _mm256_storeu_ps(y + c, a0);
        _mm256_storeu_ps(y + c + 8, a1);
        _mm256_storeu_ps(y + c + 16, a2);
        _mm256_storeu_ps(y + c + 24, a3);
    }
    for (; c + 8 <= c1; c += 8) {
        __m256 a = _mm256_setzero_ps();
        for (int64_t e = 0; e < b.count; ++e)
            a = _mm256_fmadd_ps(_mm256_set1_ps(b.w[e]), load8<DT>(b.rows[e], static_cast<size_t>(c)), a);
        _mm256_storeu_ps(y + c, a);
    }
    for (; c < c1; ++c) {
        float a = 0.0f;
        for (int64_t e = 0; e < b.count; ++e) a = std::fma(b.w[e], load1<DT>(b.rows[e], static_cast<size_t>(c)), a);
        y[c] = a;
    }
}

MNEMO_AVX2 inline void bag_columns_any(int32_t dtype, const BagRows& b, int64_t c0, int64_t c1, float* y) {
    switch (dtype) {
        case MNEMO_DTYPE_F16: return bag_columns<MNEMO_DTYPE_F16>(b, c0, c1, y);
        case MNEMO_DTYPE_BF16: return bag_columns<MNEMO_DTYPE_BF16>(b, c0, c1, y);
        default: return bag_columns<MNEMO_DTYPE_F32>(b, c0, c1, y);
    }
}

}  // namespace avx2
#endif  // MNEMO_HAVE_AVX2_KERNELS

#if defined(MNEMO_HAVE_NEON_KERNELS)
namespace neon {

// As avx2::bag_columns (same prefetch scheme, same per-column order of fused multiply-adds):
// 32 columns at a time in eight 4-lane accumulators (NEON has 32 registers), then 4 at a time,
// then the last < 4 columns in scalar fma.
constexpr int64_t kBagPrefetchAhead = 6;

template <size_t ESIZE>
inline void prefetch_line(const char* p) {
    __builtin_prefetch(p);
    if constexpr (ESIZE == 4) __builtin_prefetch(p + 64);
}

template <int DT>
void bag_columns(const BagRows& b, int64_t c0, int64_t c1, float* y) {
    constexpr size_t esize = DT == MNEMO_DTYPE_F32 ? 4 : 2;
    int64_t c = c0;
    for (; c + 32 <= c1; c += 32) {
        float32x4_t a[8];
        for (int i = 0; i < 8; ++i) a[i] = vdupq_n_f32(0.0f);
        const size_t at = static_cast<size_t>(c);
        const bool first_pass = c == c0, next_pass = c + 32 < c1;
        for (int64_t e = 0; e < b.count; ++e) {
            if (first_pass && e + kBagPrefetchAhead < b.count) prefetch_line<esize>(b.rows[e + kBagPrefetchAhead] + at * esize);
            if (next_pass) prefetch_line<esize>(b.rows[e] + (at + 32) * esize);
            const char* row = b.rows[e];
            const float32x4_t we = vdupq_n_f32(b.w[e]);
#pragma GCC unroll 8
            for (int i = 0; i < 8; ++i) a[i] = vfmaq_f32(a[i], we, load4<DT>(row, at + 4 * i));
        }
        for (int i = 0; i < 8; ++i) vst1q_f32(y + c + 4 * i, a[i]);
    }
    for (; c + 4 <= c1; c += 4) {
        float32x4_t a = vdupq_n_f32(0.0f);
        for (int64_t e = 0; e < b.count; ++e) a = vfmaq_f32(a, vdupq_n_f32(b.w[e]), load4<DT>(b.rows[e], static_cast<size_t>(c)));
        vst1q_f32(y + c, a);
    }
    for (; c < c1; ++c) {
        float a = 0.0f;
        for (int64_t e = 0; e < b.count; ++e) a = std::fma(b.w[e], load1<DT>(b.rows[e], static_cast<size_t>(c)), a);
        y[c] = a;
    }
}

inline void bag_columns_any(int32_t dtype, const BagRows& b, int64_t c0, int64_t c1, float* y) {
    switch (dtype) {
        case MNEMO_DTYPE_F16: return bag_columns<MNEMO_DTYPE_F16>(b, c0, c1, y);
        case MNEMO_DTYPE_BF16: return bag_columns<MNEMO_DTYPE_BF16>(b, c0, c1, y);
        default: return bag_columns<MNEMO_DTYPE_F32>(b, c0, c1, y);
    }
}

}  // namespace neon
#endif  // MNEMO_HAVE_NEON_KERNELS

// The vector or the portable loop, as chosen for the node (has_vector_kernels(isa)) when it was
// prepared; block-quantized rows block by block (lookup_quant.hpp).
inline void bag_columns_for(bool use_vector, int32_t dtype, const BagRows& b, int64_t c0, int64_t c1, float* y) {
    if (mnemo::dtype_is_quantized(static_cast<mnemo::DType>(dtype))) return bag_columns_quant(use_vector, dtype, b, c0, c1, y);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (use_vector) return avx2::bag_columns_any(dtype, b, c0, c1, y);
#elif defined(MNEMO_HAVE_NEON_KERNELS)
    if (use_vector) return neon::bag_columns_any(dtype, b, c0, c1, y);
#endif
    (void)use_vector;
    bag_columns_scalar_any(dtype, b, c0, c1, y);
}

// EMBEDDING_BAG's kernel entry (lookup_bag.cpp), registered with the rest of the lookup family in
// lookup.cpp.
KernelFn select_embedding_bag(PreparedNode& node, Isa isa);
double embedding_bag_work(const mnemo_node& node);
bool check_embedding_bag(const PreparedNode& node, char* message, size_t cap);

}  // namespace mnemo_cpu
