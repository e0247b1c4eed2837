// MOE_FFN: the routed experts of a mixture-of-experts FFN,
//   out[n] = sum_j w[n,j] * down[e] (silu(gate[e] x[n]) * (up[e] x[n])),  e = idx[n,j].
//
// Both paths keep the hidden rows h[s] = w * silu(gate x) * (up x) of every (token, choice) slot
// s = n * k + j in scratch between two passes, and neither uses float atomics: every output is
// summed in an order fixed by the launch shape, so runs are bit-for-bit repeatable.
//  - decode (N <= kDecodeTokens, or more experts than a grid dimension holds): mat-vec passes
//    over only the chosen experts, a warp per weight row (team_dot, 16-byte loads): UP per
//    (slot, hidden row f), then DOWN per (token, output row d) adding the token's choices in
//    order j = 0..k-1. Each chosen expert's weights stream once per slot, what a decode step
//    has to read anyway.
//  - prefill: slots are grouped by expert (count, scan, scatter in scratch), then per expert
//    64x64 tiled GEMMs (gemm_common.cuh) stream the expert's gate/up and down weights once per
//    64 of its slots instead of once per slot: UP writes h per slot, DOWN writes y = down h per
//    slot, and COMBINE adds each token's y rows in choice order. The scatter's atomics only
//    pick where a slot sits in its expert's list; a slot's results do not depend on that.
// A bad expert id is reported (the run fails naming the node) and its slot is skipped. Tokens
// go in chunks of at most 64 MiB of slot rows so that scratch stays bounded; the stream runs
// the chunks in order, so they share one scratch region.
// Experts may be block-quantized (q8_0, q4_0, q4_k, q5_k, q6_k; rows of whole blocks): the
// weight views decode them exactly as the reference does (quant_weights.cuh), whole 32-weight
// sub-blocks in the mat-vec and one weight per tile element in the GEMM, as MATMUL reads them.
#include <climits>

#include "any_weights.cuh"
#include "device_common.cuh"
#include "gemm_common.cuh"
#include "kernel_api.hpp"
#include "quant_weights.cuh"

