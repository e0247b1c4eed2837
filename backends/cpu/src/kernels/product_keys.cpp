// The query side of product-key memories (PKM, Memory+, UltraMem): PK_SCORE (sub-key scores),
// PK_TOPK (two-stage top-k over the product keys) and PK_PAIR_SCORES (scores of chosen pairs).
//
// PK_SCORE is a batched dot product of a few queries against every sub-key: at decode it is bound
// by how fast the keys stream from memory, so work is split into (bank, key block) tasks that
// each read their keys once for all tokens. The query is expanded to the keys' [K, Rk] layout
// (q[d] repeated Rk times) so that a key is one contiguous run of K*Rk elements: an 8-wide FMA
// over it leaves rank r's partial sums in lanes l with l % Rk == r (Rk dividing 8). With the
// key-norm gain, S = (q*g) . k / rms(k): g is folded into the expanded query and each key's
// inverse RMS is computed once per key block, not once per token (at decode, from the same loads
// as the dot product).
// From kLargeN tokens on, the cost is the multiply-adds instead: keys are packed into contiguous,
// already normalised f32 rows and multiplied with the matmul register tile (pk_score_packed).
//
// PK_TOPK must return exactly the reference's indices (engine/src/ops_reference_product_keys.cpp),
// so it ranks integer keys under the same order rules: stage 1 ranks s1, s2 as f32 (formed in
// double like the reference: u[r]*S[r] is exact in double, so the sums round identically);
// stage 2 ranks the pair scores in double. Additive pair scores s1+s2 are bit-identical to the
// reference's. Tucker pair scores are re-associated (S1[i] (sum_c core_c) precomputed per row,
// then an Rk-dot per pair), which moves a double result by a few 1e-16 relative: the order can only
// differ from the reference's where two distinct pair scores agree to ~15 digits, far below the
// spacing of f32 inputs (f32 arithmetic, 6e-8 relative, would flip real near-ties among m*m pairs).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "../node_check.hpp"
#include "dot.hpp"
#include "kernel_api.hpp"
#include "scalar_math.hpp"
#include "simd_avx2.hpp"
#include "topk_order.hpp"

