// Row moves and index lookups: GET_ROWS (embedding lookup, widened to f32), KV_STORE (new keys or
// values into the cache, in place), TAKE_ALONG (gather along the last axis) and MEM_INDEX
// (UltraMem's virtual index -> table row pipeline). All are bandwidth-bound and simple: a block
// per row where rows are wide, a flat grid-stride loop where elements are independent.
//
// Indices are data the graph never sees: each kernel checks them, reports a bad one through
// report_bad_index (the first report wins; the host fails the run naming the node) and skips the
// entry, so a bad index never reads or writes out of bounds.
#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {
namespace {

constexpr uint32_t kFlatThreads = 256;

// Threads for rows of `cols` elements: a power of two from 32 to 256.
uint32_t threads_for(uint64_t cols) {
    uint32_t t = 32;
    while (t < 256 && t < cols) t *= 2;
    return t;
}

// One block per row up to the x limit of the grid; the kernels loop over the rest.
uint32_t row_grid(const DeviceProps& p, uint64_t rows) {
    const uint64_t cap = p.max_grid[0] > 0 ? static_cast<uint64_t>(p.max_grid[0]) : 65535;
    return static_cast<uint32_t>(std::max<uint64_t>(1, std::min(rows, cap)));
}

// A flat grid-stride loop: enough blocks to fill the GPU several times over.
uint32_t flat_grid(const DeviceProps& p, uint64_t n) {
    const uint64_t cap = static_cast<uint64_t>(std::max(p.multiprocessors, 1)) * 32;
    return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(blocks_for(n, kFlatThreads), cap)));
}

bool is_weight_dtype(int32_t dt) { return dt == MNEMO_DTYPE_F32 || dt == MNEMO_DTYPE_F16 || dt == MNEMO_DTYPE_BF16; }

// ------------------------------------------------------------------ GET_ROWS

// out[i, :] = f32(table[idx[i], :]): block i copies row i (threads over the columns). A row index
// outside 0..R-1 is reported once (thread 0) and the whole row skipped.
__global__ void get_rows_kernel(WeightPtr table, const int32_t* __restrict__ idx, float* __restrict__ out, uint64_t n,
                                int64_t rows, uint64_t cols, KernelStatus* status, uint32_t node) {
    for (uint64_t i = blockIdx.x; i < n; i += gridDim.x) {
        const int64_t r = idx[i];
        if (r < 0 || r >= rows) {
            if (threadIdx.x == 0) report_bad_index(status, node, r, rows);
            continue;
        }
        const uint64_t src = static_cast<uint64_t>(r) * cols, dst = i * cols;
        for (uint64_t c = threadIdx.x; c < cols; c += blockDim.x) out[dst + c] = load_weight(table, src + c);
    }
}

bool get_rows_supports(const DeviceProps&, const mnemo_node& n) {
    return n.n_inputs == 2 && is_weight_dtype(n.inputs[0].dtype) && n.inputs[0].ndim == 2 &&
           n.inputs[1].dtype == MNEMO_DTYPE_I32 && n.output.dtype == MNEMO_DTYPE_F32;
}

void get_rows_build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const mnemo_tensor& table = nd.inputs[0];
    const uint64_t n = numel(nd.inputs[1]), cols = static_cast<uint64_t>(table.shape[1]);
    // Launched even when C = 0 (an empty output): the indices are still checked, as on the CPU.
    if (n == 0) return;
    const WeightPtr t = weight_of(table);
    const int32_t* idx = KernelBuilder::as<const int32_t>(nd.inputs[1]);
    float* out = KernelBuilder::as<float>(b.output());
    const int64_t rows = table.shape[0];
    KernelStatus* status = b.status();
    const uint32_t node = b.node_index(), grid = row_grid(b.props(), n), threads = threads_for(cols);
    b.launch([=](cudaStream_t st) {
        get_rows_kernel<<<grid, threads, 0, st>>>(t, idx, out, n, rows, cols, status, node);
        return cudaGetLastError();
    });
}

// ------------------------------------------------------------------ KV_STORE

// cache[seq[t], h, pos[t], :] = src[t, h, :]: block t writes token t's H rows (threads over D).
// A bad sequence id is reported before a bad position (as the reference checks them) and the
// token is skipped.
__global__ void kv_store_kernel(float* cache, const float* __restrict__ src, const int32_t* __restrict__ seq,
                                const int32_t* __restrict__ pos, uint64_t tokens, int64_t n_seq, uint64_t heads,
                                int64_t ctx, uint64_t d, KernelStatus* status, uint32_t node) {
    for (uint64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
        const int64_t s = seq[t], p = pos[t];
        if (s < 0 || s >= n_seq) {
            if (threadIdx.x == 0) report_bad_index(status, node, s, n_seq);
            continue;
        }
        if (p < 0 || p >= ctx) {
            if (threadIdx.x == 0) report_bad_index(status, node, p, ctx);
            continue;
        }
        for (uint64_t h = 0; h < heads; ++h) {
            const uint64_t dst = ((static_cast<uint64_t>(s) * heads + h) * static_cast<uint64_t>(ctx) + static_cast<uint64_t>(p)) * d;
            const uint64_t from = (t * heads + h) * d;
            for (uint64_t j = threadIdx.x; j < d; j += blockDim.x) cache[dst + j] = src[from + j];
        }
    }
}

