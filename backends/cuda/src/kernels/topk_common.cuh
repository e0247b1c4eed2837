// Exact top-k selection in one thread block, shared by ARGTOPK and PK_TOPK (topk.cu).
//
// Both ops must return the reference's indices bit for bit (mnemo_abi.h: value descending, NaN
// below every number, -0.0 == +0.0, ties to the lower index). Every candidate therefore becomes
// an unsigned integer key that is larger exactly when the candidate ranks first: the order key
// of its value, then the complement of its index (a lower index ranks first). No two candidates
// of one list share a key, so "the k largest keys, sorted" has one answer whatever the thread
// count, the selection strategy or the order in which candidates arrive, and no float is ever
// compared (no NaN or denormal handling can move a result). The zero key ranks below every real
// one (a real key's index part ~j is >= 2^31 because every index is < 2^31) and pads sets.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace mnemo_cuda {

// ------------------------------------------------------------------ order keys

// An unsigned integer that orders like the f32 with bits `b`: NaN 0 (below -inf, whose key is
// 0x007FFFFF), -0 folded into +0, then the sign-magnitude flip (negatives reversed below the
// positives). Bits only: no float comparison.
__device__ __forceinline__ uint32_t f32_rank_key(uint32_t b) {
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0u;
    if ((b & 0x7FFFFFFFu) == 0u) b = 0u;
    return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}

// The same for a double's bits.
__device__ __forceinline__ uint64_t f64_rank_key(uint64_t b) {
    const uint64_t mag = b & 0x7FFFFFFFFFFFFFFFull;
    if (mag > 0x7FF0000000000000ull) return 0ull;
    if (mag == 0ull) b = 0ull;
    return (b >> 63) != 0ull ? ~b : (b | 0x8000000000000000ull);
}

// ARGTOPK (and any f32 list): value key in the high word, ~index in the low word.
using Key64 = unsigned long long;

__device__ __forceinline__ Key64 f32_index_key(float v, uint32_t j) {
    return (static_cast<Key64>(f32_rank_key(__float_as_uint(v))) << 32) | static_cast<Key64>(~j);
}
__device__ __forceinline__ uint32_t key_index(Key64 k) { return ~static_cast<uint32_t>(k & 0xFFFFFFFFull); }

// PK_TOPK: a 64-bit value key (stage 1: an f32 key; stage 2: a double key) and ~index. 16 bytes
// with the padding word, so a key moves as one aligned 128-bit access. Trivial (no constructors):
// it lives in __shared__ arrays. Key96{} is the zero key.
struct Key96 {
    unsigned long long v;
    uint32_t i;
    uint32_t pad;
};
static_assert(sizeof(Key96) == 16, "Key96 is moved as 16 bytes");

__device__ __forceinline__ uint32_t key_index(const Key96& k) { return ~k.i; }

__device__ __forceinline__ bool key_gt(Key64 a, Key64 b) { return a > b; }
__device__ __forceinline__ bool key_gt(const Key96& a, const Key96& b) { return a.v != b.v ? a.v > b.v : a.i > b.i; }

// ------------------------------------------------------------------ bitonic network

// The smallest power of two >= v, for v <= 2^31 (larger v stop at 2^31 instead of looping).
__host__ __device__ constexpr uint32_t pow2_ceil(uint32_t v) {
    uint32_t p = 1;
    while (p < v && p < 0x80000000u) p <<= 1;
    return p;
}

// Pair t of a compare-exchange stage of distance `stride` (a power of two): the lower element
// (t with a 0 bit inserted at the stride's position); its partner is that + stride.
__device__ __forceinline__ uint32_t pair_low(uint32_t t, uint32_t stride) {
    return ((t & ~(stride - 1u)) << 1) | (t & (stride - 1u));
}

// Orders *a (the lower position) and *b: the larger first when `desc`, else the smaller first.
template <class Key>
__device__ __forceinline__ void cmpx(Key* a, Key* b, bool desc) {
    const Key x = *a, y = *b;
    if (key_gt(y, x) == desc) {
        *a = y;
        *b = x;
    }
}