namespace mnemo_cuda {
namespace {

constexpr uint64_t kScratchBudget = uint64_t{64} << 20;  // bytes of slot rows per chunk
constexpr uint64_t kDecodeTokens = 8;                   // up to this many tokens: mat-vec path
constexpr uint64_t kMaxGrid = 65535;                    // grid y / z limit
constexpr int kMvThreads = 128;                         // mat-vec blocks: 4 warps, a row each
constexpr int kMvRows = kMvThreads / 32;

uint64_t align16(uint64_t v) { return (v + 15) & ~uint64_t{15}; }

struct Plan {
    uint64_t n_tok, k, dim, hidden, experts;
    bool grouped;
    uint64_t chunk_tokens;
    // Scratch offsets (bytes). Grouped: count [E], start [E+1], cursor [E], list [slots] (i32),
    // h [slots, F], y [slots, D] (f32). Mat-vec: h only.
    uint64_t count_at, start_at, cursor_at, list_at, h_at, y_at, bytes;
};

Plan plan_for(const mnemo_node& n) {
    Plan p{};
    p.n_tok = static_cast<uint64_t>(n.inputs[0].shape[0]);
    p.dim = static_cast<uint64_t>(n.inputs[0].shape[1]);
    p.k = static_cast<uint64_t>(n.inputs[1].shape[1]);
    p.experts = static_cast<uint64_t>(n.inputs[3].shape[0]);
    p.hidden = static_cast<uint64_t>(n.inputs[3].shape[1]);
    p.grouped = p.n_tok > kDecodeTokens && p.experts <= kMaxGrid;
    const uint64_t per_token = std::max<uint64_t>(1, p.k * (p.hidden + (p.grouped ? p.dim + 1 : 0)) * 4);
    p.chunk_tokens = std::clamp<uint64_t>(kScratchBudget / per_token, 1, std::max<uint64_t>(p.n_tok, 1));
    const uint64_t slots = p.chunk_tokens * p.k;
    if (p.grouped) {
        p.count_at = 0;
        p.start_at = align16(p.experts * 4);
        p.cursor_at = p.start_at + align16((p.experts + 1) * 4);
        p.list_at = p.cursor_at + align16(p.experts * 4);
        p.h_at = p.list_at + align16(slots * 4);
        p.y_at = p.h_at + align16(slots * p.hidden * 4);
        p.bytes = p.y_at + align16(slots * p.dim * 4);
    } else {
        p.h_at = 0;
        p.bytes = align16(slots * p.hidden * 4);
    }
    p.bytes = std::max<uint64_t>(p.bytes, 16);
    return p;
}


bool supports(const DeviceProps&, const mnemo_node& n) {
    if (n.n_inputs != 6 || n.inputs[0].dtype != MNEMO_DTYPE_F32 || n.inputs[1].dtype != MNEMO_DTYPE_I32 ||
        n.inputs[2].dtype != MNEMO_DTYPE_F32 || n.output.dtype != MNEMO_DTYPE_F32)
        return false;
    if (n.inputs[0].ndim != 2 || n.inputs[1].ndim != 2 || n.inputs[2].ndim != 2 || n.inputs[3].ndim != 3 ||
        n.inputs[4].ndim != 3 || n.inputs[5].ndim != 3)
        return false;
    for (int i = 0; i < 3; ++i)
        if (n.inputs[i].offset % 4 != 0) return false;
    // Float experts on their element alignment; quantized ones with rows of whole blocks (the
    // views address an expert's rows by whole blocks), at any offset: blocks are read bytewise.
    for (int i = 3; i < 6; ++i) {
        const mnemo_tensor& t = n.inputs[i];
        if (!any_dtype_readable(t) || (!is_quant_weight_dtype(t.dtype) && t.offset % dtype_bytes(t.dtype) != 0)) return false;
    }
    if (n.output.offset % 4 != 0) return false;
    // Grid x: blocks of hidden / output rows (at least one row per block).
    const Plan p = plan_for(n);
    return std::max(p.hidden, p.dim) <= static_cast<uint64_t>(INT_MAX);
}

uint64_t scratch_bytes(const DeviceProps&, const mnemo_node& n) { return plan_for(n).bytes; }

__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }

__device__ __forceinline__ bool bad_expert(int64_t e, int64_t experts) { return e < 0 || e >= experts; }

// ------------------------------------------------------------------------------- mat-vec path
// h[s, f] for the chunk's slots s (global slot slot0 + s); grid (F / 4 rows, slots).
template <class WG, class WU>
__global__ void __launch_bounds__(kMvThreads)
    moe_up_mv(WG gate, WU up, const float* __restrict__ x, const int32_t* __restrict__ idx, const float* __restrict__ wts,
              float* __restrict__ h, int64_t slot0, int64_t slots, int64_t k, int64_t E, int64_t D, int64_t F,
              KernelStatus* status, uint32_t node) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int64_t f = static_cast<int64_t>(blockIdx.x) * kMvRows + (threadIdx.x >> 5);
    for (int64_t s = blockIdx.y; s < slots; s += gridDim.y) {
        const int64_t g = slot0 + s;
        const int64_t e = idx[g];
        if (bad_expert(e, E)) {
            if (blockIdx.x == 0 && threadIdx.x == 0) report_bad_index(status, node, e, E);
            continue;
        }
        if (f >= F) continue;  // whole warps: f is per warp; no block-wide barriers here
        const float* xs[1] = {x + (g / k) * D};
        float ag[1] = {0.0f}, au[1] = {0.0f};
        team_dot<1>(gate.at_offset((e * F + f) * D), D, xs, 1, lane, 32, ag);
        team_dot<1>(up.at_offset((e * F + f) * D), D, xs, 1, lane, 32, au);
        const float gs = warp_sum(ag[0]), us = warp_sum(au[0]);
        if (lane == 0) h[s * F + f] = wts[g] * silu(gs) * us;
    }
}

