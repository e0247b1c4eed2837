// The lookup family, the value retrieval of memory layers: EMBEDDING_BAG (fused gather-weight-sum
// over a table, with UltraMem's groups and per-core weights), MEM_INDEX (UltraMem's virtual index
// -> table row pipeline), PEER_GATE (a gathered row's dot product with the query, activated,
// scaling that entry's scores) and HIVE (MIDUS: a bag per head over a latent bank, then the
// head's projection). One launch each; accumulation is f32 with weights widened on load. Tables
// (and HIVE's bank) may also be block-quantized (q8_0, q4_0, q4_k, q5_k, q6_k): each element is
// decoded on load exactly as the reference decodes it (any_weights.cuh), so only the summation
// order differs from the reference, as with float tables.
//
// Indices are checked on the device: a bad one is reported through the status word
// (report_bad_index) and its entry skipped, never read; the host then fails the run. The shape
// rules (engine op table) were checked before a node gets here: cores divide C, proj is [H, r, Dh].
#include <climits>

#include "any_weights.cuh"
#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {
namespace {

// Lanes own columns, slices share a bag's entries (entry e goes to slice e % kSlices): each lane
// keeps kSlices independent gathered rows in flight, and the slices' partial sums are added in
// shared memory at the end. Used by EMBEDDING_BAG and HIVE.
constexpr int kLanes = 64;
constexpr int kSlices = 4;
constexpr int kThreads = kLanes * kSlices;

// Adds the partial sums of slices 1.. into slice 0's `acc` (only slice 0's result is meaningful).
// Every thread of the block must call it; it ends with the block synchronised, so `part` may be
// reused right after.
__device__ __forceinline__ float sum_slices(float acc, float (*part)[kLanes]) {
    const int lane = threadIdx.x, slice = threadIdx.y;
    if (slice > 0) part[slice - 1][lane] = acc;
    __syncthreads();
    if (slice == 0) {
#pragma unroll
        for (int s = 0; s < kSlices - 1; ++s) acc += part[s][lane];
    }
    __syncthreads();
    return acc;
}

// ------------------------------------------------------------------ EMBEDDING_BAG
//
// One block per (segment = (bag n, group g), block of kLanes columns); the segment-major block
// id lives in gridDim.x (up to 2^31-1, no y/z folding needed). Each output element
// out[n, g*C + c] is written exactly once, by slice 0 of the lane owning column c (zero for a
// group no entry falls in): no atomics, no [N, m, C] intermediate.

// Entries staged per chunk, and staged weights per chunk (entries x cores the block spans).
constexpr int kBagChunk = 256;
constexpr int kBagWeightSlots = 1024;

struct BagArgs {
    AnyDTypeWeights table;  // [R, C]
    const int32_t* idx;     // [N, m]
    const float* w;         // [N, m] or [N, m, P]
    float* out;          // [N, G*C]
    int64_t rows, cols, groups, m, cores, core_cols;
    int64_t blocks;  // column blocks per segment
    int64_t limit;   // G * R: indices must lie in 0..limit-1
    uint32_t rows32;  // min(R, UINT32_MAX), for the per-entry group split
    KernelStatus* status;
    uint32_t node;
};

__global__ void __launch_bounds__(kThreads) embedding_bag_kernel(BagArgs a) {
    __shared__ int32_t s_row[kBagChunk];     // table row of each staged entry, -1 if not in this group
    __shared__ float s_w[kBagWeightSlots];   // weight of staged entry e for core core_lo + q: [e * span + q]
    __shared__ float s_part[kSlices - 1][kLanes];

    const int64_t seg = static_cast<int64_t>(blockIdx.x) / a.blocks;
    const int64_t blk = static_cast<int64_t>(blockIdx.x) - seg * a.blocks;
    const int64_t n = seg / a.groups, g = seg - n * a.groups;
    const int64_t c0 = blk * kLanes, c1 = min(a.cols, c0 + kLanes);  // c0 < c1: blk < blocks
    // The cores whose columns this block touches (1..kLanes of them); their weights are staged.
    const int64_t core_lo = c0 / a.core_cols;
    const int span = static_cast<int>((c1 - 1) / a.core_cols - core_lo + 1);
    const int chunk = min(kBagChunk, kBagWeightSlots / span);  // >= 16 entries
    const int lane = threadIdx.x, slice = threadIdx.y, tid = slice * kLanes + lane;
    const int64_t c = c0 + lane;
    const bool in_block = c < c1;
    const int q = in_block ? static_cast<int>(c / a.core_cols - core_lo) : 0;  // 0..span-1
    // Every bag has a block with g == 0 and blk == 0: it alone reports, so a bad entry is
    // reported once per bag rather than once per block; every block skips it.
    const bool reporter = g == 0 && blk == 0;
    const int64_t first = n * a.m;

    float acc = 0.0f;
    for (int64_t j0 = 0; j0 < a.m; j0 += chunk) {
        const int count = static_cast<int>(min(static_cast<int64_t>(chunk), a.m - j0));
        for (int e = tid; e < count; e += kThreads) {
            const int64_t v = a.idx[first + j0 + e];
            int32_t row = -1;
            if (v < 0 || v >= a.limit) {
                if (reporter) report_bad_index(a.status, a.node, v, a.limit);
            } else {
                // 32-bit division: 0 <= v <= INT32_MAX, and rows32 = min(R, UINT32_MAX) gives
                // the same quotient as R (0 whenever R > v).
                const uint32_t vg = static_cast<uint32_t>(v) / a.rows32;
                if (vg == g) row = static_cast<int32_t>(static_cast<uint32_t>(v) - vg * a.rows32);
            }
            s_row[e] = row;
        }
        for (int i = tid; i < count * span; i += kThreads) {
            const int e = i / span;
            s_w[i] = a.w[(first + j0 + e) * a.cores + core_lo + (i - e * span)];
        }
        __syncthreads();
        if (in_block) {
            for (int e = slice; e < count; e += kSlices) {
                const int32_t row = s_row[e];
                if (row < 0) continue;
                acc += s_w[e * span + q] * a.table.at(static_cast<int64_t>(row) * a.cols + c);
            }
        }
        __syncthreads();  // the next chunk overwrites the staged entries
    }
    acc = sum_slices(acc, s_part);
    if (slice == 0 && in_block) a.out[seg * a.cols + c] = acc;  // out[n, g*C + c]: segments are bag-major
}

int64_t bag_groups(const mnemo_node& n) { return n.iparams[0] == 0 ? 1 : n.iparams[0]; }

int64_t bag_blocks(const mnemo_node& n) { return (n.inputs[0].shape[1] + kLanes - 1) / kLanes; }

bool embedding_bag_supports(const DeviceProps& p, const mnemo_node& n) {
    const mnemo_tensor& table = n.inputs[0];
    const mnemo_tensor& w = n.inputs[2];
    if (!any_dtype_readable(table) || n.inputs[1].dtype != MNEMO_DTYPE_I32 || w.dtype != MNEMO_DTYPE_F32 ||
        n.output.dtype != MNEMO_DTYPE_F32 || table.ndim != 2 || n.inputs[1].ndim != 2)
        return false;
    const int64_t cores = w.ndim == 3 ? w.shape[2] : 1;
    if (cores < 1 || (table.shape[1] > 0 && table.shape[1] % cores != 0) || bag_groups(n) < 1) return false;
    const uint64_t grid = static_cast<uint64_t>(n.inputs[1].shape[0]) * bag_groups(n) * bag_blocks(n);
    return grid <= static_cast<uint64_t>(p.max_grid[0] > 0 ? p.max_grid[0] : INT32_MAX);
}

void embedding_bag_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& table = n.inputs[0];
    const mnemo_tensor& w = n.inputs[2];
    BagArgs a{};
    a.table = any_dtype_weights(table);
    a.idx = KernelBuilder::as<const int32_t>(n.inputs[1]);
    a.w = KernelBuilder::as<const float>(w);
    a.out = KernelBuilder::as<float>(n.output);
    a.rows = table.shape[0];
    a.cols = table.shape[1];
    a.groups = bag_groups(n);
    a.m = n.inputs[1].shape[1];
    a.cores = w.ndim == 3 ? w.shape[2] : 1;
    a.core_cols = a.cols / a.cores;  // >= 1 when cols > 0: the cores divide C
    a.blocks = bag_blocks(n);
    a.limit = a.groups * a.rows;
    a.rows32 = static_cast<uint32_t>(std::min<int64_t>(a.rows, UINT32_MAX));
    a.status = b.status();
    a.node = b.node_index();
    const uint64_t grid = static_cast<uint64_t>(n.inputs[1].shape[0]) * a.groups * a.blocks;
    if (grid == 0) return;  // no bags or no columns: the output is empty
    const uint32_t gx = static_cast<uint32_t>(grid);
    b.launch([=](cudaStream_t st) {
        embedding_bag_kernel<<<gx, dim3(kLanes, kSlices), 0, st>>>(a);
        return cudaGetLastError();
    });
}