// Bitonic stages over buf[0..count) (count a power of two) by the whole block: for each size in
// size_first..size_last (powers of two), strides min(size, count)/2 .. 1, descending where
// (origin + i) & size is 0. `origin` is the position of buf[0] in the full sequence being sorted
// (0 for a sort that lives entirely in buf). A full sort is sizes 2..count. Every stage ends
// with a barrier, so the call ends with the block synchronised. size_last < 2^31.
template <class Key>
__device__ void block_bitonic(Key* buf, uint32_t count, uint32_t origin, uint32_t size_first, uint32_t size_last) {
    for (uint32_t size = size_first; size <= size_last; size <<= 1) {
        for (uint32_t stride = (size < count ? size : count) >> 1; stride > 0u; stride >>= 1) {
            for (uint32_t t = threadIdx.x; t < count / 2u; t += blockDim.x) {
                const uint32_t i = pair_low(t, stride);
                cmpx(&buf[i], &buf[i + stride], ((origin + i) & size) == 0u);
            }
            __syncthreads();
        }
    }
}

// Sorts buf[0..cnt) best first by the whole block. buf[0..cnt) may have been written by any
// thread before the call (the first barrier publishes them); buf must hold pow2_ceil(cnt) keys:
// the tail up to there is padded with zero keys, which sort last. Ends synchronised.
template <class Key>
__device__ void block_sort_desc(Key* buf, uint32_t cnt) {
    const uint32_t s = pow2_ceil(cnt < 1u ? 1u : cnt);
    for (uint32_t i = cnt + threadIdx.x; i < s; i += blockDim.x) buf[i] = Key{};
    __syncthreads();
    block_bitonic(buf, s, 0u, 2u, s);
}

// Whether block_top can select the best k of n candidates with `cap` keys of shared memory and
// `threads` threads: the whole list fits, or the streaming selection keeps K = pow2_ceil(k)
// keys next to at least one pass of the block.
__host__ __device__ constexpr bool selection_fits(uint64_t n, uint64_t k, uint32_t cap, uint32_t threads) {
    return n <= cap || (k <= cap / 2 && 2 * pow2_ceil(static_cast<uint32_t>(k)) <= cap &&
                        pow2_ceil(static_cast<uint32_t>(k)) + threads <= cap);
}

// Leaves the best k of the candidates src(0..n-1) sorted best first in buf[0..k), by the whole
// block with uniform arguments (1 <= k <= n < 2^31, cap a power of two, selection_fits(n, k, cap,
// blockDim.x)); buf holds `cap` keys, `count` is a shared counter. The caller must have finished
// every read of buf from before the call (a barrier); the call ends synchronised.
//
// A list that fits is loaded whole and sorted. A longer one streams through in passes of `tile`
// candidates: each thread appends (atomic slot) the candidates that beat `threshold`, the k-th
// best kept so far; when the next pass could overflow buf, the kept set is sorted and cut to
// its best K (K = pow2_ceil(k) >= k, so buf[k-1] is the new threshold). Invariant: the best k
// of all candidates seen so far are in buf[0..filled): a candidate below the threshold has at
// least k better ones already kept (keys are unique, so "below" is strict), and a cut keeps the
// best K >= k. Arrival order does not matter: the final sort orders the survivors.
template <class Key, class Source>
__device__ void block_top(Key* buf, uint32_t cap, uint32_t n, uint32_t k, const Source& src, uint32_t* count) {
    const uint32_t tid = threadIdx.x, nt = blockDim.x;
    if (n <= cap) {
        for (uint32_t j = tid; j < n; j += nt) buf[j] = src(j);
        block_sort_desc(buf, n);
        return;
    }
    const uint32_t kk = pow2_ceil(k);
    const uint32_t room = (cap - kk) / nt;  // >= 1 by selection_fits
    const uint32_t per = room < 8u ? room : 8u;
    const uint32_t tile = per * nt;  // <= cap - kk: a pass after a cut cannot overflow
    Key threshold{};                 // the zero key: everything is admitted at first
    uint32_t filled = 0;             // *count as of the last barrier (uniform)
    if (tid == 0) *count = 0;
    __syncthreads();
    for (uint32_t base = 0; base < n; base += tile) {
        if (filled + tile > cap) {
            // filled > cap - tile >= kk: the cut keeps kk real candidates.
            block_sort_desc(buf, filled);
            threshold = buf[k - 1];
            filled = kk;
            if (tid == 0) *count = kk;
            __syncthreads();  // appends below go to buf[kk..), never to the kept buf[0..kk)
        }
        for (uint32_t e = 0; e < per; ++e) {
            const uint32_t j = base + e * nt + tid;
            if (j < n) {
                const Key c = src(j);
                if (key_gt(c, threshold)) buf[atomicAdd(count, 1u)] = c;
            }
        }
        __syncthreads();
        filled = *count;
        __syncthreads();  // every thread has read *count before the next pass appends
    }
    block_sort_desc(buf, filled);
}

}  // namespace mnemo_cuda
