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

using mnemo_backend::dtype_bytes;
using mnemo_backend::nbytes;
using mnemo_backend::numel;
inline int64_t last_dim(const mnemo_tensor& t) { return t.ndim > 0 ? t.shape[t.ndim - 1] : 1; }
inline uint64_t rows(const mnemo_tensor& t) { return t.ndim > 0 ? numel(t) / static_cast<uint64_t>(std::max<int64_t>(last_dim(t), 1)) : 0; }
inline uint32_t blocks_for(uint64_t n, uint64_t per_block) { return static_cast<uint32_t>((n + per_block - 1) / per_block); }

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

const Kernel* kernel_for(int32_t op);
void register_kernel(int32_t op, Kernel k);
void register_elementwise_kernels();
void register_norm_kernels();
void register_rows_kernels();
void register_attention_kernels();
void register_matmul_kernels();
void register_moe_kernels();
void register_topk_kernels();
void register_product_key_kernels();
void register_lookup_kernels();
void register_attn_mass_kernels();
void register_vq_kernels();

}  // namespace mnemo_cuda
