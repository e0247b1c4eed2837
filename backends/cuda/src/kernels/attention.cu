// ATTENTION: one block per (token n, query head h, key chunk), a streaming (online) softmax in f32
// over the chunk's keys in tiles of kThreads keys:
//   1. scores: each warp takes four keys at a time; its lanes stride over D (coalesced reads of the
//      key rows, q from shared memory) and a warp sum gives scale * q.k;
//   2. the tile's max joins the running max m (block_max); thread t turns slot t into
//      p = exp(s - m) and keeps its own share of the running sum l;
//   3. values: the threads form key groups of `lanes` threads (a power of two >= Dv, at most
//      kThreads); lane c of a group owns output columns c, c + lanes, ... and adds p_j * v[j] for
//      the group's keys of the tile (consecutive lanes read consecutive floats of a value row).
//      Running sums are rescaled by exp(m_old - m) when m grows.
// Every thread sees the same m (a block reduction), so the per-thread sums and the key groups'
// rows merge by plain addition at the end.
//
// Decode (few queries, long cache) cannot fill a GPU with one block per (token, head), so the key
// range is cut into chunks (flash decoding): each chunk stores its unnormalised row and (m, l) in
// scratch and a second kernel merges the chunks that exist. pos is data the graph never sees, so
// the cut is planned for the cache capacity C; chunks that start after pos[n] exit at once and
// the combine never reads them. Design after backends/vulkan (attention.comp + attention_combine.comp).
//
// The optional prefix (explicit memories, inputs 5..8) joins the same softmax as extra keys AHEAD
// of the cache: key index j < L reads slot j of the query's prefix block, j >= L cache position
// j - L, with L = plen[pblock[n]] and L + pos[n] + 1 keys in all. Tiles, chunks and the combine
// all work on that one index range (planned for the capacity M + C), so a chunk may hold prefix
// and cache keys together and a prefix-only chunk is merged like any other.
//
// The caches (and the prefix) are f32, f16 or q8_0 (--cache-type): the kernel is instantiated per
// storage type and reads every element as f32 through KvRows (f16 widened; q8_0 decoded exactly
// as the reference decodes it, q * d, one byte per weight plus the block's scale: quant_blocks.cuh).
// A q8_0 row of D values is D / 32 whole blocks, so element e of the cache tensor, counted as if
// it were f32, is weight e % 32 of block e / 32: offsets are computed in elements for every type.
#include "device_common.cuh"
#include "kernel_api.hpp"
#include "quant_weights.cuh"