// out[n, d] for the chunk's tokens (n0 + t); grid (D / 4 rows, tokens). One accumulator per
// lane runs over the choices in order, then the warp adds its lanes.
template <class WD>
__global__ void __launch_bounds__(kMvThreads)
    moe_down_mv(WD down, const float* __restrict__ h, const int32_t* __restrict__ idx, float* __restrict__ out, int64_t n0,
                int64_t tokens, int64_t k, int64_t E, int64_t D, int64_t F, KernelStatus* status, uint32_t node) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int64_t d = static_cast<int64_t>(blockIdx.x) * kMvRows + (threadIdx.x >> 5);
    if (d >= D) return;  // whole warps; no barriers in this kernel
    for (int64_t t = blockIdx.y; t < tokens; t += gridDim.y) {
        const int64_t n = n0 + t;
        float acc[1] = {0.0f};
        for (int64_t j = 0; j < k; ++j) {
            const int64_t e = idx[n * k + j];
            if (bad_expert(e, E)) {
                if (lane == 0) report_bad_index(status, node, e, E);
                continue;
            }
            const float* hs[1] = {h + (t * k + j) * F};
            team_dot<1>(down.at_offset((e * D + d) * F), F, hs, 1, lane, 32, acc);
        }
        const float v = warp_sum(acc[0]);
        if (lane == 0) out[n * D + d] = v;
    }
}

// ------------------------------------------------------------------------------- grouped path
// count[e] = slots of the chunk routed to e (bad ids reported, not counted).
__global__ void moe_count(const int32_t* __restrict__ idx, int* __restrict__ count, int64_t slot0, int64_t slots, int64_t E,
                          KernelStatus* status, uint32_t node) {
    for (int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; s < slots;
         s += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t e = idx[slot0 + s];
        if (bad_expert(e, E)) report_bad_index(status, node, e, E);
        else atomicAdd(count + e, 1);
    }
}

// start = exclusive prefix sum of count (start[E] = valid slots); cursor = start. One block of
// 256 threads walks E in chunks of 256 with a Hillis-Steele scan of each chunk.
constexpr int kScanThreads = 256;
__global__ void __launch_bounds__(kScanThreads)
    moe_scan(const int* __restrict__ count, int* __restrict__ start, int* __restrict__ cursor, int64_t E) {
    __shared__ int buf[kScanThreads];
    __shared__ int carry;
    const int tid = static_cast<int>(threadIdx.x);
    if (tid == 0) carry = 0;
    __syncthreads();
    for (int64_t base = 0; base < E; base += kScanThreads) {  // uniform per block
        const int64_t i = base + tid;
        const int v = i < E ? count[i] : 0;
        buf[tid] = v;
        __syncthreads();
        for (int o = 1; o < kScanThreads; o <<= 1) {
            const int add = tid >= o ? buf[tid - o] : 0;
            __syncthreads();
            buf[tid] += add;
            __syncthreads();
        }
        const int excl = carry + buf[tid] - v;  // buf is now the inclusive scan of the chunk
        if (i < E) {
            start[i] = excl;
            cursor[i] = excl;
        }
        __syncthreads();  // every thread has read carry and buf
        if (tid == kScanThreads - 1) carry += buf[tid];
        __syncthreads();
    }
    if (tid == 0) start[E] = carry;
}

// list[start[e] ..] = the chunk's slots routed to e, in any order.
__global__ void moe_scatter(const int32_t* __restrict__ idx, int* __restrict__ cursor, int* __restrict__ list, int64_t slot0,
                            int64_t slots, int64_t E) {
    for (int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; s < slots;
         s += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t e = idx[slot0 + s];
        if (bad_expert(e, E)) continue;
        const int pos = atomicAdd(cursor + e, 1);
        list[pos] = static_cast<int>(s);
    }
}