// ------------------------------------------------------------------ PEER_GATE
//
// One warp per entry e = (n, j): the lanes stride over the P columns of the gathered row against
// x[n], warp_sum gives every lane the dot product, and the lanes then scale the entry's scores.
// Warps never synchronise with each other, so a warp that skips its entry just returns.

constexpr int kGateWarps = 8;

struct GateArgs {
    AnyDTypeWeights table;  // [R, P]
    const int32_t* idx;     // [N, m]
    const float* x;         // [N, P]
    const float* s;      // [N, m] or [N, m, C]
    float* out;          // s's shape
    int64_t rows, width, m, per_entry, entries;
    int32_t act;  // 0 none, 1 GELU erf, 2 GELU tanh
    KernelStatus* status;
    uint32_t node;
};

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); }
__device__ __forceinline__ float gelu_tanh(float v) {
    return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

__global__ void __launch_bounds__(kGateWarps * 32) peer_gate_kernel(GateArgs a) {
    const int lane = threadIdx.x & 31;
    const int64_t e = static_cast<int64_t>(blockIdx.x) * kGateWarps + (threadIdx.x >> 5);
    if (e >= a.entries) return;  // the whole warp: e is the same for its 32 lanes
    const int64_t v = a.idx[e];
    // Any index >= 0 names row v % R (it may carry a group); a negative one, or any index into
    // an empty table, is an error: reported, and the entry skipped (its outputs not written).
    if (v < 0 || a.rows == 0) {
        if (lane == 0) report_bad_index(a.status, a.node, v, a.rows == 0 ? 0 : INT32_MAX);
        return;
    }
    const int64_t n = e / a.m;
    const int64_t row0 = (v % a.rows) * a.width;
    const float* x = a.x + n * a.width;
    float part = 0.0f;
    for (int64_t c = lane; c < a.width; c += 32) part += a.table.at(row0 + c) * x[c];
    const float d = warp_sum(part);
    const float g = a.act == 1 ? gelu_erf(d) : a.act == 2 ? gelu_tanh(d) : d;
    const int64_t at = e * a.per_entry;
    for (int64_t k = lane; k < a.per_entry; k += 32) a.out[at + k] = g * a.s[at + k];
}

bool peer_gate_supports(const DeviceProps& p, const mnemo_node& n) {
    const mnemo_tensor& sc = n.inputs[3];
    if (!any_dtype_readable(n.inputs[0]) || n.inputs[1].dtype != MNEMO_DTYPE_I32 || n.inputs[2].dtype != MNEMO_DTYPE_F32 ||
        sc.dtype != MNEMO_DTYPE_F32 || n.output.dtype != MNEMO_DTYPE_F32 || n.inputs[0].ndim != 2 ||
        n.inputs[1].ndim != 2 || (sc.ndim != 2 && sc.ndim != 3))
        return false;
    const uint64_t grid = (numel(n.inputs[1]) + kGateWarps - 1) / kGateWarps;
    return grid <= static_cast<uint64_t>(p.max_grid[0] > 0 ? p.max_grid[0] : INT32_MAX);
}

void peer_gate_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& sc = n.inputs[3];
    GateArgs a{};
    a.table = any_dtype_weights(n.inputs[0]);
    a.idx = KernelBuilder::as<const int32_t>(n.inputs[1]);
    a.x = KernelBuilder::as<const float>(n.inputs[2]);
    a.s = KernelBuilder::as<const float>(sc);
    a.out = KernelBuilder::as<float>(n.output);
    a.rows = n.inputs[0].shape[0];
    a.width = n.inputs[0].shape[1];
    a.m = n.inputs[1].shape[1];
    a.per_entry = sc.ndim == 3 ? sc.shape[2] : 1;
    a.entries = static_cast<int64_t>(numel(n.inputs[1]));
    a.act = static_cast<int32_t>(n.iparams[0]);
    a.status = b.status();
    a.node = b.node_index();
    // Launched even when C = 0 (nothing to write): bad indices must still be reported.
    if (a.entries == 0) return;  // no entries (and m >= 1 below)
    const uint32_t grid = blocks_for(static_cast<uint64_t>(a.entries), kGateWarps);
    b.launch([=](cudaStream_t st) {
        peer_gate_kernel<<<grid, kGateWarps * 32, 0, st>>>(a);
        return cudaGetLastError();
    });
}