namespace mnemo_cuda {
namespace {

constexpr uint32_t kThreads = 128;  // threads per block, and keys per tile
constexpr uint32_t kWarps = kThreads / 32;
constexpr uint32_t kKeysPerStep = 4;  // keys a warp scores at once (independent loads in flight)
constexpr uint32_t kMaxD = 512;       // q row in shared memory
constexpr uint32_t kMaxAcc = 4;       // output columns per thread: Dv <= kThreads * kMaxAcc
constexpr uint64_t kMinChunk = 2 * kThreads;
constexpr uint32_t kMaxSplits = 128;  // the combine kernel's shared array
constexpr uint32_t kCombineThreads = 128;

struct Shape {
    uint64_t n, hq, d, s, hkv, c, dv;
    uint64_t blocks, slots;  // prefix pk[B, Hkv, M, D]: B and M (0 and 0 without a prefix)
    uint64_t capacity() const { return slots + c; }  // most keys a query can have
};

Shape shape_of(const mnemo_node& nd) {
    const mnemo_tensor& q = nd.inputs[0];
    const mnemo_tensor& k = nd.inputs[1];
    const mnemo_tensor& v = nd.inputs[2];
    const bool prefix = nd.n_inputs >= 8;
    return {static_cast<uint64_t>(q.shape[0]), static_cast<uint64_t>(q.shape[1]), static_cast<uint64_t>(q.shape[2]),
            static_cast<uint64_t>(k.shape[0]), static_cast<uint64_t>(k.shape[1]), static_cast<uint64_t>(k.shape[2]),
            static_cast<uint64_t>(v.shape[3]),
            prefix ? static_cast<uint64_t>(nd.inputs[5].shape[0]) : 0,
            prefix ? static_cast<uint64_t>(nd.inputs[5].shape[2]) : 0};
}

// The prefix as the kernels see it; `len` is null without one.
struct Prefix {
    const void* k;         // pk [B, Hkv, M, D], of the caches' dtype
    const void* v;         // pv [B, Hkv, M, Dv]
    const int32_t* len;    // plen [B]
    const int32_t* block;  // pblock [N]; null: every query reads block 0
    int64_t blocks, slots;
};

// Which prefix query n reads: block -1 (none) or 0..B-1 with its length L in 0..M. `ok` is false
// for a bad pblock[n] or plen[b]; `value` and `limit` then say what to report.
struct PrefixPick {
    int64_t block, len, value, limit;
    bool ok;
};

__device__ __forceinline__ PrefixPick pick_prefix(const Prefix& p, uint64_t n) {
    if (!p.len) return {-1, 0, 0, 0, true};
    const int64_t b = p.block ? p.block[n] : 0;
    if (b < 0) return {-1, 0, 0, 0, true};  // this query has no prefix
    if (b >= p.blocks) return {-1, 0, b, p.blocks, false};
    const int64_t len = p.len[b];
    if (len < 0 || len > p.slots) return {-1, 0, len, p.slots + 1, false};
    return {b, len, 0, 0, true};
}

// Chunks per (token, head): 1 unless there are too few (token, head) tasks to fill the device
// (about 8 blocks per multiprocessor) and the cache spans several chunks. A chunk is a multiple
// of the tile, at least two tiles, and there are at most kMaxSplits of them.
struct Split {
    uint64_t splits, chunk;
};

Split split_for(const DeviceProps& p, const Shape& s) {
    const uint64_t target = static_cast<uint64_t>(std::max(p.multiprocessors, 1)) * 8;
    const uint64_t tasks = s.n * s.hq, cap = s.capacity();
    if (tasks == 0 || tasks >= target || cap < 2 * kMinChunk) return {1, cap};
    const uint64_t want = (target + tasks - 1) / tasks;
    uint64_t chunk = std::max(kMinChunk, (cap + want - 1) / want);
    chunk = std::max<uint64_t>(chunk, (cap + kMaxSplits - 1) / kMaxSplits);
    chunk = (chunk + kThreads - 1) / kThreads * kThreads;
    const uint64_t splits = (cap + chunk - 1) / chunk;
    return splits > 1 ? Split{splits, chunk} : Split{1, cap};
}

// Scratch of the split path: (m, l) pairs, then the unnormalised rows (256-byte aligned).
uint64_t ml_bytes(const Shape& s, const Split& sp) { return (s.n * s.hq * sp.splits * 2 * 4 + 255) / 256 * 256; }
uint64_t acc_bytes(const Shape& s, const Split& sp) { return s.n * s.hq * sp.splits * s.dv * 4; }

// Value columns per key group: the smallest power of two >= Dv, at most kThreads.
uint32_t lanes_for(uint64_t dv) {
    uint32_t lanes = 1;
    while (lanes < kThreads && lanes < dv) lanes *= 2;
    return lanes;
}

__device__ __forceinline__ uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

// The storage of a q8_0 cache: 34-byte blocks, addressed only through kv_at (never by pointer
// arithmetic on this type, whose size is one byte).
struct Q8Cache {
    uint8_t byte;
};

// Element i of a cache (f32 / f16 / q8_0) as f32. The caches are read-only in this kernel: __ldg.
__device__ __forceinline__ float kv_at(const float* p, uint64_t i) { return __ldg(p + i); }
__device__ __forceinline__ float kv_at(const __half* p, uint64_t i) { return __half2float(__ldg(p + i)); }
__device__ __forceinline__ float kv_at(const Q8Cache* p, uint64_t i) {
    return quant_at<Q8_0Block>(reinterpret_cast<const uint8_t*>(p), static_cast<int64_t>(i));
}

// Rows of a cache as the kernel walks them: element `at` of tensor p onward. r + o moves o
// elements; r[i] reads element i from there as f32.
template <typename KT>
struct KvRows {
    const KT* p;
    uint64_t at;
    __device__ KvRows operator+(uint64_t o) const { return {p, at + o}; }
    __device__ float operator[](uint64_t i) const { return kv_at(p, at + i); }
};

template <typename KT, uint32_t ACC, bool SPLIT>
__global__ void __launch_bounds__(kThreads)
    attention_kernel(const float* __restrict__ q, const KT* __restrict__ k, const KT* __restrict__ v,
                     const int32_t* __restrict__ seq, const int32_t* __restrict__ pos, Prefix pre,
                     float* __restrict__ out, float* __restrict__ part_ml, float* __restrict__ part_acc, uint32_t hq,
                     uint32_t hkv, int64_t n_seq, int64_t ctx, uint32_t d, uint32_t dv, uint64_t chunk, uint32_t splits,
                     uint32_t lanes, float scale, KernelStatus* status, uint32_t node) {
    __shared__ float q_s[kMaxD];
    __shared__ float p_s[kThreads];  // the tile's scores, then its probabilities
    __shared__ float red[32];
    __shared__ float merge_s[kThreads * ACC];  // key groups' rows: groups * Dv <= kThreads * ACC floats

    const uint64_t n = blockIdx.x;
    const uint32_t h = blockIdx.y, split = blockIdx.z, tid = threadIdx.x;

    // Every early return below depends on the block's coordinates only: the whole block leaves
    // together and no barrier is skipped. One block per token reports (head 0, chunk 0).
    const int64_t sq = seq[n], ps = pos[n];
    const bool reporter = tid == 0 && h == 0 && split == 0;
    if (sq < 0 || sq >= n_seq) {
        if (reporter) report_bad_index(status, node, sq, n_seq);
        return;
    }
    if (ps < 0 || ps >= ctx) {
        if (reporter) report_bad_index(status, node, ps, ctx);
        return;
    }
    // Every plen entry is checked (by token 0), read or not, as the reference does; a query
    // whose own block or length is bad is skipped.
    if (reporter && n == 0 && pre.len) {
        for (int64_t b = 0; b < pre.blocks; ++b)
            if (pre.len[b] < 0 || pre.len[b] > pre.slots) report_bad_index(status, node, pre.len[b], pre.slots + 1);
    }
    const PrefixPick pp = pick_prefix(pre, n);
    if (!pp.ok) {
        if (reporter) report_bad_index(status, node, pp.value, pp.limit);
        return;
    }
    if (h >= hq) return;  // Hq = 0 still runs one block per token, for the checks above
    const uint64_t plen = static_cast<uint64_t>(pp.len);  // keys 0..plen-1 are prefix slots
    const uint64_t keys = plen + static_cast<uint64_t>(ps) + 1;
    const uint64_t begin = split * chunk;
    if (begin >= keys) return;  // a chunk past the causal limit: the combine skips it
    const uint64_t end = min_u64(keys, begin + chunk);

    const uint64_t task = n * hq + h;
    for (uint32_t i = tid; i < d; i += kThreads) q_s[i] = q[task * d + i];
    // Query head h reads kv head h / (Hq / Hkv); the slab holds the C cache rows of that
    // (sequence, kv head).
    const uint64_t g = h / (hq / hkv);
    const uint64_t slab = (static_cast<uint64_t>(sq) * hkv + g) * static_cast<uint64_t>(ctx);
    // Key j of the combined range: slot j of the prefix block for j < plen, else cache row j - plen.
    const KvRows<KT> kb{k, slab * d};
    const KvRows<KT> vb{v, slab * dv};
    KvRows<KT> pkb = kb;  // unused when plen = 0
    KvRows<KT> pvb = vb;
    if (pp.block >= 0) {
        const uint64_t pslab = (static_cast<uint64_t>(pp.block) * hkv + g) * static_cast<uint64_t>(pre.slots);
        pkb = KvRows<KT>{static_cast<const KT*>(pre.k), pslab * d};
        pvb = KvRows<KT>{static_cast<const KT*>(pre.v), pslab * dv};
    }
    __syncthreads();

    const uint32_t warp = tid / 32, lane = tid % 32;
    const uint32_t vlane = tid % lanes, group = tid / lanes, groups = kThreads / lanes;
    float m = -INFINITY, l = 0.0f;
    float acc[ACC];
#pragma unroll
    for (uint32_t a = 0; a < ACC; ++a) acc[a] = 0.0f;

    for (uint64_t base = begin; base < end; base += kThreads) {
        const uint32_t count = static_cast<uint32_t>(min_u64(kThreads, end - base));  // >= 1

        // 1. Scores of the tile's keys into p_s. j0 is warp-uniform: every lane reaches the sums.
        for (uint32_t j0 = warp * kKeysPerStep; j0 < count; j0 += kWarps * kKeysPerStep) {
            // The four rows, contiguous unless the group straddles the prefix/cache boundary
            // (then each key is looked up on its own).
            const uint64_t j = base + j0;
            const bool split_group = j < plen && j + kKeysPerStep > plen;
            const KvRows<KT> kr = j < plen ? pkb + j * d : kb + (j - plen) * d;
            float dot[kKeysPerStep];
#pragma unroll
            for (uint32_t u = 0; u < kKeysPerStep; ++u) dot[u] = 0.0f;
            if (!split_group) {
                for (uint32_t i = lane; i < d; i += 32) {
                    const float qi = q_s[i];
#pragma unroll
                    for (uint32_t u = 0; u < kKeysPerStep; ++u)
                        if (j0 + u < count) dot[u] += qi * kr[static_cast<uint64_t>(u) * d + i];
                }
            } else {
#pragma unroll
                for (uint32_t u = 0; u < kKeysPerStep; ++u) {
                    if (j0 + u >= count) break;
                    const uint64_t ju = j + u;
                    const KvRows<KT> r = ju < plen ? pkb + ju * d : kb + (ju - plen) * d;
                    for (uint32_t i = lane; i < d; i += 32) dot[u] += q_s[i] * r[i];
                }
            }
#pragma unroll
            for (uint32_t u = 0; u < kKeysPerStep; ++u) dot[u] = warp_sum(dot[u]);
            if (lane == 0) {
#pragma unroll
                for (uint32_t u = 0; u < kKeysPerStep; ++u)
                    if (j0 + u < count) p_s[j0 + u] = scale * dot[u];
            }
        }
        __syncthreads();

        // 2. The running max over the tile; slot t becomes its probability (each thread reads
        // and writes only its own slot here). The tile holds at least one key, so m_new is
        // finite for finite scores and the first tile's factor exp(-inf - m_new) is 0.
        const float s = tid < count ? p_s[tid] : -INFINITY;
        const float m_new = fmaxf(m, block_max(s, red));
        const float pr = tid < count ? expf(s - m_new) : 0.0f;
        p_s[tid] = pr;
        const float alpha = expf(m - m_new);
        l = l * alpha + pr;
#pragma unroll
        for (uint32_t a = 0; a < ACC; ++a) acc[a] *= alpha;
        m = m_new;
        __syncthreads();

        // 3. Values: group g takes keys g, g + groups, ... of the tile.
        for (uint32_t jj = group; jj < count; jj += groups) {
            const float p = p_s[jj];
            const uint64_t j = base + jj;
            const KvRows<KT> vr = j < plen ? pvb + j * dv : vb + (j - plen) * dv;
#pragma unroll
            for (uint32_t a = 0; a < ACC; ++a) {
                const uint32_t c = vlane + a * lanes;
                if (c < dv) acc[a] += p * vr[c];
            }
        }
        __syncthreads();  // the next tile's scores overwrite p_s
    }

    // Merge: the sum l over threads, the rows over key groups (one m everywhere: plain sums).
    const float total = block_sum(l, red);  // ends synchronised
#pragma unroll
    for (uint32_t a = 0; a < ACC; ++a) {
        const uint32_t c = vlane + a * lanes;
        if (c < dv) merge_s[group * dv + c] = acc[a];
    }
    __syncthreads();
    for (uint32_t c = tid; c < dv; c += kThreads) {
        float o = 0.0f;
        for (uint32_t g = 0; g < groups; ++g) o += merge_s[g * dv + c];
        if constexpr (SPLIT) part_acc[(task * splits + split) * dv + c] = o;
        else out[task * dv + c] = o / total;
    }
    if constexpr (SPLIT) {
        if (tid == 0) {
            const uint64_t part = task * splits + split;
            part_ml[2 * part] = m;
            part_ml[2 * part + 1] = total;
        }
    }
}

// Second pass of the split path: block (n, h) merges the chunks holding keys of the token (its
// prefix slots, then its causal cache rows). Chunk c stored m_c, l_c and its unnormalised row
// o_c; with M = max m_c,
//   out = sum_c exp(m_c - M) o_c / sum_c exp(m_c - M) l_c.
// Chunks past the token's last key were never written this run (their scratch is stale) and are
// not read. A token with a bad seq, pos, pblock or plen was reported by the first pass and is
// skipped here.
__global__ void __launch_bounds__(kCombineThreads)
    attention_combine_kernel(const int32_t* __restrict__ seq, const int32_t* __restrict__ pos, Prefix pre,
                             float* __restrict__ out, const float* __restrict__ part_ml,
                             const float* __restrict__ part_acc, uint32_t hq, int64_t n_seq, int64_t ctx, uint32_t dv,
                             uint64_t chunk, uint32_t splits) {
    __shared__ float w_s[kMaxSplits];  // exp(m_c - M) per chunk
    __shared__ float inv_s;
    const uint64_t n = blockIdx.x;
    const uint32_t h = blockIdx.y, tid = threadIdx.x;
    const int64_t sq = seq[n], ps = pos[n];
    if (sq < 0 || sq >= n_seq || ps < 0 || ps >= ctx || h >= hq) return;  // block-uniform
    const PrefixPick pp = pick_prefix(pre, n);
    if (!pp.ok) return;
    // The chunks holding one of the L + pos + 1 keys (L = prefix slots read): the first pass
    // wrote exactly these.
    const uint64_t last_key = static_cast<uint64_t>(pp.len) + static_cast<uint64_t>(ps);
    const uint32_t used = static_cast<uint32_t>(min_u64(splits, last_key / chunk + 1));
    const uint64_t first = (n * hq + h) * splits;

    float big = -INFINITY;
    for (uint32_t c = 0; c < used; ++c) big = fmaxf(big, part_ml[2 * (first + c)]);
    for (uint32_t c = tid; c < used; c += kCombineThreads) w_s[c] = expf(part_ml[2 * (first + c)] - big);
    __syncthreads();
    if (tid == 0) {
        float total = 0.0f;
        for (uint32_t c = 0; c < used; ++c) total += w_s[c] * part_ml[2 * (first + c) + 1];
        inv_s = 1.0f / total;
    }
    __syncthreads();
    const float inv = inv_s;
    for (uint32_t i = tid; i < dv; i += kCombineThreads) {
        float o = 0.0f;
        for (uint32_t c = 0; c < used; ++c) o += w_s[c] * part_acc[(first + c) * dv + i];
        out[(n * hq + h) * dv + i] = o * inv;
    }
}

bool supports(const DeviceProps& p, const mnemo_node& nd) {
    // 5 inputs, or 8 / 9 with a prefix (pk, pv, plen [, pblock]).
    if ((nd.n_inputs != 5 && nd.n_inputs != 8 && nd.n_inputs != 9) || nd.output.dtype != MNEMO_DTYPE_F32) return false;
    // q f32; the caches f32, f16 or q8_0, one dtype (the shape rule); the prefix of the same dtype.
    const int32_t cache = nd.inputs[1].dtype;
    if (nd.inputs[0].dtype != MNEMO_DTYPE_F32 ||
        (cache != MNEMO_DTYPE_F32 && cache != MNEMO_DTYPE_F16 && cache != MNEMO_DTYPE_Q8_0) || nd.inputs[2].dtype != cache)
        return false;
    if (nd.inputs[3].dtype != MNEMO_DTYPE_I32 || nd.inputs[4].dtype != MNEMO_DTYPE_I32) return false;
    if (nd.inputs[0].ndim != 3 || nd.inputs[1].ndim != 4 || nd.inputs[2].ndim != 4) return false;
    if (nd.n_inputs >= 8) {
        if (nd.inputs[5].dtype != cache || nd.inputs[6].dtype != cache ||
            nd.inputs[7].dtype != MNEMO_DTYPE_I32 || nd.inputs[5].ndim != 4 || nd.inputs[6].ndim != 4)
            return false;
        if (nd.n_inputs == 9 && nd.inputs[8].dtype != MNEMO_DTYPE_I32) return false;
        // plen values are compared with M + 1 and reported as 32-bit limits
        if (nd.inputs[5].shape[2] >= INT32_MAX) return false;
    }
    const Shape s = shape_of(nd);
    // q8_0 rows are whole blocks (the shape rule's requirement; element offsets rely on it).
    if (cache == MNEMO_DTYPE_Q8_0 && (s.d % 32 != 0 || s.dv % 32 != 0)) return false;
    const uint64_t max_x = p.max_grid[0] > 0 ? static_cast<uint64_t>(p.max_grid[0]) : 65535;
    // Tokens along grid x, heads along y (<= 65535), chunks along z (<= kMaxSplits).
    if (s.n > max_x || s.hq > 65535) return false;
    if (s.hkv == 0 || s.hq % s.hkv != 0) return false;  // the engine's shape rule, relied on here
    return s.d <= kMaxD && s.dv <= uint64_t{kThreads} * kMaxAcc;
}

uint64_t scratch_bytes(const DeviceProps& p, const mnemo_node& nd) {
    const Shape s = shape_of(nd);
    const Split sp = split_for(p, s);
    return sp.splits > 1 ? ml_bytes(s, sp) + acc_bytes(s, sp) : 0;
}

template <typename KT, uint32_t ACC>
void launch_with(KernelBuilder& b, const Shape& s, const Split& sp, uint32_t lanes) {
    const mnemo_node& nd = b.node();
    const float* q = KernelBuilder::as<const float>(nd.inputs[0]);
    const KT* k = KernelBuilder::as<const KT>(nd.inputs[1]);
    const KT* v = KernelBuilder::as<const KT>(nd.inputs[2]);
    const int32_t* seq = KernelBuilder::as<const int32_t>(nd.inputs[3]);
    const int32_t* pos = KernelBuilder::as<const int32_t>(nd.inputs[4]);
    float* out = KernelBuilder::as<float>(nd.output);
    Prefix pre{nullptr, nullptr, nullptr, nullptr, 0, 0};
    if (nd.n_inputs >= 8) {
        pre.k = KernelBuilder::as<const KT>(nd.inputs[5]);
        pre.v = KernelBuilder::as<const KT>(nd.inputs[6]);
        pre.len = KernelBuilder::as<const int32_t>(nd.inputs[7]);
        if (nd.n_inputs == 9) pre.block = KernelBuilder::as<const int32_t>(nd.inputs[8]);
        pre.blocks = static_cast<int64_t>(s.blocks);
        pre.slots = static_cast<int64_t>(s.slots);
    }
    const uint32_t hq = static_cast<uint32_t>(s.hq), hkv = static_cast<uint32_t>(s.hkv);
    const int64_t n_seq = static_cast<int64_t>(s.s), ctx = static_cast<int64_t>(s.c);
    const uint32_t d = static_cast<uint32_t>(s.d), dv = static_cast<uint32_t>(s.dv);
    const uint64_t chunk = sp.chunk;
    const uint32_t splits = static_cast<uint32_t>(sp.splits);
    const float scale = nd.fparams[0];
    KernelStatus* status = b.status();
    const uint32_t node = b.node_index();
    // Hq = 0 still runs one block per token, so bad indices are reported as on the CPU.
    const dim3 grid(static_cast<uint32_t>(s.n), std::max<uint32_t>(hq, 1), splits);

    if (splits == 1) {
        b.launch([=](cudaStream_t st) {
            attention_kernel<KT, ACC, false><<<grid, kThreads, 0, st>>>(q, k, v, seq, pos, pre, out, nullptr, nullptr, hq, hkv,
                                                                   n_seq, ctx, d, dv, chunk, 1, lanes, scale, status, node);
            return cudaGetLastError();
        });
        return;
    }
    float* part_ml = reinterpret_cast<float*>(b.scratch(0));
    float* part_acc = reinterpret_cast<float*>(b.scratch(ml_bytes(s, sp)));
    b.launch([=](cudaStream_t st) {
        attention_kernel<KT, ACC, true><<<grid, kThreads, 0, st>>>(q, k, v, seq, pos, pre, out, part_ml, part_acc, hq, hkv, n_seq,
                                                              ctx, d, dv, chunk, splits, lanes, scale, status, node);
        return cudaGetLastError();
    });
    if (hq == 0 || dv == 0) return;  // nothing to merge
    const dim3 cgrid(static_cast<uint32_t>(s.n), hq);
    b.launch([=](cudaStream_t st) {
        attention_combine_kernel<<<cgrid, kCombineThreads, 0, st>>>(seq, pos, pre, out, part_ml, part_acc, hq, n_seq, ctx,
                                                                    dv, chunk, splits);
        return cudaGetLastError();
    });
}

template <typename KT>
void launch_for(KernelBuilder& b, const Shape& s, const Split& sp, uint32_t lanes, uint64_t acc) {
    if (acc <= 1) launch_with<KT, 1>(b, s, sp, lanes);
    else if (acc <= 2) launch_with<KT, 2>(b, s, sp, lanes);
    else launch_with<KT, 4>(b, s, sp, lanes);
}

void build(KernelBuilder& b) {
    const Shape s = shape_of(b.node());
    if (s.n == 0) return;
    const Split sp = split_for(b.props(), s);
    const uint32_t lanes = lanes_for(s.dv);
    const uint64_t acc = std::max<uint64_t>(1, (s.dv + lanes - 1) / lanes);  // <= kMaxAcc (supports)
    const int32_t cache = b.node().inputs[1].dtype;
    if (cache == MNEMO_DTYPE_F16) launch_for<__half>(b, s, sp, lanes, acc);
    else if (cache == MNEMO_DTYPE_Q8_0) launch_for<Q8Cache>(b, s, sp, lanes, acc);
    else launch_for<float>(b, s, sp, lanes, acc);
}

}  // namespace

void register_attention_kernels() {
    // A q8_0 cache (and prefix) is read through kv_at (supports() checks its rows are whole blocks).
    register_kernel(MNEMO_OP_ATTENTION, Kernel{supports, scratch_bytes, build, /*reads_quantized=*/true});
}

}  // namespace mnemo_cuda