bool kv_store_supports(const DeviceProps&, const mnemo_node& n) {
    if (n.n_inputs != 4 || n.inputs[0].dtype != MNEMO_DTYPE_F32 || n.inputs[1].dtype != MNEMO_DTYPE_F32 ||
        n.inputs[2].dtype != MNEMO_DTYPE_I32 || n.inputs[3].dtype != MNEMO_DTYPE_I32 || n.output.dtype != MNEMO_DTYPE_F32 ||
        n.inputs[0].ndim != 4 || n.inputs[1].ndim != 3)
        return false;
    // The output is the cache (the engine binds them to the same memory). Distinct output memory
    // is served too, by copying the cache into it first, but only when the two do not overlap.
    const mnemo_tensor& cache = n.inputs[0];
    if (n.output.buffer == cache.buffer && n.output.offset == cache.offset) return true;
    if (n.output.buffer != cache.buffer) return true;
    const uint64_t bytes = nbytes(cache);
    return n.output.offset >= cache.offset + bytes || cache.offset >= n.output.offset + bytes;
}

void kv_store_build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const mnemo_tensor& cache_t = nd.inputs[0];
    const mnemo_tensor& src_t = nd.inputs[1];
    float* out = KernelBuilder::as<float>(b.output());
    const float* cache_in = KernelBuilder::as<const float>(cache_t);
    const uint64_t cache_bytes = nbytes(cache_t);
    if (static_cast<const void*>(out) != static_cast<const void*>(cache_in) && cache_bytes > 0) {
        b.launch([=](cudaStream_t st) {
            return cudaMemcpyAsync(out, cache_in, cache_bytes, cudaMemcpyDeviceToDevice, st);
        });
    }
    const uint64_t tokens = static_cast<uint64_t>(src_t.shape[0]);
    if (tokens == 0) return;
    const float* src = KernelBuilder::as<const float>(src_t);
    const int32_t* seq = KernelBuilder::as<const int32_t>(nd.inputs[2]);
    const int32_t* pos = KernelBuilder::as<const int32_t>(nd.inputs[3]);
    const int64_t n_seq = cache_t.shape[0], ctx = cache_t.shape[2];
    const uint64_t heads = static_cast<uint64_t>(cache_t.shape[1]), d = static_cast<uint64_t>(cache_t.shape[3]);
    KernelStatus* status = b.status();
    // Tokens are launched even when H or D is 0: their indices are still checked, as on the CPU.
    const uint32_t node = b.node_index(), grid = row_grid(b.props(), tokens), threads = threads_for(d);
    b.launch([=](cudaStream_t st) {
        kv_store_kernel<<<grid, threads, 0, st>>>(out, src, seq, pos, tokens, n_seq, heads, ctx, d, status, node);
        return cudaGetLastError();
    });
}

// ------------------------------------------------------------------ TAKE_ALONG

// out[r, j] = x[r, idx[r, j]], one output element per step of a flat grid-stride loop. An index
// outside 0..D-1 is reported and its element skipped.
__global__ void take_along_kernel(const float* __restrict__ x, const int32_t* __restrict__ idx, float* __restrict__ out,
                                  uint64_t total, uint64_t k, int64_t d, KernelStatus* status, uint32_t node) {
    for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const int64_t j = idx[i];
        if (j < 0 || j >= d) {
            report_bad_index(status, node, j, d);
            continue;
        }
        out[i] = x[(i / k) * static_cast<uint64_t>(d) + static_cast<uint64_t>(j)];
    }
}

bool take_along_supports(const DeviceProps&, const mnemo_node& n) {
    return n.n_inputs == 2 && n.inputs[0].dtype == MNEMO_DTYPE_F32 && n.inputs[1].dtype == MNEMO_DTYPE_I32 &&
           n.output.dtype == MNEMO_DTYPE_F32;
}

void take_along_build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const uint64_t total = numel(nd.inputs[1]);
    if (total == 0) return;
    const uint64_t k = static_cast<uint64_t>(last_dim(nd.inputs[1]));  // >= 1 when total > 0
    const int64_t d = last_dim(nd.inputs[0]);
    const float* x = KernelBuilder::as<const float>(nd.inputs[0]);
    const int32_t* idx = KernelBuilder::as<const int32_t>(nd.inputs[1]);
    float* out = KernelBuilder::as<float>(b.output());
    KernelStatus* status = b.status();
    const uint32_t node = b.node_index(), grid = flat_grid(b.props(), total);
    b.launch([=](cudaStream_t st) {
        take_along_kernel<<<grid, kFlatThreads, 0, st>>>(x, idx, out, total, k, d, status, node);
        return cudaGetLastError();
    });
}

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
    const uint32_t node = b.node_index(), grid = flat_grid(b.props(), count);
    b.launch([=](cudaStream_t st) {
        mem_index_kernel<<<grid, kFlatThreads, 0, st>>>(v, shuffle, out, count, shuffle_size, value_num, offset, rows, groups,
                                                        s_limit, with_group, status, node);
        return cudaGetLastError();
    });
}

}  // namespace

void register_rows_kernels() {
    register_kernel(MNEMO_OP_GET_ROWS, Kernel{get_rows_supports, nullptr, get_rows_build});
    register_kernel(MNEMO_OP_KV_STORE, Kernel{kv_store_supports, nullptr, kv_store_build});
    register_kernel(MNEMO_OP_TAKE_ALONG, Kernel{take_along_supports, nullptr, take_along_build});
    register_kernel(MNEMO_OP_MEM_INDEX, Kernel{mem_index_supports, nullptr, mem_index_build});
}

}  // namespace mnemo_cuda