// Block (x: 64 weight rows, y: tiles of the expert's slots in turn, z: expert). B rows are the
// listed slots' inputs; the tile loop and its exit depend only on blockIdx and on start[], so
// every thread of a block takes the same path through the barriers.
//   UP:   rows f of gate[e] and up[e] against x[token of s]; h[s, f] = w[s] silu(g) u
//   DOWN: rows d of down[e] against h[s];                     y[s, d]
template <bool Up, class W0, class W1>
__global__ void __launch_bounds__(tile::kThreads)
    moe_gemm(W0 w0, W1 w1, const float* __restrict__ src, const float* __restrict__ wts, const int* __restrict__ start,
             const int* __restrict__ list, float* __restrict__ dst, int64_t slot0, int64_t k, int64_t rows, int64_t len) {
    constexpr int NW = Up ? 2 : 1;
    __shared__ TileShared<NW> sh;
    __shared__ int64_t slot_of[tile::kBN];
    const int64_t e = blockIdx.z;
    const int64_t first = start[e], count = start[e + 1] - first;
    const int64_t m0 = static_cast<int64_t>(blockIdx.x) * tile::kBM;
    const int tx = static_cast<int>(threadIdx.x) % 16, ty = static_cast<int>(threadIdx.x) / 16;
    const W0 a0 = w0.at_offset(e * rows * len);
    const W1 a1 = w1.at_offset(e * rows * len);
    for (int64_t t0 = static_cast<int64_t>(blockIdx.y) * tile::kBN; t0 < count; t0 += static_cast<int64_t>(gridDim.y) * tile::kBN) {
        if (threadIdx.x < tile::kBN) {
            const int64_t i = t0 + threadIdx.x;
            const int64_t s = i < count ? list[first + i] : -1;
            slot_of[threadIdx.x] = s;
            // UP reads the slot's token row of x (global slot slot0 + s); DOWN the slot's h row.
            sh.rows[threadIdx.x] = s < 0 ? nullptr : Up ? src + ((slot0 + s) / k) * len : src + s * len;
        }
        __syncthreads();
        float acc[NW][tile::kTM][tile::kTN];
        gemm_tile<NW>(a0, a1, m0, rows, len, sh, acc);
#pragma unroll
        for (int j = 0; j < tile::kTN; ++j) {
            const int64_t s = slot_of[ty + 16 * j];
            if (s < 0) continue;
            const float ws = Up ? wts[slot0 + s] : 1.0f;
#pragma unroll
            for (int i = 0; i < tile::kTM; ++i) {
                const int64_t m = m0 + tx + 16 * i;
                if (m >= rows) continue;
                if constexpr (Up) dst[s * rows + m] = ws * silu(acc[0][i][j]) * acc[NW - 1][i][j];
                else dst[s * rows + m] = acc[0][i][j];
            }
        }
        __syncthreads();  // slot_of and sh.rows are rewritten by the next tile
    }
}

// out[n0 + t, d] = sum over the token's valid choices j, in order, of y[t k + j, d].
__global__ void moe_combine(const float* __restrict__ y, const int32_t* __restrict__ idx, float* __restrict__ out, int64_t n0,
                            int64_t tokens, int64_t k, int64_t E, int64_t D) {
    const int64_t total = tokens * D;
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t t = i / D, d = i % D, n = n0 + t;
        float sum = 0.0f;
        for (int64_t j = 0; j < k; ++j)
            if (!bad_expert(idx[n * k + j], E)) sum += y[(t * k + j) * D + d];
        out[n * D + d] = sum;
    }
}

// ------------------------------------------------------------------------------- host side
template <class T>
TypedWeights<T> typed(const mnemo_tensor& t) {
    return {KernelBuilder::as<const T>(t)};
}

// Calls f(view of t, view of t2): views typed by t's dtype (t2 has the same dtype), float or
// block-quantized. For MOE_FFN's gate and up, or down twice.
template <class F>
void with_weights(const mnemo_tensor& t, const mnemo_tensor& t2, F&& f) {
    switch (t.dtype) {
        case MNEMO_DTYPE_F32: f(typed<float>(t), typed<float>(t2)); return;
        case MNEMO_DTYPE_F16: f(typed<__half>(t), typed<__half>(t2)); return;
        case MNEMO_DTYPE_BF16: f(typed<__nv_bfloat16>(t), typed<__nv_bfloat16>(t2)); return;
        default: break;
    }
    const bool quant = visit_quant_block(t.dtype, [&](auto q) {
        using Q = decltype(q);
        f(QuantWeights<Q>{KernelBuilder::ptr(t)}, QuantWeights<Q>{KernelBuilder::ptr(t2)});
    });
    if (!quant) throw KernelError("moe_ffn: expected f32, f16, bf16 or q8_0/q4_0/q4_k/q5_k/q6_k experts, got dtype " +
                                  std::to_string(t.dtype));
}

