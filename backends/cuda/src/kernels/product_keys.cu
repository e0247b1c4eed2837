// The product-key family: PK_SCORE and PK_PAIR_SCORES here, PK_TOPK in product_keys_topk.cu.
// PK_SCORE: sub-key scores of product-key memories, one tiled GEMM per bank (f32 accumulation).
// PK_PAIR_SCORES: the scores of chosen pairs, one thread per output element, in double in the
// reference's order.
//
// PK_SCORE, per bank b = 2h+t: S[n, b, c] = sum_d q[n, h/s, t, d] * k~[b, j, d, r] over columns
// c = j*Rk + r, a GEMM [N, K] x [K, Nk*Rk]. A block owns TN tokens x TC columns of one bank and
// walks d in chunks of KB, staging the chunk's keys and queries in shared memory; each thread
// keeps TP tokens x CP columns of sums in registers. The tile shape follows the token count: at
// decode (up to 8 tokens) the op streams every key once for a few multiply-adds, so small blocks
// of 64 threads own 64 columns and every token, which spreads the keys over many blocks; from 9
// tokens on 256 threads hold 2 x 4 or 4 x 4 tiles (32 or 64 tokens x 64 columns), so each staged
// key is reused 32 or 64 times.
// With the key-norm gain, S = ((q*g) . k) / rms(k): g is folded into the staged queries and each
// column's sum of squares is taken from the staged keys the dot products use, so the keys are
// read once.
#include <algorithm>
#include <climits>

#include "device_common.cuh"
#include "product_keys.cuh"

