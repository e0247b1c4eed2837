// PK_SCORE's NEON path (arm64): sub-key ranks 1, 2, 4 and 8, the AVX2 path's layout
// (arch/x86/product_keys_score_avx2.cpp) in pairs of 4-lane registers (lo: positions p..p+3 of an
// 8-position step, hi: p+4..p+7), so rank r's partial sums sit in the same positions and
// neon::rank_sums8 adds them up. Advanced SIMD is in the AArch64 baseline: no target attributes.
#include <cstddef>
#include <cstdint>

#include "kernels/product_keys_score.hpp"

#if !defined(MNEMO_HAVE_NEON_KERNELS)
#error "arch/arm/ files are for arm64 targets only: backends/cpu/CMakeLists.txt chooses them by CMAKE_SYSTEM_PROCESSOR"
#endif

namespace mnemo_cpu::pk_score {
namespace {

template <int DT, int KEYS, int TOKS>
void score_tile_neon(const ScoreArgs& a, size_t k0, const float* qx, const float* inv, float* out, int64_t out_tok_stride) {
    const int64_t len = a.len;
    float32x4_t lo[KEYS][TOKS], hi[KEYS][TOKS];
#pragma GCC unroll 8
    for (int i = 0; i < KEYS; ++i)
#pragma GCC unroll 4
        for (int t = 0; t < TOKS; ++t) lo[i][t] = hi[i][t] = vdupq_n_f32(0.0f);
    int64_t p = 0;
    for (; p + 8 <= len; p += 8) {
        float32x4_t klo[KEYS], khi[KEYS];
#pragma GCC unroll 8
        for (int i = 0; i < KEYS; ++i) {
            klo[i] = neon::load4<DT>(a.keys, k0 + static_cast<size_t>(i * len + p));
            khi[i] = neon::load4<DT>(a.keys, k0 + static_cast<size_t>(i * len + p + 4));
        }
#pragma GCC unroll 4
        for (int t = 0; t < TOKS; ++t) {
            const float32x4_t qlo = vld1q_f32(qx + t * len + p), qhi = vld1q_f32(qx + t * len + p + 4);
#pragma GCC unroll 8
            for (int i = 0; i < KEYS; ++i) {
                lo[i][t] = vfmaq_f32(lo[i][t], qlo, klo[i]);
                hi[i][t] = vfmaq_f32(hi[i][t], qhi, khi[i]);
            }
        }
    }
    float sums[8];
    for (int i = 0; i < KEYS; ++i)
        for (int t = 0; t < TOKS; ++t) {
            neon::rank_sums8(lo[i][t], hi[i][t], a.rank, sums);
            // Tail (K*Rk not a multiple of 8): p is a multiple of 8, so position q has rank q % Rk.
            for (int64_t q = p; q < len; ++q)
                sums[q % a.rank] += qx[t * len + q] * neon::load1<DT>(a.keys, k0 + static_cast<size_t>(i * len + q));
            float* o = out + t * out_tok_stride + i * a.rank;
            for (int64_t r = 0; r < a.rank; ++r) o[r] = inv ? sums[r] * inv[i * a.rank + r] : sums[r];
        }
}

// Decode with the key norm (as score_tile_norm_avx2 in arch/x86/): the squares from the dot
// product's loads.
template <int DT, int KEYS>
void score_tile_norm_neon(const ScoreArgs& a, size_t k0, const float* qx, float* inv, float* out) {
    const int64_t len = a.len;
    float32x4_t dlo[KEYS], dhi[KEYS], slo[KEYS], shi[KEYS];
#pragma GCC unroll 4
    for (int i = 0; i < KEYS; ++i) dlo[i] = dhi[i] = slo[i] = shi[i] = vdupq_n_f32(0.0f);
    int64_t p = 0;
    for (; p + 8 <= len; p += 8) {
        const float32x4_t qlo = vld1q_f32(qx + p), qhi = vld1q_f32(qx + p + 4);
#pragma GCC unroll 4
        for (int i = 0; i < KEYS; ++i) {
            const float32x4_t klo = neon::load4<DT>(a.keys, k0 + static_cast<size_t>(i * len + p));
            const float32x4_t khi = neon::load4<DT>(a.keys, k0 + static_cast<size_t>(i * len + p + 4));
            dlo[i] = vfmaq_f32(dlo[i], qlo, klo);
            dhi[i] = vfmaq_f32(dhi[i], qhi, khi);
            slo[i] = vfmaq_f32(slo[i], klo, klo);
            shi[i] = vfmaq_f32(shi[i], khi, khi);
        }
    }
    float dots[8], squares[8];
    for (int i = 0; i < KEYS; ++i) {
        neon::rank_sums8(dlo[i], dhi[i], a.rank, dots);
        neon::rank_sums8(slo[i], shi[i], a.rank, squares);
        for (int64_t q = p; q < len; ++q) {
            const float kq = neon::load1<DT>(a.keys, k0 + static_cast<size_t>(i * len + q));
            dots[q % a.rank] += qx[q] * kq;
            squares[q % a.rank] += kq * kq;
        }
        for (int64_t r = 0; r < a.rank; ++r) {
            inv[i * a.rank + r] = inv_rms(squares[r], a.kdim, a.eps);
            out[i * a.rank + r] = dots[r] * inv[i * a.rank + r];
        }
    }
}

// KEYS x TOKS tiles with 2 registers each: at most 16 accumulators, leaving half of NEON's 32
// registers for the key and query vectors.
template <int DT, int TOKS>
void score_keys_neon(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n, const float* qx, const float* inv) {
    constexpr int KEYS = TOKS == 1 ? 8 : TOKS == 2 ? 4 : 2;
    const int64_t tok_stride = 2 * a.heads * a.nk * a.rank;
    float* out = a.out + ((n * 2 * a.heads + b) * a.nk) * a.rank;
    int64_t j = j0;
    for (; j + KEYS <= j1; j += KEYS)
        score_tile_neon<DT, KEYS, TOKS>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv ? inv + (j - j0) * a.rank : nullptr,
                                        out + j * a.rank, tok_stride);
    for (; j < j1; ++j)
        score_tile_neon<DT, 1, TOKS>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv ? inv + (j - j0) * a.rank : nullptr,
                                     out + j * a.rank, tok_stride);
}

}  // namespace