// ------------------------------------------------------------------ HIVE
//
// One block per bag (n, h) (a block loops over bags when the grid is capped), in two phases that
// are both weighted sums of rows, with lanes over columns and slices over rows:
//  1. latent = sum_j w[j] * bank[idx[j], :] (r floats), the entries staged in shared memory in
//     chunks; lane c's column sum goes into latent[c] (only slice 0 of that lane writes it);
//  2. out = latent proj[h]: the rows k of proj[h] weighted by latent[k].
// The latent vector lives in dynamic shared memory when r floats fit the default per-block size,
// else in scratch (one r-float slice per block of a capped grid). __syncthreads orders global
// and shared memory alike among a block's threads, so both places behave the same.

struct HiveArgs {
    AnyDTypeWeights bank;  // [R, r]
    WeightPtr proj;        // [H, r, Dh] (f32/f16/bf16: the op rule takes no quantized projection)
    const int32_t* idx;  // [N, H, m]
    const float* w;      // [N, H, m]
    float* out;          // [N, H, Dh]
    float* latent;       // scratch [grid, r], or null: dynamic shared memory
    int64_t rows, rank, dh, heads, m, bags;
    KernelStatus* status;
    uint32_t node;
};

// Shared memory a HIVE block uses besides the latent vector, plus headroom.
constexpr uint64_t kHiveStaticShared = 4096;