namespace mnemo_cpu {
namespace {

template <int DT>
inline float key_at(const void* w, size_t i) {
    if constexpr (DT == MNEMO_DTYPE_F32) return static_cast<const float*>(w)[i];
    if constexpr (DT == MNEMO_DTYPE_F16) return mnemo::f16_to_f32(static_cast<const uint16_t*>(w)[i]);
    return mnemo::bf16_to_f32(static_cast<const uint16_t*>(w)[i]);
}

// ================================================================== PK_SCORE

constexpr int64_t kKeyBlockMax = 32;     // keys per task: 32 x K x Rk stays in L1/L2 for every token
constexpr int64_t kKeyBlockMin = 8;
constexpr int64_t kQueryFloats = 32768;  // expanded queries held at once (128 KiB per thread)

enum ScorePlanSlot { kPlanChunk = 0 };  // tokens per expanded-query chunk

struct ScoreArgs {
    const float* q;
    const void* keys;
    const void* gain;  // null without key norm
    int32_t gain_dt;
    float eps;
    float* out;
    int64_t n, nq, heads, share, nk, kdim, rank;
    int64_t len;  // elements per key: K * Rk
};

ScoreArgs score_args(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    ScoreArgs a{};
    a.q = static_cast<const float*>(p.in[0]);
    a.keys = p.in[1];
    a.gain = nd.n_inputs == 3 ? p.in[2] : nullptr;
    a.gain_dt = nd.n_inputs == 3 ? nd.inputs[2].dtype : MNEMO_DTYPE_F32;
    a.eps = nd.fparams[0];
    a.out = static_cast<float*>(p.out);
    a.n = nd.inputs[0].shape[0];
    a.nq = nd.inputs[0].shape[1];
    a.kdim = nd.inputs[0].shape[3];
    a.heads = nd.iparams[0];
    a.share = nd.iparams[1];
    a.nk = nd.inputs[1].shape[1];
    a.rank = nd.inputs[1].shape[3];
    a.len = a.kdim * a.rank;
    return a;
}

// qx[t][d*Rk + r] = q[n0+t, src/2, src%2, d] * g[d] for tokens n0..n1-1 (src = query head and side).
void expand_queries(const ScoreArgs& a, int64_t src, int64_t n0, int64_t n1, float* qx) {
    for (int64_t n = n0; n < n1; ++n) {
        const float* q = a.q + ((n * a.nq + src / 2) * 2 + src % 2) * a.kdim;
        float* row = qx + (n - n0) * a.len;
        for (int64_t d = 0; d < a.kdim; ++d) {
            const float v = a.gain ? q[d] * load_weight(a.gain, a.gain_dt, static_cast<size_t>(d)) : q[d];
            for (int64_t r = 0; r < a.rank; ++r) row[d * a.rank + r] = v;
        }
    }
}

inline float inv_rms(float sum_sq, int64_t kdim, float eps) {
    return kdim > 0 ? 1.0f / std::sqrt(sum_sq / static_cast<float>(kdim) + eps) : 1.0f;
}

// --- portable path: any rank.

template <int DT>
void key_sums_scalar(const void* keys, size_t k0, const float* qx, int64_t kdim, int64_t rank, float* sums) {
    if (rank <= 8 && 8 % rank == 0) {
        // The vector kernels' layout in plain code: 8 running sums over the contiguous key, sum l
        // holding rank l % Rk, which the compiler can turn into vector code for the baseline ISA.
        const int64_t len = kdim * rank;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t p = 0;
        for (; p + 8 <= len; p += 8)
            for (int l = 0; l < 8; ++l) acc[l] += qx[p + l] * key_at<DT>(keys, k0 + static_cast<size_t>(p + l));
        for (int64_t r = 0; r < rank; ++r) sums[r] = 0.0f;
        for (int l = 0; l < 8; ++l) sums[l % rank] += acc[l];
        for (; p < len; ++p) sums[p % rank] += qx[p] * key_at<DT>(keys, k0 + static_cast<size_t>(p));
        return;
    }
    for (int64_t r = 0; r < rank; ++r) {
        float a0 = 0.0f, a1 = 0.0f;
        int64_t d = 0;
        for (; d + 2 <= kdim; d += 2) {
            const size_t i0 = static_cast<size_t>(d * rank + r), i1 = i0 + static_cast<size_t>(rank);
            a0 += qx[i0] * key_at<DT>(keys, k0 + i0);
            a1 += qx[i1] * key_at<DT>(keys, k0 + i1);
        }
        if (d < kdim) a0 += qx[d * rank + r] * key_at<DT>(keys, k0 + static_cast<size_t>(d * rank + r));
        sums[r] = a0 + a1;
    }
}

template <int DT>
void inv_rms_scalar(const void* keys, size_t k0, int64_t kdim, int64_t rank, float eps, float* inv) {
    if (rank <= 8 && 8 % rank == 0) {  // 8 running sums of squares, as in key_sums_scalar
        const int64_t len = kdim * rank;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, ss[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t p = 0;
        for (; p + 8 <= len; p += 8)
            for (int l = 0; l < 8; ++l) {
                const float v = key_at<DT>(keys, k0 + static_cast<size_t>(p + l));
                acc[l] += v * v;
            }
        for (int l = 0; l < 8; ++l) ss[l % rank] += acc[l];
        for (; p < len; ++p) {
            const float v = key_at<DT>(keys, k0 + static_cast<size_t>(p));
            ss[p % rank] += v * v;
        }
        for (int64_t r = 0; r < rank; ++r) inv[r] = inv_rms(ss[r], kdim, eps);
        return;
    }
    for (int64_t r = 0; r < rank; ++r) {
        float ss = 0.0f;
        for (int64_t d = 0; d < kdim; ++d) {
            const float v = key_at<DT>(keys, k0 + static_cast<size_t>(d * rank + r));
            ss += v * v;
        }
        inv[r] = inv_rms(ss, kdim, eps);
    }
}

// Keys j0..j1-1 of bank b against tokens n0..n1-1 (their expanded queries in qx).
template <int DT>
void score_block_scalar(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n0, int64_t n1, const float* qx,
                        const float* inv, float* sums) {
    for (int64_t j = j0; j < j1; ++j) {
        const size_t k0 = static_cast<size_t>((b * a.nk + j) * a.len);
        for (int64_t n = n0; n < n1; ++n) {
            key_sums_scalar<DT>(a.keys, k0, qx + (n - n0) * a.len, a.kdim, a.rank, sums);
            float* o = a.out + ((n * 2 * a.heads + b) * a.nk + j) * a.rank;
            for (int64_t r = 0; r < a.rank; ++r) o[r] = inv ? sums[r] * inv[(j - j0) * a.rank + r] : sums[r];
        }
    }
}

// --- AVX2 path: Rk in {1, 2, 4, 8}.
#if defined(MNEMO_HAVE_AVX2_KERNELS)

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

template <int DT>
MNEMO_AVX2 void inv_rms_avx2(const ScoreArgs& a, size_t k0, float* inv) {
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

// Keys j0..j1-1 of bank b for the single token n, computing their inverse RMS on the way.
template <int DT>
MNEMO_AVX2 void score_keys_norm_avx2(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n, const float* qx,
                                     float* inv) {
    float* out = a.out + ((n * 2 * a.heads + b) * a.nk) * a.rank;
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4)
        score_tile_norm_avx2<DT, 4>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv + (j - j0) * a.rank, out + j * a.rank);
    for (; j < j1; ++j)
        score_tile_norm_avx2<DT, 1>(a, static_cast<size_t>((b * a.nk + j) * a.len), qx, inv + (j - j0) * a.rank, out + j * a.rank);
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

template <int DT>
MNEMO_AVX2 void score_block_avx2(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, int64_t n0, int64_t n1,
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

#endif  // MNEMO_HAVE_AVX2_KERNELS

// --- Many tokens: a packed GEMM. With N tokens every key is used N times, so the cost is the
// N*Nk*K*Rk multiply-adds, not the key stream. The (j, r) key vectors are strided by Rk in memory
// (keys[b, j, d, r]); a block of them is packed once into contiguous f32 rows [j*Rk + r][d],
// already divided by their RMS, and the gain is folded into a copy of the bank's queries, so
// S[n, b, j, r] = q'[n] . packed[j*Rk + r] is a plain row-times-row product: the matmul register
// tile of dot.hpp does it. For one token n and bank b the block's outputs are contiguous
// (j*Rk + r), which is the tile's row layout.
constexpr int64_t kLargeN = 16;          // tokens from which PK_SCORE takes the packed path
constexpr int64_t kPackKeys = 32;        // keys per packed block: 32 x Rk x K f32 (32 KiB at K=128, Rk=2)
constexpr int64_t kPackTokens = 256;     // most tokens of one bank's queries held at once

struct PackPlan {
    int64_t blocks, groups, group_size;
};

// Tasks are (bank, token group, key block), key block innermost so that consecutive tasks of a
// thread reuse its copy of the queries; tokens are split into more groups only when there are
// too few key blocks to keep every thread busy.
inline PackPlan pack_plan(int64_t n, int64_t banks, int64_t nk, int nth) {
    PackPlan pl{};
    pl.blocks = (nk + kPackKeys - 1) / kPackKeys;
    const int64_t key_tasks = banks * pl.blocks, want = 4 * static_cast<int64_t>(nth);
    int64_t groups = (n + kPackTokens - 1) / kPackTokens;
    if (key_tasks * groups < want) groups = std::min((want + key_tasks - 1) / key_tasks, (n + 3) / 4);
    pl.group_size = (n + groups - 1) / groups;
    pl.groups = (n + pl.group_size - 1) / pl.group_size;
    return pl;
}

// packed[(j - j0)*Rk + r][d] = k[b, j, d, r] / rms(k[b, j, :, r]) (no division without key norm).
template <int DT>
void pack_keys(const ScoreArgs& a, int64_t b, int64_t j0, int64_t j1, float* packed) {
    const int64_t rk = a.rank, kd = a.kdim;
    for (int64_t j = j0; j < j1; ++j) {
        const size_t k0 = static_cast<size_t>((b * a.nk + j) * a.len);
        float* rows = packed + (j - j0) * rk * kd;
        for (int64_t d = 0; d < kd; ++d)
            for (int64_t r = 0; r < rk; ++r) rows[r * kd + d] = key_at<DT>(a.keys, k0 + static_cast<size_t>(d * rk + r));
        if (!a.gain) continue;
        for (int64_t r = 0; r < rk; ++r) {
            float* row = rows + r * kd;
            float s[4] = {0, 0, 0, 0};
            int64_t d = 0;
            for (; d + 4 <= kd; d += 4)
                for (int l = 0; l < 4; ++l) s[l] += row[d + l] * row[d + l];
            for (; d < kd; ++d) s[0] += row[d] * row[d];
            const float inv = inv_rms((s[0] + s[1]) + (s[2] + s[3]), kd, a.eps);
            for (d = 0; d < kd; ++d) row[d] *= inv;
        }
    }
}

// qg[t][d] = q[n0 + t, src/2, src%2, d] * g[d].
void gained_queries(const ScoreArgs& a, int64_t src, int64_t n0, int64_t n1, float* qg) {
    for (int64_t n = n0; n < n1; ++n) {
        const float* q = a.q + ((n * a.nq + src / 2) * 2 + src % 2) * a.kdim;
        float* row = qg + (n - n0) * a.kdim;
        for (int64_t d = 0; d < a.kdim; ++d)
            row[d] = a.gain ? q[d] * load_weight(a.gain, a.gain_dt, static_cast<size_t>(d)) : q[d];
    }
}

// Portable product of `tokens` query rows by `rows` packed rows (8 running sums per dot product,
// a loop the compiler can vectorise for the baseline ISA).
void packed_product_scalar(const float* qg, int64_t tokens, const float* packed, int64_t rows, int64_t kd, float* out,
                           int64_t ldo) {
    for (int64_t t = 0; t < tokens; ++t) {
        const float* x = qg + t * kd;
        for (int64_t i = 0; i < rows; ++i) {
            const float* w = packed + i * kd;
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int64_t d = 0;
            for (; d + 8 <= kd; d += 8)
                for (int l = 0; l < 8; ++l) acc[l] += x[d + l] * w[d + l];
            float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            for (; d < kd; ++d) s += x[d] * w[d];
            out[t * ldo + i] = s;
        }
    }
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
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
#endif

template <int DT, bool AVX2>
void pk_score_packed(const KernelCall& call, const ScoreArgs& a, int ith, int nth) {
    const int64_t banks = 2 * a.heads;
    const PackPlan pl = pack_plan(a.n, banks, a.nk, nth);
    float* qg = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    float* packed = qg + call.node->plan[kPlanChunk] * a.kdim;
    const int64_t ldo = banks * a.nk * a.rank;  // one token's outputs
    int64_t have_src = -1, have_group = -1;
    int64_t t0, t1;
    split_range(banks * pl.groups * pl.blocks, ith, nth, 1, &t0, &t1);
    for (int64_t t = t0; t < t1; ++t) {
        const int64_t blk = t % pl.blocks, group = t / pl.blocks % pl.groups, b = t / (pl.blocks * pl.groups);
        const int64_t src = (b / 2) / a.share * 2 + b % 2;
        const int64_t n0 = group * pl.group_size, n1 = std::min(a.n, n0 + pl.group_size);
        if (src != have_src || group != have_group) {
            gained_queries(a, src, n0, n1, qg);
            have_src = src;
            have_group = group;
        }
        const int64_t j0 = blk * kPackKeys, j1 = std::min(a.nk, j0 + kPackKeys);
        pack_keys<DT>(a, b, j0, j1, packed);
        float* out = a.out + ((n0 * banks + b) * a.nk + j0) * a.rank;
        const int64_t rows = (j1 - j0) * a.rank;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        if (AVX2) {
            packed_product_avx2(qg, n1 - n0, packed, rows, a.kdim, out, ldo);
            continue;
        }
#endif
        packed_product_scalar(qg, n1 - n0, packed, rows, a.kdim, out, ldo);
    }
}

// Tasks are (bank, key block, token group), token group innermost. Key blocks shrink (32 -> 8)
// and tokens are split into groups only when there are too few tasks to keep every thread busy
// (few keys, many tokens: then each group's task computes its block's inverse RMS again, a
// small cost next to the dot products of its tokens). At decode sizes (Nk in the hundreds or
// thousands) each key is read by exactly one task.
template <int DT, bool AVX2>
void pk_score_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const ScoreArgs a = score_args(p);
    if (a.n == 0 || a.nk == 0 || a.rank == 0) return;
    if (a.n >= kLargeN) return pk_score_packed<DT, AVX2>(call, a, ith, nth);
    const int64_t banks = 2 * a.heads, want = 4 * static_cast<int64_t>(nth);
    int64_t block = kKeyBlockMax;
    while (block > kKeyBlockMin && banks * ((a.nk + block - 1) / block) < want) block /= 2;
    const int64_t blocks = (a.nk + block - 1) / block, key_tasks = banks * blocks;
    int64_t groups = key_tasks >= want ? 1 : (want + key_tasks - 1) / key_tasks;
    groups = std::min(groups, (a.n + 3) / 4);
    const int64_t group_size = (a.n + groups - 1) / groups;
    groups = (a.n + group_size - 1) / group_size;
    const int64_t chunk = p.plan[kPlanChunk];

    float* qx = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    float* inv = qx + chunk * a.len;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    const bool vector_rank = AVX2 && a.rank <= 8 && 8 % a.rank == 0;
#endif
    float sums_scalar[8];
    int64_t have_src = -1, have_n0 = -1, have_n1 = -1;  // the queries now in qx
    int64_t have_keys = -1;                             // the key block whose inv is computed
    int64_t t0, t1;
    split_range(key_tasks * groups, ith, nth, 1, &t0, &t1);
    for (int64_t t = t0; t < t1; ++t) {
        const int64_t key_task = t / groups, group = t % groups;
        const int64_t b = key_task / blocks, j0 = (key_task % blocks) * block, j1 = std::min(a.nk, j0 + block);
        const int64_t src = (b / 2) / a.share * 2 + b % 2;
        const int64_t g0 = group * group_size, g1 = std::min(a.n, g0 + group_size);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
        if (vector_rank && a.gain && have_keys != key_task && g1 - g0 == 1) {
            if (src != have_src || g0 != have_n0 || g1 != have_n1) {
                expand_queries(a, src, g0, g1, qx);
                have_src = src;
                have_n0 = g0;
                have_n1 = g1;
            }
            score_keys_norm_avx2<DT>(a, b, j0, j1, g0, qx, inv);
            have_keys = key_task;
            continue;
        }
#endif
        if (a.gain && have_keys != key_task) {
            for (int64_t j = j0; j < j1; ++j) {
                const size_t k0 = static_cast<size_t>((b * a.nk + j) * a.len);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
                if (vector_rank) {
                    inv_rms_avx2<DT>(a, k0, inv + (j - j0) * a.rank);
                    continue;
                }
#endif
                inv_rms_scalar<DT>(a.keys, k0, a.kdim, a.rank, a.eps, inv + (j - j0) * a.rank);
            }
            have_keys = key_task;
        }
        for (int64_t n0 = g0; n0 < g1; n0 += chunk) {
            const int64_t n1 = std::min(g1, n0 + chunk);
            if (src != have_src || n0 != have_n0 || n1 != have_n1) {
                expand_queries(a, src, n0, n1, qx);
                have_src = src;
                have_n0 = n0;
                have_n1 = n1;
            }
            const float* block_inv = a.gain ? inv : nullptr;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
            if (vector_rank) {
                score_block_avx2<DT>(a, b, j0, j1, n0, n1, qx, block_inv);
                continue;
            }
#endif
            // Ranks above 8 keep one key's rank sums in scratch, after the inverse RMS values.
            if (a.rank <= 8) {
                score_block_scalar<DT>(a, b, j0, j1, n0, n1, qx, block_inv, sums_scalar);
            } else {
                float* sums = inv + kKeyBlockMax * a.rank;
                score_block_scalar<DT>(a, b, j0, j1, n0, n1, qx, block_inv, sums);
            }
        }
    }
}

// ================================================================== PK_TOPK

struct Pair {
    double t;     // the pair score
    int64_t key;  // topk::rank_key(t)
    int64_t p;    // pair index a*m + b
};

// Orders: larger score first, then the lower index (strict: no two items are equal).
inline bool pair_before(const Pair& x, const Pair& y) { return x.key != y.key ? x.key > y.key : x.p < y.p; }
inline bool packed_before(const int64_t& x, const int64_t& y) { return x > y; }

// True when a newcomer of value v ranks strictly above the kept value `worst`. Items arrive in
// increasing index order, so a newcomer that ties with a kept item ranks after it: strict '>'
// (-0.0 and +0.0 compare equal, and a NaN newcomer compares false); only a NaN worst needs the
// rank rule, under which any number ranks above NaN. One compare rejects most newcomers.
inline bool beats(double v, double worst) { return v > worst || (std::isnan(worst) && !std::isnan(v)); }

// The `cap` best items offered, in a binary heap whose root is the worst kept item (parents rank
// after their children). A full heap replaces its root and sifts it down: O(log cap) per
// admission, also for the large m and k the op allows (an insertion-sorted list is O(cap)).
template <class T, bool (*Before)(const T&, const T&)>
struct BestOf {
    T* h;
    int64_t cap;
    int64_t size = 0;

    bool full() const { return size == cap; }
    const T& worst() const { return h[0]; }
    // Adds x; when full, x must rank before worst().
    void add(const T& x) {
        if (size < cap) {
            int64_t i = size++;
            while (i > 0 && Before(h[(i - 1) / 2], x)) {
                h[i] = h[(i - 1) / 2];
                i = (i - 1) / 2;
            }
            h[i] = x;
            return;
        }
        int64_t i = 0;
        for (;;) {
            int64_t c = 2 * i + 1;
            if (c >= size) break;
            if (c + 1 < size && Before(h[c], h[c + 1])) ++c;  // the worse child
            if (!Before(x, h[c])) break;
            h[i] = h[c];
            i = c;
        }
        h[i] = x;
    }
    void sort_best_first() { std::sort(h, h + size, [](const T& x, const T& y) { return Before(x, y); }); }
};

// PK_TOPK's per-thread scratch, carved from one float block (each part 8-byte aligned).
struct TopkScratch {
    float* s1;      // [Nk] stage-1 scores of the row side (Tucker: u . S1)
    float* s2;      // [Nk] of the column side
    int64_t* heap;  // [m] stage-1 selection (packed ranks)
    int64_t* i1;    // [m] row candidates, best first
    int64_t* i2;    // [m] column candidates
    double* w;      // [m, Rk]  S1[I1[a]] (sum_c core_c)
    double* v;      // [Rk, m]  S2[I2[b]], rank-major so a row's m pair scores are one vector loop
    double* t;      // [m]      one row's pair scores
    double* csum;   // [Rk, Rk] sum of the cores
    double* uv;     // [2, Rk]  this head's u and v
    Pair* pairs;    // [k] stage-2 selection
};

size_t topk_scratch_bytes(int64_t nk, int64_t m, int64_t k, int64_t rank) {
    size_t bytes = (2 * static_cast<size_t>(nk) * sizeof(float) + 7) / 8 * 8;
    bytes += 3 * static_cast<size_t>(m) * sizeof(int64_t);
    bytes += (2 * static_cast<size_t>(m * rank) + static_cast<size_t>(m + rank * rank + 2 * rank)) * sizeof(double);
    bytes += static_cast<size_t>(k) * sizeof(Pair);
    return bytes;
}

TopkScratch carve_topk(float* base, int64_t nk, int64_t m, int64_t rank) {
    TopkScratch s{};
    char* c = reinterpret_cast<char*>(base);
    s.s1 = reinterpret_cast<float*>(c);
    s.s2 = s.s1 + nk;
    c += (2 * static_cast<size_t>(nk) * sizeof(float) + 7) / 8 * 8;
    s.heap = reinterpret_cast<int64_t*>(c);
    s.i1 = s.heap + m;
    s.i2 = s.i1 + m;
    s.w = reinterpret_cast<double*>(s.i2 + m);
    s.v = s.w + m * rank;
    s.t = s.v + m * rank;
    s.csum = s.t + m;
    s.uv = s.csum + rank * rank;
    s.pairs = reinterpret_cast<Pair*>(s.uv + 2 * rank);
    return s;
}

// Stage 1 of one side: the m best of s[0..nk) in ARGTOPK order, best first, into idx.
void select_side(const float* s, int64_t nk, int64_t m, int64_t* heap, int64_t* idx) {
    BestOf<int64_t, packed_before> best{heap, m};
    int64_t j = 0;
    for (; j < nk && !best.full(); ++j) best.add(topk::packed_rank(s[j], j));
    float worst = s[topk::packed_index(best.worst())];
    bool worst_nan = std::isnan(worst);
    for (; j < nk; ++j) {
        const float x = s[j];
        if (!(x > worst) && !(worst_nan && x == x)) continue;  // beats(), with isnan(worst) kept
        best.add(topk::packed_rank(x, j));
        worst = s[topk::packed_index(best.worst())];
        worst_nan = std::isnan(worst);
    }
    best.sort_best_first();
    for (int64_t a = 0; a < m; ++a) idx[a] = topk::packed_index(heap[a]);
}

struct TopkArgs {
    const float* sc;
    const void* u;
    const void* v;
    const void* cores[5];
    int32_t u_dt, v_dt, core_dt[5];
    int64_t n_cores;
    int32_t* out;
    int64_t n, heads, nk, rank, m, k;
};

TopkArgs topk_args(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    TopkArgs a{};
    a.sc = static_cast<const float*>(p.in[0]);
    a.n = nd.inputs[0].shape[0];
    a.heads = nd.inputs[0].shape[1] / 2;
    a.nk = nd.inputs[0].shape[2];
    a.rank = nd.inputs[0].shape[3];
    a.m = nd.iparams[0];
    a.k = nd.iparams[1];
    a.out = static_cast<int32_t*>(p.out);
    if (nd.n_inputs > 1) {
        a.u = p.in[1];
        a.v = p.in[2];
        a.u_dt = nd.inputs[1].dtype;
        a.v_dt = nd.inputs[2].dtype;
        a.n_cores = nd.n_inputs - 3;
        for (int64_t c = 0; c < a.n_cores; ++c) {
            a.cores[c] = p.in[3 + c];
            a.core_dt[c] = nd.inputs[3 + c].dtype;
        }
    }
    return a;
}

using PairTop = BestOf<Pair, pair_before>;

// Offers pair (t, p); false when it ranks after all k kept pairs.
inline bool offer_pair(PairTop& top, double t, int64_t p) {
    if (top.full() && !beats(t, top.worst().t)) return false;  // most pairs stop here
    top.add(Pair{t, topk::rank_key(t), p});
    return true;
}

// Stage 2, additive: t = s1[i] + s2[j] with both candidate lists sorted best first, so within a
// row a the score never increases with b, and row a's best (b = 0) never beats row a-1's. Once a
// pair is rejected, the rest of its row is too (equal scores lose on the pair index, and the
// worst kept score only rises), and if that happens at b = 0 every later row is. This holds for
// finite scores only (inf + -inf is NaN), so any non-finite candidate disables the early exits.
void pairs_additive(const TopkArgs& a, const float* s1, const float* s2, const TopkScratch& s, PairTop& top) {
    bool finite = true;
    for (int64_t x = 0; x < a.m; ++x) finite = finite && std::isfinite(s1[s.i1[x]]) && std::isfinite(s2[s.i2[x]]);
    for (int64_t x = 0; x < a.m; ++x) {
        const double row = static_cast<double>(s1[s.i1[x]]);
        for (int64_t y = 0; y < a.m; ++y) {
            if (offer_pair(top, row + static_cast<double>(s2[s.i2[y]]), x * a.m + y) || !finite) continue;
            if (y == 0) return;
            break;
        }
    }
}

// Stage 2, Tucker: sum_c S1[i] core_c S2[j]^T = (S1[i] C) . S2[j] with C = sum_c core_c, all in double.
void pairs_tucker(const TopkArgs& a, int64_t n, int64_t h, const TopkScratch& s, PairTop& top) {
    const int64_t rk = a.rank;
    for (int64_t e = 0; e < rk * rk; ++e) {
        double c = 0.0;
        for (int64_t core = 0; core < a.n_cores; ++core)
            c += static_cast<double>(load_weight(a.cores[core], a.core_dt[core], static_cast<size_t>(h * rk * rk + e)));
        s.csum[e] = c;
    }
    const float* s1 = a.sc + ((n * 2 * a.heads + 2 * h) * a.nk) * rk;
    const float* s2 = s1 + a.nk * rk;
    for (int64_t x = 0; x < a.m; ++x) {
        const float* r1 = s1 + s.i1[x] * rk;
        const float* r2 = s2 + s.i2[x] * rk;
        for (int64_t c2 = 0; c2 < rk; ++c2) {
            double acc = 0.0;
            for (int64_t c1 = 0; c1 < rk; ++c1) acc += static_cast<double>(r1[c1]) * s.csum[c1 * rk + c2];
            s.w[x * rk + c2] = acc;
            s.v[c2 * a.m + x] = static_cast<double>(r2[c2]);
        }
    }
    // Row by row: the m scores first (a branch-free loop over b), then the selection.
    for (int64_t x = 0; x < a.m; ++x) {
        const double* wx = s.w + x * rk;
        for (int64_t y = 0; y < a.m; ++y) s.t[y] = 0.0;
        for (int64_t r = 0; r < rk; ++r) {
            const double wr = wx[r];
            const double* vr = s.v + r * a.m;
            for (int64_t y = 0; y < a.m; ++y) s.t[y] += wr * vr[y];
        }
        for (int64_t y = 0; y < a.m; ++y) offer_pair(top, s.t[y], x * a.m + y);
    }
}

// Tasks are (token, head) rows; each runs both stages alone in its thread's scratch.
void pk_topk_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const TopkArgs a = topk_args(p);
    const TopkScratch s = carve_topk(call.scratch + static_cast<size_t>(ith) * call.scratch_stride, a.nk, a.m, a.rank);
    int64_t r0, r1;
    split_range(a.n * a.heads, ith, nth, 1, &r0, &r1);
    for (int64_t row = r0; row < r1; ++row) {
        const int64_t n = row / a.heads, h = row % a.heads;
        const float* S1 = a.sc + ((n * 2 * a.heads + 2 * h) * a.nk) * a.rank;
        const float* S2 = S1 + a.nk * a.rank;
        const float* s1 = S1;  // additive: rank 1, the scores themselves
        const float* s2 = S2;
        if (a.u) {
            // s = sum_r u[r] S[j, r] in double, rounded once to f32, exactly as the reference.
            const int64_t rk = a.rank;
            double* u = s.uv;
            double* v = s.uv + rk;
            for (int64_t r = 0; r < rk; ++r) {
                u[r] = static_cast<double>(load_weight(a.u, a.u_dt, static_cast<size_t>(h * rk + r)));
                v[r] = static_cast<double>(load_weight(a.v, a.v_dt, static_cast<size_t>(h * rk + r)));
            }
            for (int64_t j = 0; j < a.nk; ++j) {
                double x1 = 0.0, x2 = 0.0;
                for (int64_t r = 0; r < rk; ++r) {
                    x1 += u[r] * static_cast<double>(S1[j * rk + r]);
                    x2 += v[r] * static_cast<double>(S2[j * rk + r]);
                }
                s.s1[j] = static_cast<float>(x1);
                s.s2[j] = static_cast<float>(x2);
            }
            s1 = s.s1;
            s2 = s.s2;
        }
        select_side(s1, a.nk, a.m, s.heap, s.i1);
        select_side(s2, a.nk, a.m, s.heap, s.i2);
        PairTop top{s.pairs, a.k};
        if (a.n_cores == 0) pairs_additive(a, s1, s2, s, top);
        else pairs_tucker(a, n, h, s, top);
        top.sort_best_first();
        int32_t* out = a.out + row * a.k;
        for (int64_t q = 0; q < a.k; ++q)
            out[q] = static_cast<int32_t>(s.i1[s.pairs[q].p / a.m] * a.nk + s.i2[s.pairs[q].p % a.m]);
    }
}

// ================================================================== PK_PAIR_SCORES

// One output element per (entry, core): Rk*Rk products summed in double in the reference's order,
// then rounded once to f32 (tiny work per entry; no reason to be less exact than the reference).
void pk_pair_scores_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_node& nd = p.node;
    const float* sc = static_cast<const float*>(p.in[0]);
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    float* out = static_cast<float*>(p.out);
    const int64_t heads = nd.inputs[0].shape[1] / 2, nk = nd.inputs[0].shape[2], rk = nd.inputs[0].shape[3];
    const int64_t k = nd.inputs[1].shape[2], cores = nd.n_inputs - 2, width = cores == 0 ? 1 : cores;
    int64_t e0, e1;
    split_range(numel(nd.inputs[1]), ith, nth, 1, &e0, &e1);
    for (int64_t e = e0; e < e1; ++e) {
        const int64_t n = e / (heads * k), h = e / k % heads, i = idx[e] / nk, j = idx[e] % nk;
        const float* r1 = sc + ((n * 2 * heads + 2 * h) * nk + i) * rk;
        const float* r2 = sc + ((n * 2 * heads + 2 * h + 1) * nk + j) * rk;
        float* o = out + e * width;
        if (cores == 0) {
            o[0] = static_cast<float>(static_cast<double>(r1[0]) + static_cast<double>(r2[0]));
            continue;
        }
        for (int64_t c = 0; c < cores; ++c) {
            const void* core = p.in[2 + c];
            const int32_t dt = nd.inputs[2 + c].dtype;
            double acc = 0.0;
            for (int64_t x = 0; x < rk; ++x)
                for (int64_t y = 0; y < rk; ++y)
                    acc += static_cast<double>(r1[x]) *
                           static_cast<double>(load_weight(core, dt, static_cast<size_t>((h * rk + x) * rk + y))) *
                           static_cast<double>(r2[y]);
            o[c] = static_cast<float>(acc);
        }
    }
}

// ================================================================== selection

template <bool AVX2>
KernelFn score_kernel_for(int32_t dtype) {
    switch (dtype) {
        case MNEMO_DTYPE_F16: return pk_score_kernel<MNEMO_DTYPE_F16, AVX2>;
        case MNEMO_DTYPE_BF16: return pk_score_kernel<MNEMO_DTYPE_BF16, AVX2>;
        default: return pk_score_kernel<MNEMO_DTYPE_F32, AVX2>;
    }
}

// Shared structural rules of PK_TOPK and PK_PAIR_SCORES (see op_table.cpp): the scores, the
// optional u, v (PK_TOPK) and the Tucker cores.
bool check_scores_and_cores(const mnemo_node& n, Checker& c, int first_core) {
    const mnemo_tensor* in = n.inputs;
    if (!c.f32(0, 4, 4, "4-D f32 sub-key scores [N, 2H, Nk, Rk]")) return false;
    if (in[0].shape[1] % 2 != 0) return c.fail("sub-key scores " + shape_text(in[0]) + " need an even 2H dimension");
    const int64_t heads = in[0].shape[1] / 2, rank = in[0].shape[3];
    const std::string hr = std::to_string(heads) + ", " + std::to_string(rank);
    if (n.op == MNEMO_OP_PK_TOPK && n.n_inputs > 1) {
        if (n.n_inputs < 4) return c.fail("Tucker scoring takes S, u, v and 1..5 cores; additive scoring takes S alone");
        for (int i = 1; i < 3; ++i) {
            if (!c.weight(i, 2, i == 1 ? "2-D f32/f16/bf16 row vector u [H, Rk]" : "2-D f32/f16/bf16 column vector v [H, Rk]"))
                return false;
            if (in[i].shape[0] != heads || in[i].shape[1] != rank)
                return c.fail("input " + std::to_string(i) + ": expected [" + hr + "], got " + shape_text(in[i]));
        }
    }
    for (int i = first_core; i < n.n_inputs; ++i) {
        if (!c.weight(i, 3, "3-D f32/f16/bf16 Tucker core [H, Rk, Rk]")) return false;
        if (in[i].shape[0] != heads || in[i].shape[1] != rank || in[i].shape[2] != rank)
            return c.fail("input " + std::to_string(i) + ": expected core [" + hr + ", " + std::to_string(rank) + "], got " +
                          shape_text(in[i]));
    }
    if (n.n_inputs <= first_core && rank != 1)
        return c.fail("additive scoring needs rank-1 scores; rank " + std::to_string(rank) + " needs Tucker cores");
    return true;
}

}  // namespace

bool check_product_key_node(const mnemo_node& n, Checker& c) {
    const mnemo_tensor* in = n.inputs;
    switch (n.op) {
        case MNEMO_OP_PK_SCORE: {
            if (!c.f32(0, 4, 4, "4-D f32 queries [N, Q, 2, K]") || !c.weight(1, 4, "4-D f32/f16/bf16 sub-keys [2H, Nk, K, Rk]"))
                return false;
            const int64_t heads = n.iparams[0], share = n.iparams[1];
            if (heads < 1 || share < 1) return c.fail("heads and heads per query must be >= 1");
            if (in[0].shape[2] != 2) return c.fail("queries " + shape_text(in[0]) + " need 2 halves (row, column) in dim 2");
            if (in[1].shape[0] != 2 * heads)
                return c.fail("sub-keys " + shape_text(in[1]) + " must hold 2H = " + std::to_string(2 * heads) + " banks");
            if (in[1].shape[2] != in[0].shape[3]) return c.fail("sub-key dim differs from the query half dim");
            if (in[0].shape[1] * share < heads) return c.fail("too few queries for the heads sharing them");
            if (n.n_inputs == 3) {
                if (!c.weight(2, 1, "1-D f32/f16/bf16 key-norm gain [K]")) return false;
                if (in[2].shape[0] != in[1].shape[2]) return c.fail("key-norm gain length differs from K");
                if (!(n.fparams[0] >= 0.0f)) return c.fail("eps must be >= 0");
            }
            mnemo_tensor o = in[1];
            o.shape[0] = in[0].shape[0];
            o.shape[1] = 2 * heads;
            o.shape[2] = in[1].shape[1];
            return c.output(o);
        }
        case MNEMO_OP_PK_TOPK: {
            if (!check_scores_and_cores(n, c, 3)) return false;
            const int64_t nk = in[0].shape[2], m = n.iparams[0], k = n.iparams[1];
            if (nk > 0 && nk > INT32_MAX / nk) return c.fail("Nk*Nk virtual keys exceed i32 indices");
            if (m < 1 || m > nk) return c.fail("candidates per side m must be in 1..Nk = " + std::to_string(nk));
            if (k < 1 || k > m * m) return c.fail("k must be in 1..m*m = " + std::to_string(m * m));
            mnemo_tensor o = in[0];
            o.ndim = 3;
            o.shape[1] = in[0].shape[1] / 2;
            o.shape[2] = k;
            return c.output(o, MNEMO_DTYPE_I32);
        }
        case MNEMO_OP_PK_PAIR_SCORES: {
            if (!check_scores_and_cores(n, c, 2)) return false;
            if (!c.input(1, in[1].dtype == MNEMO_DTYPE_I32, 3, 3, "3-D i32 pair indices [N, H, k]")) return false;
            if (in[1].shape[0] != in[0].shape[0] || in[1].shape[1] != in[0].shape[1] / 2)
                return c.fail("pair indices " + shape_text(in[1]) + " do not match the scores " + shape_text(in[0]));
            mnemo_tensor o = in[1];
            o.ndim = 4;
            o.shape[3] = n.n_inputs > 2 ? n.n_inputs - 2 : 1;
            return c.output(o);
        }
        default: return c.fail("not a product-key op");
    }
}

bool check_product_key_indices(const PreparedNode& p, char* message, size_t cap) {
    if (p.node.op != MNEMO_OP_PK_PAIR_SCORES) return true;
    const mnemo_tensor& idx = p.node.inputs[1];
    const int64_t nk = p.node.inputs[0].shape[2], heads = idx.shape[1], k = idx.shape[2];
    const auto* data = static_cast<const int32_t*>(p.in[1]);
    const int64_t count = numel(idx);
    // index < Nk*Nk, tested as index / Nk < Nk (Nk*Nk may not fit any integer type here)
    for (int64_t e = 0; e < count; ++e)
        if (data[e] < 0 || nk == 0 || data[e] / nk >= nk) {
            std::snprintf(message, cap, "pk_pair_scores: pair index [%lld, %lld, %lld] is %d, outside 0..Nk*Nk-1 (Nk = %lld)",
                          static_cast<long long>(e / (heads * k)), static_cast<long long>(e / k % heads),
                          static_cast<long long>(e % k), data[e], static_cast<long long>(nk));
            return false;
        }
    return true;
}

KernelFn select_product_keys(PreparedNode& p, Isa isa) {
    const mnemo_node& nd = p.node;
    p.scratch_floats = 0;
    switch (nd.op) {
        case MNEMO_OP_PK_SCORE: {
            const int64_t n = nd.inputs[0].shape[0], rank = nd.inputs[1].shape[3];
            const int64_t kdim = nd.inputs[1].shape[2], len = kdim * rank;
            if (n >= kLargeN) {
                // a group of gained queries and one packed key block (see pk_score_packed)
                p.plan[kPlanChunk] = std::min(n, kPackTokens);
                p.scratch_floats = static_cast<size_t>((p.plan[kPlanChunk] + kPackKeys * rank) * kdim);
            } else {
                const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(n, kQueryFloats / std::max<int64_t>(len, 1)));
                p.plan[kPlanChunk] = chunk;
                // expanded queries, one inverse RMS per (key of a block, rank), one key's rank sums
                p.scratch_floats = static_cast<size_t>(chunk * len + kKeyBlockMax * rank + rank);
            }
#if defined(MNEMO_HAVE_AVX2_KERNELS)
            if (isa == Isa::Avx2) return score_kernel_for<true>(nd.inputs[1].dtype);
#endif
            (void)isa;
            return score_kernel_for<false>(nd.inputs[1].dtype);
        }
        case MNEMO_OP_PK_TOPK: {
            const mnemo_tensor& s = nd.inputs[0];
            const size_t bytes = topk_scratch_bytes(s.shape[2], nd.iparams[0], nd.iparams[1], s.shape[3]);
            p.scratch_floats = (bytes + sizeof(float) - 1) / sizeof(float) + 2;  // + 8-byte alignment slack
            return pk_topk_kernel;
        }
        case MNEMO_OP_PK_PAIR_SCORES: return pk_pair_scores_kernel;
        default: return nullptr;
    }
}

}  // namespace mnemo_cpu
