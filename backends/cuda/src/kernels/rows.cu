// The rows family: GET_ROWS (embedding lookup, widened or dequantized to f32) and KV_STORE (new
// keys or values into the cache, in place; converted to f16 or quantized to q8_0 on store). Both are bandwidth-bound and simple: a block per row
// where rows are wide, a flat grid-stride loop where elements are independent.
//
// Indices are data the graph never sees: each kernel checks them, reports a bad one through
// report_bad_index (the first report wins; the host fails the run naming the node) and skips the
// entry, so a bad index never reads or writes out of bounds.
#include "device_common.cuh"
#include "kernel_api.hpp"
#include "q8_0_encode.cuh"
#include "quant_weights.cuh"

namespace mnemo_cuda {
namespace {

// Threads for rows of `cols` elements: a power of two from 32 to 256.
uint32_t threads_for(uint64_t cols) {
    uint32_t t = 32;
    while (t < 256 && t < cols) t *= 2;
    return t;
}


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

// The same with a block-quantized table (rows of whole blocks): each weight decoded on its own, as
// the reference decodes it (bit for bit: quant_blocks.cuh), so the writes stay coalesced.
template <class Q>
__global__ void get_rows_quant_kernel(QuantWeights<Q> table, const int32_t* __restrict__ idx, float* __restrict__ out,
                                      uint64_t n, int64_t rows, uint64_t cols, KernelStatus* status, uint32_t node) {
    for (uint64_t i = blockIdx.x; i < n; i += gridDim.x) {
        const int64_t r = idx[i];
        if (r < 0 || r >= rows) {
            if (threadIdx.x == 0) report_bad_index(status, node, r, rows);
            continue;
        }
        const QuantWeights<Q> row = table.at_offset(static_cast<int64_t>(static_cast<uint64_t>(r) * cols));
        const uint64_t dst = i * cols;
        for (uint64_t c = threadIdx.x; c < cols; c += blockDim.x) out[dst + c] = row.at(static_cast<int64_t>(c));
    }
}

bool get_rows_supports(const DeviceProps&, const mnemo_node& n) {
    if (n.n_inputs != 2 || n.inputs[0].ndim != 2 || n.inputs[1].dtype != MNEMO_DTYPE_I32 || n.output.dtype != MNEMO_DTYPE_F32)
        return false;
    const int32_t dt = n.inputs[0].dtype;
    if (is_weight_dtype(dt)) return true;
    // A quantized row starts on a block (the op rule requires whole blocks per row); blocks are read
    // a byte at a time, so the table's offset needs no alignment.
    return is_quant_weight_dtype(dt) && static_cast<uint64_t>(n.inputs[0].shape[1]) % dtype_block(dt).elems == 0;
}

void get_rows_build(KernelBuilder& b) {
    const mnemo_node& nd = b.node();
    const mnemo_tensor& table = nd.inputs[0];
    const uint64_t n = numel(nd.inputs[1]), cols = static_cast<uint64_t>(table.shape[1]);
    // Launched even when C = 0 (an empty output): the indices are still checked, as on the CPU.
    if (n == 0) return;
    const int32_t* idx = KernelBuilder::as<const int32_t>(nd.inputs[1]);
    float* out = KernelBuilder::as<float>(b.output());
    const int64_t rows = table.shape[0];
    KernelStatus* status = b.status();
    const uint32_t node = b.node_index(), grid = row_grid(b.props(), n), threads = threads_for(cols);
    const bool quant = visit_quant_block(table.dtype, [&](auto q) {
        using Q = decltype(q);
        const QuantWeights<Q> t{KernelBuilder::ptr(table)};
        b.launch([=](cudaStream_t st) {
            get_rows_quant_kernel<Q><<<grid, threads, 0, st>>>(t, idx, out, n, rows, cols, status, node);
            return cudaGetLastError();
        });
    });
    if (quant) return;
    const WeightPtr t = weight_of(table);
    b.launch([=](cudaStream_t st) {
        get_rows_kernel<<<grid, threads, 0, st>>>(t, idx, out, n, rows, cols, status, node);
        return cudaGetLastError();
    });
}

// ------------------------------------------------------------------ KV_STORE

// cache[seq[t], h, pos[t], :] = src[t, h, :]: block t writes token t's H rows (threads over D).
// A bad sequence id is reported before a bad position (as the reference checks them) and the
// token is skipped.
__device__ __forceinline__ void store_elem(float* c, uint64_t i, float x) { c[i] = x; }
__device__ __forceinline__ void store_elem(__half* c, uint64_t i, float x) { c[i] = __float2half_rn(x); }  // as f32_to_f16

// Whether token t's sequence s and position p name a cache row; a bad one is reported (once per
// token, by thread 0) and the token's rows are skipped, as on the CPU.
__device__ __forceinline__ bool slot_in_range(int64_t s, int64_t p, int64_t n_seq, int64_t ctx, KernelStatus* status, uint32_t node) {
    if (s < 0 || s >= n_seq) {
        if (threadIdx.x == 0) report_bad_index(status, node, s, n_seq);
        return false;
    }
    if (p < 0 || p >= ctx) {
        if (threadIdx.x == 0) report_bad_index(status, node, p, ctx);
        return false;
    }
    return true;
}

// CT: float, or __half for an f16 cache (rounded to nearest even on store).
template <typename CT>
__global__ void kv_store_kernel(CT* cache, const float* __restrict__ src, const int32_t* __restrict__ seq,
                                const int32_t* __restrict__ pos, uint64_t tokens, int64_t n_seq, uint64_t heads,
                                int64_t ctx, uint64_t d, KernelStatus* status, uint32_t node) {
    for (uint64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
        const int64_t s = seq[t], p = pos[t];
        if (!slot_in_range(s, p, n_seq, ctx, status, node)) continue;
        for (uint64_t h = 0; h < heads; ++h) {
            const uint64_t dst = ((static_cast<uint64_t>(s) * heads + h) * static_cast<uint64_t>(ctx) + static_cast<uint64_t>(p)) * d;
            const uint64_t from = (t * heads + h) * d;
            for (uint64_t j = threadIdx.x; j < d; j += blockDim.x) store_elem(cache, dst + j, src[from + j]);
        }
    }
}

// A q8_0 cache (rows of D / 32 blocks of 34 bytes): thread i of block t quantizes 32-value block i
// of token t's H rows (h = i / (D/32)) with the reference's rounding (q8_0_encode.cuh), so the
// cache holds the bytes the CPU writes. Checks and skips as kv_store_kernel.
__global__ void kv_store_q8_0_kernel(uint8_t* cache, const float* __restrict__ src, const int32_t* __restrict__ seq,
                                     const int32_t* __restrict__ pos, uint64_t tokens, int64_t n_seq, uint64_t heads,
                                     int64_t ctx, uint64_t d, KernelStatus* status, uint32_t node) {
    const uint64_t per_row = d / 32, per_token = heads * per_row;
    for (uint64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
        const int64_t s = seq[t], p = pos[t];
        if (!slot_in_range(s, p, n_seq, ctx, status, node)) continue;
        for (uint64_t i = threadIdx.x; i < per_token; i += blockDim.x) {
            const uint64_t h = i / per_row, blk = i - h * per_row;
            const uint64_t row = (static_cast<uint64_t>(s) * heads + h) * static_cast<uint64_t>(ctx) + static_cast<uint64_t>(p);
            quantize_q8_0_block(src + (t * heads + h) * d + blk * 32, cache + (row * per_row + blk) * 34);
        }
    }
}

bool kv_store_supports(const DeviceProps&, const mnemo_node& n) {
    // An f32, f16 or q8_0 cache (q8_0: rows of whole 32-value blocks, as the op rule requires).
    const int32_t cdt = n.inputs[0].dtype;
    if (n.n_inputs != 4 || (cdt != MNEMO_DTYPE_F32 && cdt != MNEMO_DTYPE_F16 && cdt != MNEMO_DTYPE_Q8_0) ||
        n.inputs[1].dtype != MNEMO_DTYPE_F32 || n.inputs[2].dtype != MNEMO_DTYPE_I32 || n.inputs[3].dtype != MNEMO_DTYPE_I32 ||
        n.output.dtype != cdt || n.inputs[0].ndim != 4 || n.inputs[1].ndim != 3)
        return false;
    if (cdt == MNEMO_DTYPE_Q8_0 && n.inputs[0].shape[3] % 32 != 0) return false;
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
    void* out = KernelBuilder::as<void>(b.output());
    const void* cache_in = KernelBuilder::as<const void>(cache_t);
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
    const uint32_t node = b.node_index(), grid = row_grid(b.props(), tokens);
    if (cache_t.dtype == MNEMO_DTYPE_Q8_0) {
        const uint32_t threads = threads_for(heads * (d / 32));
        b.launch([=](cudaStream_t st) {
            kv_store_q8_0_kernel<<<grid, threads, 0, st>>>(static_cast<uint8_t*>(out), src, seq, pos, tokens, n_seq, heads, ctx,
                                                           d, status, node);
            return cudaGetLastError();
        });
        return;
    }
    const uint32_t threads = threads_for(d);
    const bool f16 = cache_t.dtype == MNEMO_DTYPE_F16;
    b.launch([=](cudaStream_t st) {
        if (f16)
            kv_store_kernel<<<grid, threads, 0, st>>>(static_cast<__half*>(out), src, seq, pos, tokens, n_seq, heads, ctx, d, status, node);
        else
            kv_store_kernel<<<grid, threads, 0, st>>>(static_cast<float*>(out), src, seq, pos, tokens, n_seq, heads, ctx, d, status, node);
        return cudaGetLastError();
    });
}

}  // namespace

void register_rows_kernels() {
    Kernel get_rows{get_rows_supports, nullptr, get_rows_build};
    get_rows.reads_quantized = true;  // q8_0, q4_0, q4_k, q5_k, q6_k tables (get_rows_supports names which)
    register_kernel(MNEMO_OP_GET_ROWS, get_rows);
    Kernel kv_store{kv_store_supports, nullptr, kv_store_build};
    kv_store.reads_quantized = true;  // a q8_0 cache (kv_store_supports)
    register_kernel(MNEMO_OP_KV_STORE, kv_store);
}

}  // namespace mnemo_cuda
