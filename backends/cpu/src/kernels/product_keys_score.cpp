// PK_SCORE, the sub-key scores of product-key memories (product_keys family).
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
// This file holds the portable path (any rank), the task split and the dispatch; the vector paths
// for ranks 1, 2, 4 and 8 are in arch/x86/product_keys_score_avx2.cpp and
// arch/arm/product_keys_score_neon.cpp (product_keys_score.hpp declares them).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernel_api.hpp"
#include "product_keys.hpp"
#include "product_keys_score.hpp"
#include "scalar_math.hpp"
#include "vector_isa.hpp"

namespace mnemo_cpu {
namespace {

using pk_score::inv_rms;
using pk_score::ScoreArgs;

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

// This build's vector path of PK_SCORE (AVX2 or NEON; a build has one), for the kernels below.
#if defined(MNEMO_HAVE_AVX2_KERNELS)
template <int DT>
using VectorPath = pk_score::Avx2<DT>;
constexpr auto packed_product_vector = pk_score::packed_product_avx2;
#elif defined(MNEMO_HAVE_NEON_KERNELS)
template <int DT>
using VectorPath = pk_score::Neon<DT>;
constexpr auto packed_product_vector = pk_score::packed_product_neon;
#endif

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

// VECTOR: this build's vector kernels (AVX2 or NEON, vector_isa.hpp).
template <int DT, bool VECTOR>
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
#if defined(MNEMO_HAVE_VECTOR_KERNELS)
        if (VECTOR) {
            packed_product_vector(qg, n1 - n0, packed, rows, a.kdim, out, ldo);
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
template <int DT, bool VECTOR>
void pk_score_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const ScoreArgs a = score_args(p);
    if (a.n == 0 || a.nk == 0 || a.rank == 0) return;
    if (a.n >= kLargeN) return pk_score_packed<DT, VECTOR>(call, a, ith, nth);
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
#if defined(MNEMO_HAVE_VECTOR_KERNELS)
    const bool vector_rank = VECTOR && a.rank <= 8 && 8 % a.rank == 0;
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
#if defined(MNEMO_HAVE_VECTOR_KERNELS)
        if (vector_rank && a.gain && have_keys != key_task && g1 - g0 == 1) {
            if (src != have_src || g0 != have_n0 || g1 != have_n1) {
                expand_queries(a, src, g0, g1, qx);
                have_src = src;
                have_n0 = g0;
                have_n1 = g1;
            }
            VectorPath<DT>::score_keys_norm(a, b, j0, j1, g0, qx, inv);
            have_keys = key_task;
            continue;
        }
#endif
        if (a.gain && have_keys != key_task) {
            for (int64_t j = j0; j < j1; ++j) {
                const size_t k0 = static_cast<size_t>((b * a.nk + j) * a.len);
#if defined(MNEMO_HAVE_VECTOR_KERNELS)
                if (vector_rank) {
                    VectorPath<DT>::key_inv_rms(a, k0, inv + (j - j0) * a.rank);
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
#if defined(MNEMO_HAVE_VECTOR_KERNELS)
            if (vector_rank) {
                VectorPath<DT>::score_block(a, b, j0, j1, n0, n1, qx, block_inv);
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

template <bool VECTOR>
KernelFn score_kernel_for(int32_t dtype) {
    switch (dtype) {
        case MNEMO_DTYPE_F16: return pk_score_kernel<MNEMO_DTYPE_F16, VECTOR>;
        case MNEMO_DTYPE_BF16: return pk_score_kernel<MNEMO_DTYPE_BF16, VECTOR>;
        default: return pk_score_kernel<MNEMO_DTYPE_F32, VECTOR>;
    }
}

}  // namespace

KernelFn select_pk_score(PreparedNode& p, Isa isa) {
    const mnemo_node& nd = p.node;
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
    if (has_vector_kernels(isa)) return score_kernel_for<true>(nd.inputs[1].dtype);
    return score_kernel_for<false>(nd.inputs[1].dtype);
}

// A K-long dot product per output element.
double pk_score_work(const mnemo_node& n) { return static_cast<double>(numel(n.output)) * static_cast<double>(n.inputs[1].shape[2]); }

}  // namespace mnemo_cpu