__global__ void __launch_bounds__(kThreads) hive_kernel(HiveArgs a) {
    extern __shared__ float s_dyn[];
    __shared__ int32_t s_row[kThreads];  // bank row of each staged entry, -1 for a bad index
    __shared__ float s_w[kThreads];
    __shared__ float s_part[kSlices - 1][kLanes];

    float* latent = a.latent ? a.latent + static_cast<int64_t>(blockIdx.x) * a.rank : s_dyn;
    const int lane = threadIdx.x, slice = threadIdx.y, tid = slice * kLanes + lane;

    // The loop bound is the same for every thread of the block, so no barrier is skipped by part.
    for (int64_t bag = blockIdx.x; bag < a.bags; bag += gridDim.x) {
        const int64_t h = bag % a.heads;
        for (int64_t k = tid; k < a.rank; k += kThreads) latent[k] = 0.0f;
        __syncthreads();

        // Phase 1: latent = sum_j w[j] * bank[idx[j], :].
        const int64_t first = bag * a.m;
        for (int64_t j0 = 0; j0 < a.m; j0 += kThreads) {
            const int count = static_cast<int>(min(static_cast<int64_t>(kThreads), a.m - j0));
            if (tid < count) {
                const int64_t v = a.idx[first + j0 + tid];
                const bool bad = v < 0 || v >= a.rows;
                if (bad) report_bad_index(a.status, a.node, v, a.rows);  // reported, and the entry skipped
                s_row[tid] = bad ? -1 : static_cast<int32_t>(v);
                s_w[tid] = a.w[first + j0 + tid];
            }
            __syncthreads();
            for (int64_t c0 = 0; c0 < a.rank; c0 += kLanes) {
                const int64_t c = c0 + lane;
                float acc = 0.0f;
                if (c < a.rank) {
                    for (int e = slice; e < count; e += kSlices) {
                        const int32_t row = s_row[e];
                        if (row < 0) continue;
                        acc += s_w[e] * a.bank.at(static_cast<int64_t>(row) * a.rank + c);
                    }
                }
                acc = sum_slices(acc, s_part);
                if (slice == 0 && c < a.rank) latent[c] += acc;  // column c belongs to this thread alone
            }
            __syncthreads();  // latent complete for this chunk; the next chunk overwrites the staging
        }

        // Phase 2: out[bag, d] = sum_k latent[k] * proj[h, k, d].
        const uint64_t proj0 = static_cast<uint64_t>(h) * a.rank * a.dh;
        for (int64_t d0 = 0; d0 < a.dh; d0 += kLanes) {
            const int64_t d = d0 + lane;
            float acc = 0.0f;
            if (d < a.dh) {
                for (int64_t k = slice; k < a.rank; k += kSlices)
                    acc += latent[k] * load_weight(a.proj, proj0 + static_cast<uint64_t>(k) * a.dh + d);
            }
            acc = sum_slices(acc, s_part);
            if (slice == 0 && d < a.dh) a.out[bag * a.dh + d] = acc;
        }
        __syncthreads();  // every read of latent is done before the next bag clears it
    }
}

