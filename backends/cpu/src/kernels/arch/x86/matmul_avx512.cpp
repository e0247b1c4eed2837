// The prefill GEMM of MATMUL with an f32/f16/bf16 W on AVX-512 (chosen at run time where the CPU
// has AVX-512 F/BW/VL, use_avx512()): the AVX2 tile of matmul.cpp with twice the registers.
//
// Why: prefill is bound by arithmetic, and the AVX2 tile (4 rows of x by 3 rows of W, all 16 ymm
// registers) loads a row of x from L2 for every 3 FMAs; with 32 zmm registers the tile is 4 x 6:
// 24 accumulators, 6 weight vectors converted once and used 4 times, 4 x loads used 6 times.
// The K tail is done with masked loads instead of scalar code. Decode (n <= 2) stays on the
// AVX2 mat-vec: it is bound by memory, where wider registers buy nothing.
#if !defined(__x86_64__) && !defined(__i386__)
#error "arch/x86/ files are compiled for x86 targets only"
#endif

#include <immintrin.h>

#include "../../matmul_shape.hpp"

// GCC 12's AVX-512 intrinsics (_mm512_reduce_add_ps, _mm512_slli_epi32) pass an
// _mm*_undefined_*() operand that is "self-initialised" on purpose, and -Wuninitialized reports
// it at every inlined use in this file: not a bug of ours, and nothing reads those lanes.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define MNEMO_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw")))
#define MNEMO_AVX512_INLINE __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw"), always_inline)) inline

namespace mnemo_cpu {
namespace {

constexpr int kTileX = 4;   // rows of x per tile
constexpr int kTileW = 6;   // rows of W per tile
constexpr int64_t kBlockK = 2048;  // x block kBlockX x kBlockK floats = 256 KiB: in L2 with room for W
constexpr int64_t kBlockX = 32;

// 16 consecutive weights from element i widened to f32; `mask` selects the lanes read (K tail).
template <int DT>
MNEMO_AVX512_INLINE __m512 load16(const void* base, int64_t i, __mmask16 mask) {
    if constexpr (DT == MNEMO_DTYPE_F32) {
        return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(base) + i);
    } else if constexpr (DT == MNEMO_DTYPE_F16) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(base) + i));
    } else {
        // bf16 is the top half of an f32: widen to 32 bits and shift into place.
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(base) + i));
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
}

// NR rows of x times MR rows of W over k in [k0, k1): y[n*ldy + r] gets the dot products, added
// to what is there when `accumulate` (K blocks after the first).
template <int DT, int NR, int MR>
MNEMO_AVX512 void tile(const float* x, int64_t ldx, const void* w, int64_t ldw, float* y, int64_t ldy, int64_t k0,
                       int64_t k1, bool accumulate) {
    __m512 acc[NR][MR];
#pragma GCC unroll 8
    for (int n = 0; n < NR; ++n)
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) acc[n][r] = _mm512_setzero_ps();
    constexpr __mmask16 all = 0xFFFF;
    int64_t k = k0;
    for (; k + 16 <= k1; k += 16) {
        __m512 wv[MR];
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) wv[r] = load16<DT>(w, r * ldw + k, all);
#pragma GCC unroll 8
        for (int n = 0; n < NR; ++n) {
            const __m512 xv = _mm512_loadu_ps(x + n * ldx + k);
#pragma GCC unroll 8
            for (int r = 0; r < MR; ++r) acc[n][r] = _mm512_fmadd_ps(xv, wv[r], acc[n][r]);
        }
    }
    if (k < k1) {  // K tail: the lanes past k1 load as zeros
        const __mmask16 tail = static_cast<__mmask16>((1u << (k1 - k)) - 1u);
        __m512 wv[MR];
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) wv[r] = load16<DT>(w, r * ldw + k, tail);
#pragma GCC unroll 8
        for (int n = 0; n < NR; ++n) {
            const __m512 xv = _mm512_maskz_loadu_ps(tail, x + n * ldx + k);
#pragma GCC unroll 8
            for (int r = 0; r < MR; ++r) acc[n][r] = _mm512_fmadd_ps(xv, wv[r], acc[n][r]);
        }
    }
