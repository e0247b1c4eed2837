// PK_SCORE's AVX2/FMA/F16C path (x86-64): sub-key ranks 1, 2, 4 and 8, the layout described in
// product_keys_score.cpp (8-wide FMAs over a key's contiguous K*Rk elements, rank r's partial sums
// in lanes l with l % Rk == r). Like every kernel file this one is compiled for the baseline ISA:
// each function carries the AVX2 target attribute itself (arch/x86/simd_avx2.hpp), so no AVX2
// instruction reaches code that runs before cpu_features() has been asked.
#include <cstddef>
#include <cstdint>

#include "kernels/dot.hpp"
#include "kernels/product_keys_score.hpp"

#if !defined(MNEMO_HAVE_AVX2_KERNELS)
#error "arch/x86/ files are for x86 targets only: backends/cpu/CMakeLists.txt chooses them by CMAKE_SYSTEM_PROCESSOR"
#endif

namespace mnemo_cpu::pk_score {
namespace {

// Lane l of v holds positions p = l (mod 8) of a key, i.e. rank r = l % Rk: add up each rank.
MNEMO_AVX2_INLINE void rank_sums(__m256 v, int64_t rank, float* sums) {
    if (rank == 8) {
        _mm256_storeu_ps(sums, v);
        return;
    }
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));  // lanes l, l+4
    if (rank == 4) {
        _mm_storeu_ps(sums, s);
        return;
    }
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));  // lanes l, l+2
    if (rank == 2) {
        _mm_storel_pi(reinterpret_cast<__m64*>(sums), s);
        return;
    }
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    sums[0] = _mm_cvtss_f32(s);
}

// KEYS consecutive keys (starting at element k0) against TOKS expanded queries: KEYS*TOKS
// accumulators (at most 8), every key vector loaded once per step and used TOKS times.
template <int DT, int KEYS, int TOKS>
MNEMO_AVX2 void score_tile_avx2(const ScoreArgs& a, size_t k0, const float* qx, const float* inv, float* out,
                                int64_t out_tok_stride) {
    const int64_t len = a.len;
    __m256 acc[KEYS][TOKS];
#pragma GCC unroll 8
    for (int i = 0; i < KEYS; ++i)
#pragma GCC unroll 4
        for (int t = 0; t < TOKS; ++t) acc[i][t] = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 8 <= len; p += 8) {
        __m256 kv[KEYS];
#pragma GCC unroll 8
        for (int i = 0; i < KEYS; ++i) kv[i] = avx2::load8<DT>(a.keys, k0 + static_cast<size_t>(i * len + p));
#pragma GCC unroll 4
        for (int t = 0; t < TOKS; ++t) {
            const __m256 qv = _mm256_loadu_ps(qx + t * len + p);
#pragma GCC unroll 8
            for (int i = 0; i < KEYS; ++i) acc[i][t] = _mm256_fmadd_ps(qv, kv[i], acc[i][t]);
        }
    }
    float sums[8];
    for (int i = 0; i < KEYS; ++i)
        for (int t = 0; t < TOKS; ++t) {
            rank_sums(acc[i][t], a.rank, sums);
            // Tail (K*Rk not a multiple of 8): p is a multiple of 8, so position q has rank q % Rk.
            for (int64_t q = p; q < len; ++q)
                sums[q % a.rank] += qx[t * len + q] * avx2::load1<DT>(a.keys, k0 + static_cast<size_t>(i * len + q));
            float* o = out + t * out_tok_stride + i * a.rank;
            for (int64_t r = 0; r < a.rank; ++r) o[r] = inv ? sums[r] * inv[i * a.rank + r] : sums[r];
        }
}

// Decode with the key norm: one token, so the inverse RMS would cost a second pass over keys
// that are each used once. Here the key's squares are summed from the same loads as its dot
// product (KEYS dot and KEYS square accumulators), and the inverse RMS is stored for later tokens.
template <int DT, int KEYS>
MNEMO_AVX2 void score_tile_norm_avx2(const ScoreArgs& a, size_t k0, const float* qx, float* inv, float* out) {
    const int64_t len = a.len;
    __m256 dot[KEYS], sq[KEYS];
#pragma GCC unroll 4
    for (int i = 0; i < KEYS; ++i) dot[i] = sq[i] = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 8 <= len; p += 8) {
        const __m256 qv = _mm256_loadu_ps(qx + p);
#pragma GCC unroll 4
        for (int i = 0; i < KEYS; ++i) {
            const __m256 kv = avx2::load8<DT>(a.keys, k0 + static_cast<size_t>(i * len + p));
            dot[i] = _mm256_fmadd_ps(qv, kv, dot[i]);
            sq[i] = _mm256_fmadd_ps(kv, kv, sq[i]);
        }
    }
    float dots[8], squares[8];
    for (int i = 0; i < KEYS; ++i) {
        rank_sums(dot[i], a.rank, dots);
        rank_sums(sq[i], a.rank, squares);
        for (int64_t q = p; q < len; ++q) {
            const float kq = avx2::load1<DT>(a.keys, k0 + static_cast<size_t>(i * len + q));
            dots[q % a.rank] += qx[q] * kq;
            squares[q % a.rank] += kq * kq;
        }
        for (int64_t r = 0; r < a.rank; ++r) {
            inv[i * a.rank + r] = inv_rms(squares[r], a.kdim, a.eps);
            out[i * a.rank + r] = dots[r] * inv[i * a.rank + r];
        }
    }
}

