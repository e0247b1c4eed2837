// ATTN_MASS (Memory3 §3.3 token selection): the attention mass each key token receives from the
// counted tokens of its own sequence, no causal mask, summed over the query heads of its kv group.
//
// Two passes, no atomics, a fixed summation order (the same bits on every run):
//   1. mode 0 only: block (i, h) forms query i's softmax normaliser over its peers (the counted
//      tokens of its sequence, itself included): the max m and 1 / sum exp(s - m), one online
//      (m, l) pair per warp merged at the end. Stored per (i, h) in scratch.
//   2. block (j, g) sums, over the heads h of group g and the peers i of token j,
//      exp(s_h(i, j) - m(i, h)) / l(i, h) (mode 0) or exp(s_h(i, j)) (mode 1).
// The scores are recomputed in pass 2 rather than stored: the matrix is N x N per head, the op
// is for short references, and the dot products are cheap next to that memory.
//
// Peers are found by scanning all N tokens in tiles of kThreads: each thread tests one token and
// a ballot compacts the matches, in ascending order, into shared memory; the warps then share
// the tile's work. There are no indices to check: a negative sequence id only means "not counted".
#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {
namespace {

constexpr uint32_t kThreads = 128;  // per block; also the tokens tested per tile
constexpr uint32_t kWarps = kThreads / 32;
constexpr uint32_t kItemsPerStep = 4;  // dot products a warp keeps in flight
constexpr uint32_t kMaxD = 512;        // the shared row (a query in pass 1, a key in pass 2)

struct Args {
    const float* q;  // [N, Hq, D]
    const float* k;  // [N, Hkv, D]
    const int32_t* seq;
    const int32_t* pos;
    float2* stats;  // [N, Hq]: (m, 1 / l) of each counted query row (mode 0)
    float* out;     // [N, Hkv]
    uint64_t n;
    uint32_t hq, hkv, d;
    int64_t first;  // i[1]: the first counted position
    float scale;
};

__device__ __forceinline__ bool counted(const Args& a, uint64_t t) { return a.seq[t] >= 0 && a.pos[t] >= a.first; }

// Writes to `list` the offsets (from t0) of the tokens t0 .. t0 + kThreads - 1 that are counted
// and belong to sequence `sq` (>= 0), in ascending order, and returns how many. Every thread of
// the block calls it; it starts and ends with a barrier, so `list` may be rewritten right after
// the previous tile's last reader and read right after the call.
__device__ __forceinline__ uint32_t stage_peers(const Args& a, uint64_t t0, int32_t sq, uint32_t* list,
                                                uint32_t* warp_count) {
    const uint32_t tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const uint64_t t = t0 + tid;
    const bool take = t < a.n && a.seq[t] == sq && a.pos[t] >= a.first;
    const uint32_t ballot = __ballot_sync(0xffffffffu, take);
    __syncthreads();  // the previous tile's list has been read
    if (lane == 0) warp_count[warp] = static_cast<uint32_t>(__popc(ballot));
    __syncthreads();
    uint32_t before = 0, total = 0;
#pragma unroll
    for (uint32_t w = 0; w < kWarps; ++w) {
        before += w < warp ? warp_count[w] : 0;
        total += warp_count[w];
    }
    if (take) list[before + static_cast<uint32_t>(__popc(ballot & ((1u << lane) - 1u)))] = tid;
    __syncthreads();
    return total;
}

// kItemsPerStep dot products of the shared row `row_s` with global rows r[u] (u < live), summed
// over the warp: every lane gets the totals.
__device__ __forceinline__ void warp_dots(const float* row_s, const float* const* r, uint32_t live, uint32_t d,
                                          float* dot) {
    const uint32_t lane = threadIdx.x % 32;
#pragma unroll
    for (uint32_t u = 0; u < kItemsPerStep; ++u) dot[u] = 0.0f;
    for (uint32_t e = lane; e < d; e += 32) {
        const float x = row_s[e];
#pragma unroll
        for (uint32_t u = 0; u < kItemsPerStep; ++u)
            if (u < live) dot[u] += x * r[u][e];
    }
#pragma unroll
    for (uint32_t u = 0; u < kItemsPerStep; ++u) dot[u] = warp_sum(dot[u]);
}

// Pass 1 (mode 0): block (i, h) -> stats[i, h] = (m, 1 / sum_j exp(s_h(i, j) - m)).
__global__ void __launch_bounds__(kThreads) attn_mass_norm_kernel(Args a) {
    __shared__ float q_s[kMaxD];
    __shared__ uint32_t list[kThreads];
    __shared__ uint32_t warp_count[kWarps];
    __shared__ float m_s[kWarps], l_s[kWarps];
    const uint64_t i = blockIdx.x;
    const uint32_t h = blockIdx.y, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    if (!counted(a, i)) return;  // block-uniform; pass 2 never reads this row
    const int32_t sq = a.seq[i];
    const uint32_t g = h / (a.hq / a.hkv);
    for (uint32_t e = tid; e < a.d; e += kThreads) q_s[e] = a.q[(i * a.hq + h) * a.d + e];
    // (q_s is published by stage_peers' barriers)

    float m = -INFINITY, l = 0.0f;  // this warp's running max and sum (lane-uniform)
    for (uint64_t t0 = 0; t0 < a.n; t0 += kThreads) {
        const uint32_t count = stage_peers(a, t0, sq, list, warp_count);
        for (uint32_t e0 = warp * kItemsPerStep; e0 < count; e0 += kWarps * kItemsPerStep) {
            const uint32_t live = min(kItemsPerStep, count - e0);
            const float* r[kItemsPerStep];
#pragma unroll
            for (uint32_t u = 0; u < kItemsPerStep; ++u) {
                const uint64_t j = t0 + list[u < live ? e0 + u : e0];
                r[u] = a.k + (j * a.hkv + g) * a.d;
            }
            float dot[kItemsPerStep];
            warp_dots(q_s, r, live, a.d, dot);
#pragma unroll
            for (uint32_t u = 0; u < kItemsPerStep; ++u) {
                if (u >= live) break;
                const float s = a.scale * dot[u];
                if (s > m) {
                    l = l * expf(m - s) + 1.0f;  // the first key: 0 * exp(-inf) + 1
                    m = s;
                } else {
                    l += expf(s - m);
                }
            }
        }
    }
    if (lane == 0) {
        m_s[warp] = m;
        l_s[warp] = l;
    }
    __syncthreads();
    if (tid == 0) {
        // Token i is its own peer, so some warp holds a finite max for finite inputs; a warp
        // that saw no key has l = 0 and adds nothing.
        float big = -INFINITY;
        for (uint32_t w = 0; w < kWarps; ++w) big = fmaxf(big, m_s[w]);
        float total = 0.0f;
        for (uint32_t w = 0; w < kWarps; ++w)
            if (l_s[w] > 0.0f) total += l_s[w] * expf(m_s[w] - big);
        a.stats[i * a.hq + h] = make_float2(big, 1.0f / total);
    }
}

// Pass 2: block (j, g) -> out[j, g]. A work item is (peer i, head h of group g). Eight blocks
// per multiprocessor (64 registers) rather than ptxas's default budget of 48, which spilled the
// four items' row pointers and normalisers.
template <bool SOFTMAX>
__global__ void __launch_bounds__(kThreads, 8) attn_mass_sum_kernel(Args a) {
    __shared__ float k_s[kMaxD];
    __shared__ uint32_t list[kThreads];
    __shared__ uint32_t warp_count[kWarps];
    __shared__ float red[32];
    const uint64_t j = blockIdx.x;
    const uint32_t g = blockIdx.y, tid = threadIdx.x, warp = tid / 32;
    const uint32_t per_group = a.hq / a.hkv;  // 0 when Hq = 0: every mass is 0
    if (!counted(a, j)) {
        if (tid == 0) a.out[j * a.hkv + g] = 0.0f;  // uncounted tokens get 0
        return;
    }
    const int32_t sq = a.seq[j];
    for (uint32_t e = tid; e < a.d; e += kThreads) k_s[e] = a.k[(j * a.hkv + g) * a.d + e];

    float acc = 0.0f;  // this warp's sum (lane-uniform)
    for (uint64_t t0 = 0; t0 < a.n; t0 += kThreads) {
        const uint32_t count = stage_peers(a, t0, sq, list, warp_count);
        const uint32_t items = count * per_group;
        for (uint32_t e0 = warp * kItemsPerStep; e0 < items; e0 += kWarps * kItemsPerStep) {
            const uint32_t live = min(kItemsPerStep, items - e0);
            const float* r[kItemsPerStep];
            float2 st[kItemsPerStep];  // the query row's (m, 1 / l), fetched with the row
#pragma unroll
            for (uint32_t u = 0; u < kItemsPerStep; ++u) {
                const uint32_t e = u < live ? e0 + u : e0;
                const uint64_t i = t0 + list[e / per_group];
                const uint64_t row = i * a.hq + g * per_group + e % per_group;  // (i, h) of the item
                r[u] = a.q + row * a.d;
                if constexpr (SOFTMAX) st[u] = a.stats[row];
                else st[u] = make_float2(0.0f, 1.0f);
            }
            float dot[kItemsPerStep];
            warp_dots(k_s, r, live, a.d, dot);
#pragma unroll
            for (uint32_t u = 0; u < kItemsPerStep; ++u)
                if (u < live) acc += expf(a.scale * dot[u] - st[u].x) * st[u].y;
        }
    }
    // One value per warp (every lane holds it): the block's sum of lane 0 of each warp.
    const float total = block_sum(tid % 32 == 0 ? acc : 0.0f, red);
    if (tid == 0) a.out[j * a.hkv + g] = total;
}

bool supports(const DeviceProps& p, const mnemo_node& nd) {
    if (nd.n_inputs != 4 || nd.output.dtype != MNEMO_DTYPE_F32) return false;
    if (nd.inputs[0].dtype != MNEMO_DTYPE_F32 || nd.inputs[1].dtype != MNEMO_DTYPE_F32 ||
        nd.inputs[2].dtype != MNEMO_DTYPE_I32 || nd.inputs[3].dtype != MNEMO_DTYPE_I32)
        return false;
    if (nd.inputs[0].ndim != 3 || nd.inputs[1].ndim != 3) return false;
    const mnemo_tensor& q = nd.inputs[0];
    const mnemo_tensor& k = nd.inputs[1];
    const uint64_t max_x = p.max_grid[0] > 0 ? static_cast<uint64_t>(p.max_grid[0]) : 65535;
    // Tokens along grid x, heads along y; a tile's work items (tokens x heads per group) are 32-bit.
    if (static_cast<uint64_t>(q.shape[0]) > max_x || q.shape[1] > 65535 || k.shape[1] > 65535) return false;
    if (k.shape[1] == 0 || q.shape[1] % k.shape[1] != 0) return false;  // the engine's shape rule
    return q.shape[2] <= kMaxD && (nd.iparams[0] == 0 || nd.iparams[0] == 1);
}

uint64_t scratch_bytes(const DeviceProps&, const mnemo_node& nd) {
    if (nd.iparams[0] != 0) return 0;  // mode 1 needs no normaliser
    return static_cast<uint64_t>(nd.inputs[0].shape[0]) * static_cast<uint64_t>(nd.inputs[0].shape[1]) * sizeof(float2);
}

void build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const mnemo_tensor& q = nd.inputs[0];
    Args a{};
    a.n = static_cast<uint64_t>(q.shape[0]);
    a.hq = static_cast<uint32_t>(q.shape[1]);
    a.d = static_cast<uint32_t>(q.shape[2]);
    a.hkv = static_cast<uint32_t>(nd.inputs[1].shape[1]);
    if (a.n == 0) return;
    a.q = KernelBuilder::as<const float>(q);
    a.k = KernelBuilder::as<const float>(nd.inputs[1]);
    a.seq = KernelBuilder::as<const int32_t>(nd.inputs[2]);
    a.pos = KernelBuilder::as<const int32_t>(nd.inputs[3]);
    a.out = KernelBuilder::as<float>(nd.output);
    a.first = nd.iparams[1];
    a.scale = nd.fparams[0];
    const bool softmax = nd.iparams[0] == 0;
    const uint32_t tokens = static_cast<uint32_t>(a.n);
    if (softmax && a.hq > 0) {
        a.stats = reinterpret_cast<float2*>(b.scratch(0));
        b.launch([=](cudaStream_t st) {
            attn_mass_norm_kernel<<<dim3(tokens, a.hq), kThreads, 0, st>>>(a);
            return cudaGetLastError();
        });
    }
    b.launch([=](cudaStream_t st) {
        if (softmax) attn_mass_sum_kernel<true><<<dim3(tokens, a.hkv), kThreads, 0, st>>>(a);
        else attn_mass_sum_kernel<false><<<dim3(tokens, a.hkv), kThreads, 0, st>>>(a);
        return cudaGetLastError();
    });
}

}  // namespace

void register_attn_mass_kernels() { register_kernel(MNEMO_OP_ATTN_MASS, Kernel{supports, scratch_bytes, build}); }

}  // namespace mnemo_cuda