#pragma GCC unroll 8
    for (int n = 0; n < NR; ++n)
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            const float sum = _mm512_reduce_add_ps(acc[n][r]);
            y[n * ldy + r] = accumulate ? y[n * ldy + r] + sum : sum;
        }
}

// A tile of `nr` (1..NR) rows of x: the short tiles at the end of an x block.
template <int DT, int MR>
MNEMO_AVX512 void tile_rows(int nr, const float* x, int64_t ldx, const void* w, int64_t ldw, float* y, int64_t ldy,
                            int64_t k0, int64_t k1, bool accumulate) {
    static_assert(kTileX == 4, "one case per row count below");
    switch (nr) {
        case 1: tile<DT, 1, MR>(x, ldx, w, ldw, y, ldy, k0, k1, accumulate); break;
        case 2: tile<DT, 2, MR>(x, ldx, w, ldw, y, ldy, k0, k1, accumulate); break;
        case 3: tile<DT, 3, MR>(x, ldx, w, ldw, y, ldy, k0, k1, accumulate); break;
        default: tile<DT, 4, MR>(x, ldx, w, ldw, y, ldy, k0, k1, accumulate); break;
    }
}

// Rows [m0, m1) of W against x rows [n0, n1) over the K block [k0, k1): MR rows of W at a time
// (kept in L1 while every x row of the block passes), then what is left one row at a time.
template <int DT, int MR>
MNEMO_AVX512 void band(const MatmulShape& s, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t k0, int64_t k1) {
    const bool accumulate = k0 > 0;
    int64_t m = m0;
    for (; m + MR <= m1; m += MR) {
        const void* w = weight_row<DT>(s.w, m, s.k);
        for (int64_t n = n0; n < n1; n += kTileX)
            tile_rows<DT, MR>(static_cast<int>(n1 - n < kTileX ? n1 - n : kTileX), s.x + n * s.k, s.k, w, s.k,
                              s.y + n * s.m + m, s.m, k0, k1, accumulate);
    }
    for (; m < m1; ++m) {
        const void* w = weight_row<DT>(s.w, m, s.k);
        for (int64_t n = n0; n < n1; n += kTileX)
            tile_rows<DT, 1>(static_cast<int>(n1 - n < kTileX ? n1 - n : kTileX), s.x + n * s.k, s.k, w, s.k,
                             s.y + n * s.m + m, s.m, k0, k1, accumulate);
    }
}

template <int DT>
MNEMO_AVX512 void matmul_prefill(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const MatmulShape s = matmul_shape(p);
    const int64_t kc = p.plan[kPlanKc], nc = p.plan[kPlanNc];
    int64_t m0, m1;
    split_range(s.m, ith, nth, kTileW, &m0, &m1);
    if (m0 >= m1) return;
    for (int64_t nb = 0; nb < s.n; nb += nc) {
        const int64_t nb1 = s.n - nb < nc ? s.n : nb + nc;
        // At least one K block so that K == 0 still writes zeros.
        for (int64_t kb = 0; kb == 0 || kb < s.k; kb += kc)
            band<DT, kTileW>(s, m0, m1, nb, nb1, kb, s.k - kb < kc ? s.k : kb + kc);
    }
}

}  // namespace

KernelFn select_matmul_prefill_avx512(PreparedNode& p, int32_t dtype) {
    const int64_t k = p.node.inputs[1].shape[1];
    p.plan[kPlanMr] = kTileW;
    p.plan[kPlanNr] = kTileX;
    p.plan[kPlanKc] = k < kBlockK ? (k > 0 ? k : 1) : kBlockK;
    p.plan[kPlanNc] = kBlockX;
    switch (dtype) {
        case MNEMO_DTYPE_F32: return matmul_prefill<MNEMO_DTYPE_F32>;
        case MNEMO_DTYPE_F16: return matmul_prefill<MNEMO_DTYPE_F16>;
        case MNEMO_DTYPE_BF16: return matmul_prefill<MNEMO_DTYPE_BF16>;
        default: return nullptr;
    }
}

}  // namespace mnemo_cpu
