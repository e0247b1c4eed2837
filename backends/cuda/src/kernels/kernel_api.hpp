// What an op's CUDA kernel sees: one node, the device's properties, and a builder that turns the
// node into launches on the context's stream. The launches are recorded at prepare time and
// replayed by every run (captured once into a CUDA graph), so a launch closure must not depend
// on anything but the node (buffers, offsets and shapes never change after prepare).
// Kernels know ops, never models.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../context.hpp"
#include "backend_common.hpp"
#include "mnemo/abi/mnemo_abi.h"

namespace mnemo_cuda {

// A kernel's refusal to build a node; the graph turns it into an error naming the node.
struct KernelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One step of a node: enqueue work on `stream` and return the launch error (cudaGetLastError()
// after a <<<>>> launch, or the status of a library call).
using Launch = std::function<cudaError_t(cudaStream_t stream)>;

using mnemo_backend::dtype_block;
using mnemo_backend::dtype_bytes;
using mnemo_backend::nbytes;
using mnemo_backend::numel;
inline int64_t last_dim(const mnemo_tensor& t) { return t.ndim > 0 ? t.shape[t.ndim - 1] : 1; }
// A product, not numel / last: a tensor whose last dim is 0 (a MATMUL with K = 0) still has its
// rows, and a division would trap on it.
inline uint64_t rows(const mnemo_tensor& t) {
    if (t.ndim <= 0) return 0;
    uint64_t r = 1;
    for (int32_t i = 0; i + 1 < t.ndim; ++i) r *= static_cast<uint64_t>(t.shape[i]);
    return r;
}
inline uint32_t blocks_for(uint64_t n, uint64_t per_block) { return static_cast<uint32_t>((n + per_block - 1) / per_block); }
inline bool is_weight_dtype(int32_t dt) { return dt == MNEMO_DTYPE_F32 || dt == MNEMO_DTYPE_F16 || dt == MNEMO_DTYPE_BF16; }

// Blocks for one block per row up to the grid's x limit; the kernels loop over the rest.
inline uint32_t row_grid(const DeviceProps& p, uint64_t rows) {
    const uint64_t cap = p.max_grid[0] > 0 ? static_cast<uint64_t>(p.max_grid[0]) : 65535;
    return static_cast<uint32_t>(std::max<uint64_t>(1, std::min(rows, cap)));
}

// Blocks of `threads` for a grid-stride loop over n items: enough to fill every multiprocessor
// `per_sm` times over, no more.
inline uint32_t stride_grid(const DeviceProps& p, uint64_t n, uint32_t threads, uint32_t per_sm) {
    const uint64_t cap = static_cast<uint64_t>(std::max(p.multiprocessors, 1)) * per_sm;
    return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(blocks_for(n, threads), cap)));
}

// Threads for a row-wise reduction over d elements (block_sum / block_max want whole warps): a
// power of two, the smallest one >= d for short rows, 256 for ordinary rows and 1024 for very
// long ones (a vocabulary softmax has few rows, so each row needs many threads).
inline uint32_t row_threads(uint64_t d) {
    uint32_t want = d >= 8192 ? 1024 : 256;
    while (want > 32 && want / 2 >= d) want /= 2;
    return want;
}

class KernelBuilder {
public:
    KernelBuilder(const Context& ctx, const mnemo_node& node, uint32_t node_index, uint8_t* scratch)
        : ctx_(ctx), node_(node), node_index_(node_index), scratch_(scratch) {}

    const mnemo_node& node() const { return node_; }
    const mnemo_tensor& input(int i) const { return node_.inputs[i]; }
    const mnemo_tensor& output() const { return node_.output; }
    const DeviceProps& props() const { return ctx_.props(); }
    uint32_t node_index() const { return node_index_; }
    // Where kernels report bad indices (device_common.cuh, report_bad_index).
    KernelStatus* status() const { return ctx_.status_device(); }
    const Blas* blas() const { return ctx_.blas(); }
    cublasHandle_t blas_handle() const { return ctx_.blas_handle(); }

    // Device pointer of a tensor's first byte.
    static uint8_t* ptr(const mnemo_tensor& t) { return static_cast<const Buffer*>(t.buffer)->ptr + t.offset; }
    template <class T>
    static T* as(const mnemo_tensor& t) {
        return reinterpret_cast<T*>(ptr(t));
    }
    // Scratch of this node (sized by the kernel's scratch_bytes), byte `offset`.
    uint8_t* scratch(uint64_t offset) const {
        if (!scratch_) throw KernelError("the kernel asked for scratch memory but declared none");
        return scratch_ + offset;
    }

    void launch(Launch l) { out_.push_back(std::move(l)); }
    std::vector<Launch>& launches() { return out_; }

private:
    const Context& ctx_;
    const mnemo_node& node_;
    uint32_t node_index_;
    uint8_t* scratch_;
    std::vector<Launch> out_;
};

using Kernel = mnemo_backend::KernelT<DeviceProps, KernelBuilder>;

// The kernel of each op, or nullptr when the op has none here.
const Kernel* kernel_for(int32_t op);
// Each op family registers its ops in register_<family>_kernels() (kernels/<family>.cu, called
// by backends/common/kernel_table.cpp).
void register_kernel(int32_t op, Kernel k);

}  // namespace mnemo_cuda