namespace mnemo_cuda {
namespace {

constexpr int kMaxCores = 5;

// ------------------------------------------------------------------ PK_SCORE

struct ScoreParams {
    const float* q;   // [N, Q, 2, K]
    WeightPtr keys;   // [2H, Nk, K, Rk]
    WeightPtr gain;   // [K] (norm only)
    float* out;       // [N, 2H, Nk, Rk]
    uint32_t n_tok, n_q, kdim, rank, nk, share, ncols, banks;  // ncols = Nk*Rk, banks = 2H
    float eps;
    bool norm;
};

// WG threads: TT along tokens (each TP tokens), WG/TT along columns (each CP columns, CT apart).
template <int WG, int TT, int TP, int CP, int KB>
__global__ void __launch_bounds__(WG) pk_score_kernel(ScoreParams p) {
    constexpr int CT = WG / TT;  // threads along columns
    constexpr int TC = CT * CP;  // columns per tile
    constexpr int TN = TT * TP;  // tokens per tile
    constexpr int KS = TC + 1;   // row strides padded against bank conflicts of the transposing stores
    constexpr int QS = KB + 1;
    __shared__ float ks[KB * KS];  // ks[dd][c - c0]
    __shared__ float qs[TN * QS];  // qs[token - n0][dd]

    const uint32_t tid = threadIdx.x, ct = tid % CT, tt = tid / CT;
    const uint32_t c0 = blockIdx.x * TC, n0 = blockIdx.y * TN, b = blockIdx.z;
    const uint32_t side = b & 1u, qhead = (b >> 1) / p.share;
    const uint32_t rank = p.rank;

    // The keys overlapping the tile's columns [c0, c_end): per chunk, key j contributes one
    // contiguous run of KB*Rk elements (d0..d0+KB-1, every r), so consecutive threads load
    // consecutive elements.
    const uint32_t c_end = min(c0 + static_cast<uint32_t>(TC), p.ncols);
    const uint32_t j_first = c0 / rank;
    const uint32_t j_count = (c_end + rank - 1u) / rank - j_first;
    const uint32_t run = KB * rank;
    const uint64_t key_row0 = uint64_t{b} * p.nk + j_first;

    // Tile columns past ncols are never loaded: zero them once so no stale value is ever read.
    for (uint32_t i = tid; i < KB * KS; i += WG) ks[i] = 0.0f;
    __syncthreads();

    float acc[TP * CP];
    float ss[CP];
#pragma unroll
    for (int i = 0; i < TP * CP; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < CP; ++i) ss[i] = 0.0f;

    for (uint32_t d0 = 0; d0 < p.kdim; d0 += KB) {
        const uint32_t kb = min(static_cast<uint32_t>(KB), p.kdim - d0);
        for (uint32_t i = tid; i < j_count * run; i += WG) {
            const uint32_t jj = i / run, rem = i - jj * run;
            const uint32_t dd = rem / rank;
            const uint32_t c = (j_first + jj) * rank + (rem - dd * rank);
            if (dd < kb && c >= c0 && c < c_end)
                ks[dd * KS + (c - c0)] = load_weight(p.keys, ((key_row0 + jj) * p.kdim + d0) * rank + rem);
        }
        for (uint32_t i = tid; i < TN * KB; i += WG) {
            const uint32_t t = i / KB, dd = i - t * KB, n = n0 + t;
            float v = 0.0f;
            if (n < p.n_tok && dd < kb) {
                v = p.q[((uint64_t{n} * p.n_q + qhead) * 2u + side) * p.kdim + d0 + dd];
                if (p.norm) v *= load_weight(p.gain, d0 + dd);
            }
            qs[t * QS + dd] = v;
        }
        __syncthreads();
        for (uint32_t dd = 0; dd < kb; ++dd) {
            float kv[CP], qv[TP];
#pragma unroll
            for (int i = 0; i < CP; ++i) kv[i] = ks[dd * KS + ct + i * CT];
#pragma unroll
            for (int t = 0; t < TP; ++t) qv[t] = qs[(tt * TP + t) * QS + dd];
#pragma unroll
            for (int t = 0; t < TP; ++t)
#pragma unroll
                for (int i = 0; i < CP; ++i) acc[t * CP + i] += qv[t] * kv[i];
            if (p.norm)
#pragma unroll
                for (int i = 0; i < CP; ++i) ss[i] += kv[i] * kv[i];
        }
        __syncthreads();  // the chunk is consumed before the next one is staged
    }

#pragma unroll
    for (int i = 0; i < CP; ++i) {
        const uint32_t c = c0 + ct + i * CT;
        if (c >= p.ncols) continue;
        // K = 0 leaves every sum empty: the score is 0, as the reference's, not 0 * (1/sqrt(0/0)).
        const float scale = p.norm && p.kdim > 0 ? 1.0f / sqrtf(ss[i] / static_cast<float>(p.kdim) + p.eps) : 1.0f;
#pragma unroll
        for (int t = 0; t < TP; ++t) {
            const uint32_t n = n0 + tt * TP + t;
            if (n < p.n_tok) p.out[(uint64_t{n} * p.banks + b) * p.ncols + c] = acc[t * CP + i] * scale;
        }
    }
}

// The tile shape for a token count: threads, threads along tokens, tokens and columns per
// thread (the kernel's template arguments). Both shapes own 64 columns.
struct Tile {
    int wg, tt, tp, cp;
    uint32_t tokens() const { return static_cast<uint32_t>(tt * tp); }
    uint32_t columns() const { return static_cast<uint32_t>(wg / tt * cp); }
};

Tile tile_for(uint64_t n_tok) {
    if (n_tok <= 8) {
        int tp = 1;
        while (static_cast<uint64_t>(tp) < n_tok) tp *= 2;
        return {64, 1, tp, 1};
    }
    return {256, 16, n_tok <= 32 ? 2 : 4, 4};
}

template <int WG, int TT, int TP, int CP, int KB>
void launch_score(KernelBuilder& b, const ScoreParams& p, dim3 grid) {
    b.launch([=](cudaStream_t st) {
        pk_score_kernel<WG, TT, TP, CP, KB><<<grid, WG, 0, st>>>(p);
        return cudaGetLastError();
    });
}

bool score_supports(const DeviceProps& d, const mnemo_node& n) {
    if (n.n_inputs < 2 || n.n_inputs > 3) return false;
    const mnemo_tensor& q = n.inputs[0];
    const mnemo_tensor& keys = n.inputs[1];
    if (q.dtype != MNEMO_DTYPE_F32 || n.output.dtype != MNEMO_DTYPE_F32 || q.ndim != 4 || keys.ndim != 4) return false;
    if (!is_weight_dtype(keys.dtype) || (n.n_inputs == 3 && !is_weight_dtype(n.inputs[2].dtype))) return false;
    if (n.iparams[0] < 1 || n.iparams[1] < 1) return false;
    // 32-bit in-tile arithmetic: token, column and d counts (offsets are formed in 64 bits).
    const uint64_t ncols = static_cast<uint64_t>(keys.shape[1]) * static_cast<uint64_t>(keys.shape[3]);
    // A Tucker rank is small; bounding it keeps a tile's key runs (KB*Rk per key) in 32 bits.
    if (q.shape[0] > INT32_MAX || q.shape[1] > INT32_MAX || q.shape[3] > INT32_MAX || ncols > INT32_MAX / 2 ||
        keys.shape[1] > INT32_MAX || keys.shape[3] > 4096)
        return false;
    // Grid: column tiles (x) x token tiles (y) x banks (z).
    const Tile t = tile_for(static_cast<uint64_t>(q.shape[0]));
    const uint64_t gy = (static_cast<uint64_t>(q.shape[0]) + t.tokens() - 1) / t.tokens();
    const uint64_t max_y = d.max_grid[1] > 0 ? static_cast<uint64_t>(d.max_grid[1]) : 65535;
    const uint64_t max_z = d.max_grid[2] > 0 ? static_cast<uint64_t>(d.max_grid[2]) : 65535;
    return gy <= max_y && static_cast<uint64_t>(keys.shape[0]) <= max_z;
}

void score_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    if (numel(n.output) == 0) return;
    const mnemo_tensor& q = n.inputs[0];
    const mnemo_tensor& keys = n.inputs[1];
    ScoreParams p{};
    p.q = KernelBuilder::as<const float>(q);
    p.keys = weight_of(keys);
    p.norm = n.n_inputs == 3;
    p.gain = p.norm ? weight_of(n.inputs[2]) : p.keys;
    p.out = KernelBuilder::as<float>(n.output);
    p.n_tok = static_cast<uint32_t>(q.shape[0]);
    p.n_q = static_cast<uint32_t>(q.shape[1]);
    p.kdim = static_cast<uint32_t>(q.shape[3]);
    p.nk = static_cast<uint32_t>(keys.shape[1]);
    p.rank = static_cast<uint32_t>(keys.shape[3]);
    p.share = static_cast<uint32_t>(n.iparams[1]);
    p.ncols = p.nk * p.rank;
    p.banks = static_cast<uint32_t>(keys.shape[0]);
    p.eps = n.fparams[0];
    const Tile t = tile_for(p.n_tok);
    const dim3 grid(blocks_for(p.ncols, t.columns()), blocks_for(p.n_tok, t.tokens()), p.banks);
    if (t.wg == 64) {
        switch (t.tp) {
            case 1: launch_score<64, 1, 1, 1, 32>(b, p, grid); break;
            case 2: launch_score<64, 1, 2, 1, 32>(b, p, grid); break;
            case 4: launch_score<64, 1, 4, 1, 32>(b, p, grid); break;
            default: launch_score<64, 1, 8, 1, 32>(b, p, grid); break;
        }
    } else if (t.tp == 2) {
        launch_score<256, 16, 2, 4, 16>(b, p, grid);
    } else {
        launch_score<256, 16, 4, 4, 16>(b, p, grid);
    }
}

// ------------------------------------------------------------------ PK_PAIR_SCORES

struct PairParams {
    const float* s;      // [N, 2H, Nk, Rk]
    const int32_t* idx;  // [N, H, k], virtual i*Nk + j
    float* out;          // [N, H, k, C]
    WeightPtr core[kMaxCores];
    KernelStatus* status;
    uint64_t total;      // output elements
    int64_t limit;       // Nk*Nk, for the error report
    uint32_t heads, nk, rank, k, cores, node;
};

// One thread per output element (entry e, core c). A bad index (outside 0..Nk*Nk-1, tested as
// v / Nk >= Nk so that Nk*Nk need not fit) is reported once per entry and the entry skipped.
__global__ void __launch_bounds__(256) pair_scores_kernel(PairParams p) {
    const uint32_t width = p.cores > 0 ? p.cores : 1u;
    for (uint64_t o = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; o < p.total;
         o += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const uint64_t e = o / width;
        const uint32_t c = static_cast<uint32_t>(o % width);
        const int32_t v = p.idx[e];
        if (p.nk == 0 || v < 0 || static_cast<uint32_t>(v) / p.nk >= p.nk) {
            if (c == 0) report_bad_index(p.status, p.node, v, p.limit);
            continue;
        }
        const uint32_t i = static_cast<uint32_t>(v) / p.nk, j = static_cast<uint32_t>(v) % p.nk;
        const uint64_t n = e / (uint64_t{p.heads} * p.k), h = (e / p.k) % p.heads;
        const uint64_t rank = p.rank, side1 = (n * 2 * p.heads + 2 * h) * p.nk;  // S[n, 2h] in rows of Rk
        const float* x = p.s + (side1 + i) * rank;
        const float* y = p.s + (side1 + p.nk + j) * rank;
        if (p.cores == 0) {  // additive (Rk = 1): the sum of two f32, exact in double, rounded once
            p.out[o] = __double2float_rn(__dadd_rn(static_cast<double>(x[0]), static_cast<double>(y[0])));
            continue;
        }
        // Tucker: sum_r1 sum_r2 (S1[i,r1] * core_c[h,r1,r2]) * S2[j,r2] from 0, the reference's
        // order and roundings (no fma contraction), rounded once to f32.
        p.out[o] = __double2float_rn(tucker_form(x, y, p.core[c], h * rank * rank, rank));
    }
}

bool pair_supports(const DeviceProps&, const mnemo_node& n) {
    if (n.n_inputs < 2 || n.n_inputs > 2 + kMaxCores) return false;
    const mnemo_tensor& s = n.inputs[0];
    const mnemo_tensor& idx = n.inputs[1];
    if (s.dtype != MNEMO_DTYPE_F32 || s.ndim != 4 || idx.dtype != MNEMO_DTYPE_I32 || idx.ndim != 3 ||
        n.output.dtype != MNEMO_DTYPE_F32)
        return false;
    for (int32_t i = 2; i < n.n_inputs; ++i)
        if (!is_weight_dtype(n.inputs[i].dtype)) return false;
    return s.shape[1] / 2 <= UINT32_MAX && s.shape[2] <= UINT32_MAX && s.shape[3] <= UINT32_MAX && idx.shape[2] <= UINT32_MAX;
}

void pair_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& s = n.inputs[0];
    const mnemo_tensor& idx = n.inputs[1];
    PairParams p{};
    p.s = KernelBuilder::as<const float>(s);
    p.idx = KernelBuilder::as<const int32_t>(idx);
    p.out = KernelBuilder::as<float>(n.output);
    p.cores = static_cast<uint32_t>(n.n_inputs - 2);
    for (WeightPtr& w : p.core) w = WeightPtr{nullptr, MNEMO_DTYPE_F32};
    for (uint32_t c = 0; c < p.cores; ++c) p.core[c] = weight_of(n.inputs[2 + c]);
    p.status = b.status();
    p.total = numel(n.output);
    p.heads = static_cast<uint32_t>(s.shape[1] / 2);
    p.nk = static_cast<uint32_t>(s.shape[2]);
    p.rank = static_cast<uint32_t>(s.shape[3]);
    p.k = static_cast<uint32_t>(idx.shape[2]);
    // Nk*Nk for the error report, clamped (report_bad_index clamps to i32 anyway; past it every
    // non-negative i32 index is valid).
    p.limit = s.shape[2] > INT32_MAX / std::max<int64_t>(s.shape[2], 1) ? int64_t{INT32_MAX} : s.shape[2] * s.shape[2];
    p.node = b.node_index();
    if (p.total == 0) return;
    const uint64_t cap = static_cast<uint64_t>(std::max(b.props().multiprocessors, 1)) * 32;
    const uint32_t grid = static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(blocks_for(p.total, 256), cap)));
    b.launch([=](cudaStream_t st) {
        pair_scores_kernel<<<grid, 256, 0, st>>>(p);
        return cudaGetLastError();
    });
}

}  // namespace

void register_product_keys_kernels() {
    register_kernel(MNEMO_OP_PK_SCORE, Kernel{score_supports, nullptr, score_build});
    register_kernel(MNEMO_OP_PK_TOPK, Kernel{pk_topk_supports, pk_topk_scratch, pk_topk_build});
    register_kernel(MNEMO_OP_PK_PAIR_SCORES, Kernel{pair_supports, nullptr, pair_build});
}

}  // namespace mnemo_cuda