template <int DT>
void Neon<DT>::key_inv_rms(const ScoreArgs& a, size_t k0, float* inv) {
    float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
    int64_t p = 0;
    for (; p + 8 <= a.len; p += 8) {
        const float32x4_t vlo = neon::load4<DT>(a.keys, k0 + static_cast<size_t>(p));
        const float32x4_t vhi = neon::load4<DT>(a.keys, k0 + static_cast<size_t>(p + 4));
        lo = vfmaq_f32(lo, vlo, vlo);
        hi = vfmaq_f32(hi, vhi, vhi);
    }
    float sums[8];
    neon::rank_sums8(lo, hi, a.rank, sums);
    for (int64_t q = p; q < a.len; ++q) {
        const float v = neon::load1<DT>(a.keys, k0 + static_cast<size_t>(q));
        sums[q % a.rank] += v * v;
    }
    for (int64_t r = 0; r < a.rank; ++r) inv[r] = inv_rms(sums[r], a.kdim, a.eps);
}

// Keys j0..j1-1 of bank b for the single token n, computing their inverse RMS on the way.
template <int DT>
void Neon<DT>::score_keys_norm(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n, const float* qx,
                                float* inv) {
    float* out = a.out + ((n * 2 * a.heads + b) * a.nk) * a.rank;
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4)
        score_tile_norm_neon<DT, 4>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv + (j - j0) * a.rank, out + j * a.rank);
    for (; j < j1; ++j)
        score_tile_norm_neon<DT, 1>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv + (j - j0) * a.rank, out + j * a.rank);
}

template <int DT>
void Neon<DT>::score_block(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n0, int64_t n1,
                            const float* qx, const float* inv) {
    for (int64_t n = n0; n < n1; n += 4) {
        const float* qt = qx + (n - n0) * a.len;
        switch (n1 - n < 4 ? n1 - n : 4) {
            case 1: score_keys_neon<DT, 1>(a, b, j0, j1, n, qt, inv); break;
            case 2: score_keys_neon<DT, 2>(a, b, j0, j1, n, qt, inv); break;
            case 3: score_keys_neon<DT, 3>(a, b, j0, j1, n, qt, inv); break;
            default: score_keys_neon<DT, 4>(a, b, j0, j1, n, qt, inv); break;
        }
    }
}

// One token by 4 packed rows at a time: the token's row stays in registers' reach (L1) while the
// packed block (a few tens of KiB, in L1/L2) streams past; 2 accumulators per row.
void packed_product_neon(const float* qg, int64_t tokens, const float* packed, int64_t rows, int64_t kd, float* out,
                         int64_t ldo) {
    for (int64_t t = 0; t < tokens; ++t) {
        const float* x = qg + t * kd;
        int64_t i = 0;
        for (; i + 4 <= rows; i += 4) {
            float32x4_t a[4][2];
            for (int r = 0; r < 4; ++r) a[r][0] = a[r][1] = vdupq_n_f32(0.0f);
            int64_t d = 0;
            for (; d + 8 <= kd; d += 8) {
                const float32x4_t x0 = vld1q_f32(x + d), x1 = vld1q_f32(x + d + 4);
#pragma GCC unroll 4
                for (int r = 0; r < 4; ++r) {
                    const float* w = packed + (i + r) * kd + d;
                    a[r][0] = vfmaq_f32(a[r][0], x0, vld1q_f32(w));
                    a[r][1] = vfmaq_f32(a[r][1], x1, vld1q_f32(w + 4));
                }
            }
            for (int r = 0; r < 4; ++r) {
                float s = vaddvq_f32(vaddq_f32(a[r][0], a[r][1]));
                const float* w = packed + (i + r) * kd;
                for (int64_t e = d; e < kd; ++e) s += x[e] * w[e];
                out[t * ldo + i + r] = s;
            }
        }
        for (; i < rows; ++i) {
            const float* w = packed + i * kd;
            float32x4_t a0 = vdupq_n_f32(0.0f);
            int64_t d = 0;
            for (; d + 4 <= kd; d += 4) a0 = vfmaq_f32(a0, vld1q_f32(x + d), vld1q_f32(w + d));
            float s = vaddvq_f32(a0);
            for (; d < kd; ++d) s += x[d] * w[d];
            out[t * ldo + i] = s;
        }
    }
}

// The key dtypes select_pk_score dispatches on.
template struct Neon<MNEMO_DTYPE_F32>;
template struct Neon<MNEMO_DTYPE_F16>;
template struct Neon<MNEMO_DTYPE_BF16>;

}  // namespace mnemo_cpu::pk_score
