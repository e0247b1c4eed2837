// The inner dot products of MATMUL, shared with other kernels that multiply activations by weight
// matrices (MOE_FFN's experts): a weight element as f32 for the portable loops, and the AVX2
// register tile of NR activation rows by MR weight rows (see matmul.cpp for how the tiles are
// scheduled for decode and prefill).
#pragma once

#include <cstddef>
#include <cstdint>

#include "arch/x86/simd_avx2.hpp"
#include "mnemo/abi/mnemo_abi.h"
#include "mnemo/ops/dtype.hpp"

namespace mnemo_cpu {

template <int DT>
inline float weight_at(const void* w, size_t i) {
    if constexpr (DT == MNEMO_DTYPE_F32) return static_cast<const float*>(w)[i];
    if constexpr (DT == MNEMO_DTYPE_F16) return mnemo::f16_to_f32(static_cast<const uint16_t*>(w)[i]);
    return mnemo::bf16_to_f32(static_cast<const uint16_t*>(w)[i]);
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
namespace avx2 {

// NR rows of x times MR rows of W over k in [k0, k1). y[n*ldy + r] receives the dot products
// (added to what is there when `accumulate`, for K blocks after the first).
template <int DT, int NR, int MR>
MNEMO_AVX2 void tile_avx2(const float* x, int64_t ldx, const void* w, int64_t ldw, float* y, int64_t ldy,
                          int64_t k0, int64_t k1, bool accumulate) {
    __m256 acc[NR][MR];
#pragma GCC unroll 4
    for (int n = 0; n < NR; ++n)
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) acc[n][r] = _mm256_setzero_ps();
    int64_t k = k0;
    if constexpr (NR == 1) {
        // Decode: one row of x, so the loop is a stream of loads, conversions and FMAs with only
        // MR dependency chains. A second set of accumulators over the next 8 elements doubles
        // the independent chains, so FMA latency no longer caps how fast W can stream.
        __m256 acc2[MR];
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) acc2[r] = _mm256_setzero_ps();
        constexpr size_t esize = DT == MNEMO_DTYPE_F32 ? 4 : 2;
        const char* wb = static_cast<const char*>(w);
        for (; k + 16 <= k1; k += 16) {
            // Rows are short (a few KiB), so the hardware prefetcher keeps re-learning four new
            // streams at every tile; fetch the same place of the next tile's rows ahead of time.
            // Into L2, not L1: a tile's rows ahead are 16-64 KiB away, more than L1 holds, and
            // lines fetched into L1 were evicted before use (1B f16 decode on 1 thread: 6.4 t/s
            // with T0, 9.0 with T1; 2 threads 10 -> 13-16). (Prefetches past the end of W are
            // harmless: they never fault.)
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r)
                _mm_prefetch(wb + (static_cast<size_t>((r + MR) * ldw + k)) * esize, _MM_HINT_T1);
            const __m256 x0 = _mm256_loadu_ps(x + k);
            const __m256 x1 = _mm256_loadu_ps(x + k + 8);
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r) {
                acc[0][r] = _mm256_fmadd_ps(x0, avx2::load8<DT>(w, static_cast<size_t>(r * ldw + k)), acc[0][r]);
                acc2[r] = _mm256_fmadd_ps(x1, avx2::load8<DT>(w, static_cast<size_t>(r * ldw + k + 8)), acc2[r]);
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) acc[0][r] = _mm256_add_ps(acc[0][r], acc2[r]);
    }
    for (; k + 8 <= k1; k += 8) {
        __m256 wv[MR];
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) wv[r] = avx2::load8<DT>(w, static_cast<size_t>(r * ldw + k));
#pragma GCC unroll 4
        for (int n = 0; n < NR; ++n) {
            const __m256 xv = _mm256_loadu_ps(x + n * ldx + k);
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r) acc[n][r] = _mm256_fmadd_ps(xv, wv[r], acc[n][r]);
        }
    }
    float sum[NR][MR];
#pragma GCC unroll 4
    for (int n = 0; n < NR; ++n)
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) sum[n][r] = avx2::hsum(acc[n][r]);
    for (; k < k1; ++k)  // K tail (K not a multiple of 8)
        for (int r = 0; r < MR; ++r) {
            const float wk = avx2::load1<DT>(w, static_cast<size_t>(r * ldw + k));
            for (int n = 0; n < NR; ++n) sum[n][r] += x[n * ldx + k] * wk;
        }
#pragma GCC unroll 4
    for (int n = 0; n < NR; ++n)
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) y[n * ldy + r] = accumulate ? y[n * ldy + r] + sum[n][r] : sum[n][r];
}

template <int DT, int MR>
MNEMO_AVX2 void tile_rows_avx2(int nr, const float* x, int64_t ldx, const void* w, int64_t ldw, float* y,
                               int64_t ldy, int64_t k0, int64_t k1, bool accumulate) {
    switch (nr) {
        case 1: tile_avx2<DT, 1, MR>(x, ldx, w, ldw, y, ldy, k0, k1, accumulate); break;
        case 2: tile_avx2<DT, 2, MR>(x, ldx, w, ldw, y, ldy, k0, k1, accumulate); break;
        case 3: tile_avx2<DT, 3, MR>(x, ldx, w, ldw, y, ldy, k0, k1, accumulate); break;
        default: tile_avx2<DT, 4, MR>(x, ldx, w, ldw, y, ldy, k0, k1, accumulate); break;
    }
}

}  // namespace avx2
#endif  // MNEMO_HAVE_AVX2_KERNELS

}  // namespace mnemo_cpu
