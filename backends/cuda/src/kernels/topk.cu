// ARGTOPK: exact top-k selection, one thread block per row (topk_common.cuh; the global path's
// sort is shared with PK_TOPK in topk_sort.cuh). TAKE_ALONG: the gather along the last axis that
// picks the chosen scores, a flat grid-stride loop whose bad indices are reported through
// report_bad_index (the host fails the run naming the node) and skipped.
#include <algorithm>
#include <climits>

#include "device_common.cuh"
#include "kernel_api.hpp"
#include "topk_common.cuh"
#include "topk_sort.cuh"

namespace mnemo_cuda {
namespace {

using namespace topk;

// ------------------------------------------------------------------ ARGTOPK

// Shared path: one block per row.
__global__ void __launch_bounds__(kThreads) argtopk_shared(const float* x, int32_t* out, uint64_t n_rows, uint32_t d, uint32_t k) {
    __shared__ Key64 buf[kArgCap];
    __shared__ uint32_t count;
    for (uint64_t row = blockIdx.x; row < n_rows; row += gridDim.x) {  // uniform per block
        const float* xr = x + row * d;
        block_top(buf, kArgCap, d, k, [xr](uint32_t j) { return f32_index_key(xr[j], j); }, &count);
        int32_t* o = out + row * k;
        for (uint32_t q = threadIdx.x; q < k; q += blockDim.x) o[q] = static_cast<int32_t>(key_index(buf[q]));
        __syncthreads();  // buf read before the next row's selection writes it
    }
}

// Global path: the keys of rows row0.. (count rows, padded to p with zero keys) into scratch.
__global__ void __launch_bounds__(kThreads)
    argtopk_fill(const float* x, Key64* keys, uint64_t row0, uint64_t count, uint32_t d, uint32_t p) {
    const uint64_t total = count * p;
    for (uint64_t e = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; e < total;
         e += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const uint64_t r = e / p;
        const uint32_t j = static_cast<uint32_t>(e % p);
        keys[e] = j < d ? f32_index_key(x[(row0 + r) * d + j], j) : Key64{0};
    }
}

// Global path: the first k of each sorted row as indices (all real keys: k <= d of them rank
// above the padding).
__global__ void __launch_bounds__(kThreads)
    argtopk_emit(const Key64* keys, int32_t* out, uint64_t row0, uint64_t count, uint32_t p, uint32_t k) {
    const uint64_t total = count * k;
    for (uint64_t e = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; e < total;
         e += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const uint64_t r = e / k, q = e % k;
        out[(row0 + r) * k + q] = static_cast<int32_t>(key_index(keys[r * p + q]));
    }
}

struct ArgPlan {
    bool shared = true;
    uint32_t p = 0;      // global path: d rounded up to a power of two
    uint64_t batch = 0;  // global path: rows per batch
};

ArgPlan argtopk_plan(const mnemo_node& node) {
    const mnemo_tensor& x = node.inputs[0];
    const uint64_t d = static_cast<uint64_t>(last_dim(x)), k = static_cast<uint64_t>(node.iparams[0]);
    ArgPlan pl;
    pl.shared = selection_fits(d, k, kArgCap, kThreads);
    if (!pl.shared) {
        pl.p = pow2_ceil(static_cast<uint32_t>(d));
        pl.batch = batch_rows(rows(x), uint64_t{pl.p} * sizeof(Key64));
    }
    return pl;
}

bool argtopk_supports(const DeviceProps&, const mnemo_node& node) {
    const mnemo_tensor& x = node.inputs[0];
    if (node.n_inputs != 1 || x.dtype != MNEMO_DTYPE_F32 || node.output.dtype != MNEMO_DTYPE_I32 || x.ndim < 1) return false;
    const int64_t d = last_dim(x), k = node.iparams[0];
    return d >= 1 && d <= kMaxRow && k >= 1 && k <= d;
}

uint64_t argtopk_scratch(const DeviceProps&, const mnemo_node& node) {
    const ArgPlan pl = argtopk_plan(node);
    return pl.shared ? 0 : pl.batch * pl.p * sizeof(Key64);
}

void argtopk_build(KernelBuilder& b) {
    const mnemo_tensor& x = b.input(0);
    const uint64_t n_rows = rows(x);
    if (n_rows == 0) return;
    const uint32_t d = static_cast<uint32_t>(last_dim(x)), k = static_cast<uint32_t>(b.node().iparams[0]);
    const float* xp = KernelBuilder::as<const float>(x);
    int32_t* out = KernelBuilder::as<int32_t>(b.output());
    const ArgPlan pl = argtopk_plan(b.node());
    if (pl.shared) {
        const uint32_t grid = row_grid(b.props(), n_rows);
        b.launch([=](cudaStream_t st) {
            argtopk_shared<<<grid, kThreads, 0, st>>>(xp, out, n_rows, d, k);
            return cudaGetLastError();
        });
        return;
    }
    Key64* keys = reinterpret_cast<Key64*>(b.scratch(0));
    const uint32_t p = pl.p;
    for (uint64_t row0 = 0; row0 < n_rows; row0 += pl.batch) {
        const uint64_t count = std::min(pl.batch, n_rows - row0);
        const uint32_t grid_fill = sort_grid(b.props(), count * p), grid_emit = sort_grid(b.props(), count * k);
        b.launch([=](cudaStream_t st) {
            argtopk_fill<<<grid_fill, kThreads, 0, st>>>(xp, keys, row0, count, d, p);
            return cudaGetLastError();
        });
        add_sort<Key64>(b, keys, count, p);
        b.launch([=](cudaStream_t st) {
            argtopk_emit<<<grid_emit, kThreads, 0, st>>>(keys, out, row0, count, p, k);
            return cudaGetLastError();
        });
    }
}

constexpr uint32_t kFlatThreads = 256;  // TAKE_ALONG's block

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
    const uint32_t node = b.node_index(), grid = stride_grid(b.props(), total, kFlatThreads, 32);
    b.launch([=](cudaStream_t st) {
        take_along_kernel<<<grid, kFlatThreads, 0, st>>>(x, idx, out, total, k, d, status, node);
        return cudaGetLastError();
    });
}

}  // namespace

void register_topk_kernels() {
    register_kernel(MNEMO_OP_ARGTOPK, Kernel{argtopk_supports, argtopk_scratch, argtopk_build});
    register_kernel(MNEMO_OP_TAKE_ALONG, Kernel{take_along_supports, nullptr, take_along_build});
}

}  // namespace mnemo_cuda