// Calls f(gate view, up view): typed when both share a dtype (the usual case), else run-time typed
// (any mix of float and quantized dtypes).
template <class F>
void with_gate_up(const mnemo_tensor& gate, const mnemo_tensor& up, F&& f) {
    if (gate.dtype == up.dtype) with_weights(gate, up, f);
    else f(any_dtype_weights(gate), any_dtype_weights(up));
}

uint32_t grid_for(const DeviceProps& p, uint64_t n, uint64_t per_block) {
    const uint64_t cap = static_cast<uint64_t>(std::max(p.multiprocessors, 1)) * 16;
    return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(blocks_for(n, per_block), cap)));
}

void build_decode_chunk(KernelBuilder& b, const Plan& p, uint64_t n0, uint64_t tokens) {
    const mnemo_node& n = b.node();
    const float* x = KernelBuilder::as<const float>(n.inputs[0]);
    const int32_t* idx = KernelBuilder::as<const int32_t>(n.inputs[1]);
    const float* wts = KernelBuilder::as<const float>(n.inputs[2]);
    float* out = KernelBuilder::as<float>(n.output);
    float* h = reinterpret_cast<float*>(b.scratch(p.h_at));
    KernelStatus* status = b.status();
    const uint32_t node = b.node_index();
    const int64_t k = static_cast<int64_t>(p.k), E = static_cast<int64_t>(p.experts), D = static_cast<int64_t>(p.dim),
                  F = static_cast<int64_t>(p.hidden);
    const uint64_t slots = tokens * p.k;
    if (slots > 0 && p.hidden > 0) {
        const int64_t slot0 = static_cast<int64_t>(n0 * p.k), ns = static_cast<int64_t>(slots);
        const dim3 grid(blocks_for(p.hidden, kMvRows), static_cast<uint32_t>(std::min(slots, kMaxGrid)));
        with_gate_up(n.inputs[3], n.inputs[4], [&](auto g, auto u) {
            b.launch([=](cudaStream_t st) {
                moe_up_mv<<<grid, kMvThreads, 0, st>>>(g, u, x, idx, wts, h, slot0, ns, k, E, D, F, status, node);
                return cudaGetLastError();
            });
        });
    }
    const dim3 grid(blocks_for(p.dim, kMvRows), static_cast<uint32_t>(std::min(tokens, kMaxGrid)));
    const int64_t t0 = static_cast<int64_t>(n0), nt = static_cast<int64_t>(tokens);
    with_weights(n.inputs[5], n.inputs[5], [&](auto dn, auto) {
        b.launch([=](cudaStream_t st) {
            moe_down_mv<<<grid, kMvThreads, 0, st>>>(dn, h, idx, out, t0, nt, k, E, D, F, status, node);
            return cudaGetLastError();
        });
    });
}