// Where the latent vector lives and how many blocks run: shared memory and one block per bag, or
// scratch and a grid capped to a few blocks per SM (each block loops over bags).
struct HivePlan {
    bool shared;
    uint64_t grid;
};

HivePlan hive_plan(const DeviceProps& p, const mnemo_node& n) {
    const uint64_t rank = static_cast<uint64_t>(n.inputs[0].shape[1]);
    const uint64_t bags = static_cast<uint64_t>(n.inputs[1].shape[0]) * static_cast<uint64_t>(n.inputs[1].shape[1]);
    const uint64_t max_x = static_cast<uint64_t>(p.max_grid[0] > 0 ? p.max_grid[0] : INT32_MAX);
    const uint64_t smem = std::min<uint64_t>(p.shared_per_block, 48 * 1024);
    if (rank == 0 || (smem > kHiveStaticShared && rank * sizeof(float) <= smem - kHiveStaticShared))
        return {true, std::min(bags, max_x)};
    const uint64_t cap = static_cast<uint64_t>(std::max(p.multiprocessors, 1)) * 8;
    return {false, std::min(bags, cap)};
}

bool hive_supports(const DeviceProps&, const mnemo_node& n) {
    return any_dtype_readable(n.inputs[0]) && n.inputs[1].dtype == MNEMO_DTYPE_I32 && n.inputs[2].dtype == MNEMO_DTYPE_F32 &&
           is_weight_dtype(n.inputs[3].dtype) && n.output.dtype == MNEMO_DTYPE_F32 && n.inputs[0].ndim == 2 &&
           n.inputs[1].ndim == 3 && n.inputs[3].ndim == 3;
}

uint64_t hive_scratch_bytes(const DeviceProps& p, const mnemo_node& n) {
    const HivePlan plan = hive_plan(p, n);
    return plan.shared ? 0 : plan.grid * static_cast<uint64_t>(n.inputs[0].shape[1]) * sizeof(float);
}

void hive_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& idx = n.inputs[1];
    HiveArgs a{};
    a.bank = any_dtype_weights(n.inputs[0]);
    a.proj = weight_of(n.inputs[3]);
    a.idx = KernelBuilder::as<const int32_t>(idx);
    a.w = KernelBuilder::as<const float>(n.inputs[2]);
    a.out = KernelBuilder::as<float>(n.output);
    a.rows = n.inputs[0].shape[0];
    a.rank = n.inputs[0].shape[1];
    a.dh = n.inputs[3].shape[2];
    a.heads = idx.shape[1];
    a.m = idx.shape[2];
    a.bags = idx.shape[0] * idx.shape[1];
    a.status = b.status();
    a.node = b.node_index();
    // Launched even when Dh = 0 (nothing to write): bad indices must still be reported.
    if (a.bags == 0) return;  // no bags (and heads >= 1 below)
    const HivePlan plan = hive_plan(b.props(), n);
    a.latent = plan.shared ? nullptr : reinterpret_cast<float*>(b.scratch(0));
    const size_t smem = plan.shared ? static_cast<size_t>(a.rank) * sizeof(float) : 0;
    const uint32_t grid = static_cast<uint32_t>(plan.grid);
    b.launch([=](cudaStream_t st) {
        hive_kernel<<<grid, dim3(kLanes, kSlices), smem, st>>>(a);
        return cudaGetLastError();
    });
}

constexpr uint32_t kMemIndexThreads = 256;

// ------------------------------------------------------------------ MEM_INDEX