template <int DT, int TOKS>
MNEMO_AVX2 void score_keys_avx2(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n, const float* qx,
                                const float* inv) {
    constexpr int KEYS = TOKS == 1 ? 8 : TOKS == 2 ? 4 : 2;
    const int64_t tok_stride = 2 * a.heads * a.nk * a.rank;
    float* out = a.out + ((n * 2 * a.heads + b) * a.nk) * a.rank;
    int64_t j = j0;
    for (; j + KEYS <= j1; j += KEYS)
        score_tile_avx2<DT, KEYS, TOKS>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv ? inv + (j - j0) * a.rank : nullptr,
                                        out + j * a.rank, tok_stride);
    for (; j < j1; ++j)
        score_tile_avx2<DT, 1, TOKS>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv ? inv + (j - j0) * a.rank : nullptr,
                                     out + j * a.rank, tok_stride);
}

}  // namespace

template <int DT>
MNEMO_AVX2 void Avx2<DT>::key_inv_rms(const ScoreArgs& a, size_t k0, float* inv) {
    __m256 acc = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 8 <= a.len; p += 8) {
        const __m256 v = avx2::load8<DT>(a.keys, k0 + static_cast<size_t>(p));
        acc = _mm256_fmadd_ps(v, v, acc);
    }
    float sums[8];
    rank_sums(acc, a.rank, sums);
    for (int64_t q = p; q < a.len; ++q) {
        const float v = avx2::load1<DT>(a.keys, k0 + static_cast<size_t>(q));
        sums[q % a.rank] += v * v;
    }
    for (int64_t r = 0; r < a.rank; ++r) inv[r] = inv_rms(sums[r], a.kdim, a.eps);
}

// Keys j0..j1-1 of bank b for the single token n, computing their inverse RMS on the way.
template <int DT>
MNEMO_AVX2 void Avx2<DT>::score_keys_norm(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n,
                                          const float* qx, float* inv) {
    float* out = a.out + ((n * 2 * a.heads + b) * a.nk) * a.rank;
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4)
        score_tile_norm_avx2<DT, 4>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv + (j - j0) * a.rank, out + j * a.rank);
    for (; j < j1; ++j)
        score_tile_norm_avx2<DT, 1>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv + (j - j0) * a.rank, out + j * a.rank);
}

template <int DT>
MNEMO_AVX2 void Avx2<DT>::score_block(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n0, int64_t n1,
                                      const float* qx, const float* inv) {
    for (int64_t n = n0; n < n1; n += 4) {
        const float* qt = qx + (n - n0) * a.len;
        switch (n1 - n < 4 ? n1 - n : 4) {
            case 1: score_keys_avx2<DT, 1>(a, b, j0, j1, n, qt, inv); break;
            case 2: score_keys_avx2<DT, 2>(a, b, j0, j1, n, qt, inv); break;
            case 3: score_keys_avx2<DT, 3>(a, b, j0, j1, n, qt, inv); break;
            default: score_keys_avx2<DT, 4>(a, b, j0, j1, n, qt, inv); break;
        }
    }
}

// Tiles of 4 tokens by 4 packed rows; the packed block (a few tens of KiB) stays in L1/L2 while
// the tokens stream past it.
MNEMO_AVX2 void packed_product_avx2(const float* qg, int64_t tokens, const float* packed, int64_t rows, int64_t kd,
                                    float* out, int64_t ldo) {
    for (int64_t t = 0; t < tokens; t += 4) {
        const int nr = static_cast<int>(tokens - t < 4 ? tokens - t : 4);
        const float* x = qg + t * kd;
        float* y = out + t * ldo;
        int64_t i = 0;
        for (; i + 4 <= rows; i += 4)
            avx2::tile_rows_avx2<MNEMO_DTYPE_F32, 4>(nr, x, kd, packed + i * kd, kd, y + i, ldo, 0, kd, false);
        for (; i < rows; ++i)
            avx2::tile_rows_avx2<MNEMO_DTYPE_F32, 1>(nr, x, kd, packed + i * kd, kd, y + i, ldo, 0, kd, false);
    }
}

// The key dtypes select_pk_score dispatches on.
template struct Avx2<MNEMO_DTYPE_F32>;
template struct Avx2<MNEMO_DTYPE_F16>;
template struct Avx2<MNEMO_DTYPE_BF16>;

}  // namespace mnemo_cpu::pk_score