void build_grouped_chunk(KernelBuilder& b, const Plan& p, uint64_t n0, uint64_t tokens) {
    const mnemo_node& n = b.node();
    const float* x = KernelBuilder::as<const float>(n.inputs[0]);
    const int32_t* idx = KernelBuilder::as<const int32_t>(n.inputs[1]);
    const float* wts = KernelBuilder::as<const float>(n.inputs[2]);
    float* out = KernelBuilder::as<float>(n.output);
    int* count = reinterpret_cast<int*>(b.scratch(p.count_at));
    int* start = reinterpret_cast<int*>(b.scratch(p.start_at));
    int* cursor = reinterpret_cast<int*>(b.scratch(p.cursor_at));
    int* list = reinterpret_cast<int*>(b.scratch(p.list_at));
    float* h = reinterpret_cast<float*>(b.scratch(p.h_at));
    float* y = reinterpret_cast<float*>(b.scratch(p.y_at));
    KernelStatus* status = b.status();
    const uint32_t node = b.node_index();
    const int64_t k = static_cast<int64_t>(p.k), E = static_cast<int64_t>(p.experts), D = static_cast<int64_t>(p.dim),
                  F = static_cast<int64_t>(p.hidden);
    const uint64_t slots = tokens * p.k;
    const int64_t slot0 = static_cast<int64_t>(n0 * p.k), ns = static_cast<int64_t>(slots);
    const size_t count_bytes = static_cast<size_t>(p.experts) * 4;
    const uint32_t sgrid = grid_for(b.props(), slots, 256);

    b.launch([=](cudaStream_t st) {
        const cudaError_t e = cudaMemsetAsync(count, 0, count_bytes, st);
        if (e != cudaSuccess) return e;
        moe_count<<<sgrid, 256, 0, st>>>(idx, count, slot0, ns, E, status, node);
        if (const cudaError_t le = cudaGetLastError(); le != cudaSuccess) return le;
        moe_scan<<<1, kScanThreads, 0, st>>>(count, start, cursor, E);
        if (const cudaError_t le = cudaGetLastError(); le != cudaSuccess) return le;
        moe_scatter<<<sgrid, 256, 0, st>>>(idx, cursor, list, slot0, ns, E);
        return cudaGetLastError();
    });

    // No experts: every id was reported bad; the GEMM grids would be empty (z = 0).
    if (p.experts == 0) {
        const int64_t t0 = static_cast<int64_t>(n0);
        const size_t bytes = static_cast<size_t>(tokens * p.dim * 4);
        b.launch([=](cudaStream_t st) { return cudaMemsetAsync(out + t0 * D, 0, bytes, st); });
        return;
    }
    // Tiles along y: one round covers an expert holding its balanced share (+1 for its partial
    // tile); an expert with more slots has its blocks take several tiles in turn.
    const uint64_t tiles = (slots + tile::kBN - 1) / tile::kBN;
    const uint32_t gy = static_cast<uint32_t>(std::clamp<uint64_t>((tiles + p.experts - 1) / p.experts + 1, 1, std::min(tiles, kMaxGrid)));
    const uint32_t gz = static_cast<uint32_t>(p.experts);
    if (p.hidden > 0) {
        const dim3 grid(blocks_for(p.hidden, tile::kBM), gy, gz);
        with_gate_up(n.inputs[3], n.inputs[4], [&](auto g, auto u) {
            b.launch([=](cudaStream_t st) {
                moe_gemm<true><<<grid, tile::kThreads, 0, st>>>(g, u, x, wts, start, list, h, slot0, k, F, D);
                return cudaGetLastError();
            });
        });
    }
    const dim3 grid(blocks_for(p.dim, tile::kBM), gy, gz);
    with_weights(n.inputs[5], n.inputs[5], [&](auto dn, auto) {
        b.launch([=](cudaStream_t st) {
            moe_gemm<false><<<grid, tile::kThreads, 0, st>>>(dn, dn, h, wts, start, list, y, slot0, k, D, F);
            return cudaGetLastError();
        });
    });
    const uint32_t cgrid = grid_for(b.props(), tokens * p.dim, 256);
    const int64_t t0 = static_cast<int64_t>(n0), nt = static_cast<int64_t>(tokens);
    b.launch([=](cudaStream_t st) {
        moe_combine<<<cgrid, 256, 0, st>>>(y, idx, out, t0, nt, k, E, D);
        return cudaGetLastError();
    });
}

void build(KernelBuilder& b) {
    const Plan p = plan_for(b.node());
    if (p.n_tok == 0 || p.dim == 0) return;  // empty output
    if (p.k == 0) {  // no choices: every output row is an empty sum
        float* out = KernelBuilder::as<float>(b.output());
        const size_t bytes = static_cast<size_t>(p.n_tok * p.dim * 4);
        b.launch([=](cudaStream_t st) { return cudaMemsetAsync(out, 0, bytes, st); });
        return;
    }
    for (uint64_t n0 = 0; n0 < p.n_tok; n0 += p.chunk_tokens) {
        const uint64_t tokens = std::min(p.chunk_tokens, p.n_tok - n0);
        if (p.grouped) build_grouped_chunk(b, p, n0, tokens);
        else build_decode_chunk(b, p, n0, tokens);
    }
}

}  // namespace

void register_moe_kernels() {
    // Block-quantized experts (supports() names which dtypes).
    register_kernel(MNEMO_OP_MOE_FFN, Kernel{supports, scratch_bytes, build, /*reads_quantized=*/true});
}

}  // namespace mnemo_cuda