// s = shuffle[v] (with a shuffle) or v; g = s / value_num; row = (s % value_num + offset) % A;
// out = with_group ? g * A + row : row. Errors as the Vulkan shader reports them: a v outside the
// shuffle is reported against the shuffle's size V; a negative s or g >= G against
// min(value_num * G, 2^31 - 1), the range of valid s. Either way the element is skipped.
// The host clamped value_num and G to 2^31 (s is an i32, so neither s / value_num, s % value_num
// nor the test g >= G changes) and the engine checked that g * A + row fits an i32.
// (No __restrict__: the engine may run this op in place, out == v; element i is read before it
// is written, by the same thread.)
__global__ void mem_index_kernel(const int32_t* v, const int32_t* shuffle, int32_t* out,
                                 uint64_t count, int64_t shuffle_size, int64_t value_num, int64_t offset, int64_t rows,
                                 int64_t groups, int64_t s_limit, bool with_group, KernelStatus* status, uint32_t node) {
    for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        int64_t s = v[i];
        if (shuffle) {
            if (s < 0 || s >= shuffle_size) {
                report_bad_index(status, node, s, shuffle_size);
                continue;
            }
            s = shuffle[s];
        }
        if (s < 0 || s / value_num >= groups) {
            report_bad_index(status, node, s, s_limit);
            continue;
        }
        const int64_t g = s / value_num, row = (s % value_num + offset) % rows;
        out[i] = static_cast<int32_t>(with_group ? g * rows + row : row);
    }
}

bool mem_index_supports(const DeviceProps&, const mnemo_node& n) {
    if (n.n_inputs < 1 || n.n_inputs > 2 || n.output.dtype != MNEMO_DTYPE_I32) return false;
    for (int32_t i = 0; i < n.n_inputs; ++i)
        if (n.inputs[i].dtype != MNEMO_DTYPE_I32) return false;
    // The engine's shape rule; checked again because the kernel divides by value_num and A.
    return n.iparams[0] >= 1 && n.iparams[2] >= 1 && n.iparams[3] >= 1;
}

void mem_index_build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const uint64_t count = numel(nd.inputs[0]);
    if (count == 0) return;
    const bool shuffled = nd.n_inputs > 1;
    constexpr int64_t kClamp = int64_t{1} << 31;
    const int64_t value_num = std::min<int64_t>(nd.iparams[0], kClamp), groups = std::min<int64_t>(nd.iparams[3], kClamp);
    const int64_t s_limit = std::min<int64_t>(value_num * groups, kClamp - 1);
    const int64_t offset = nd.iparams[1], rows = nd.iparams[2];
    const bool with_group = nd.iparams[4] != 0;
    const int64_t shuffle_size = shuffled ? static_cast<int64_t>(numel(nd.inputs[1])) : 0;
    const int32_t* v = KernelBuilder::as<const int32_t>(nd.inputs[0]);
    const int32_t* shuffle = shuffled ? KernelBuilder::as<const int32_t>(nd.inputs[1]) : nullptr;
    int32_t* out = KernelBuilder::as<int32_t>(b.output());
    KernelStatus* status = b.status();
    const uint32_t node = b.node_index(), grid = stride_grid(b.props(), count, kMemIndexThreads, 32);
    b.launch([=](cudaStream_t st) {
        mem_index_kernel<<<grid, kMemIndexThreads, 0, st>>>(v, shuffle, out, count, shuffle_size, value_num, offset, rows, groups,
                                                        s_limit, with_group, status, node);
        return cudaGetLastError();
    });
}

}  // namespace

void register_lookup_kernels() {
    register_kernel(MNEMO_OP_MEM_INDEX, Kernel{mem_index_supports, nullptr, mem_index_build});
    // Block-quantized tables and banks (the *_supports functions name which dtypes).
    register_kernel(MNEMO_OP_EMBEDDING_BAG, Kernel{embedding_bag_supports, nullptr, embedding_bag_build, /*reads_quantized=*/true});
    register_kernel(MNEMO_OP_PEER_GATE, Kernel{peer_gate_supports, nullptr, peer_gate_build, /*reads_quantized=*/true});
    register_kernel(MNEMO_OP_HIVE, Kernel{hive_supports, hive_scratch_bytes, hive_build, /*reads_quantized=*/true});
}

}  // namespace mnemo_cuda
