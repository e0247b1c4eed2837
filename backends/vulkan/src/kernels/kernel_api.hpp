// What an op's Vulkan kernel sees: one node, the device's features, and a builder that turns the
// node into compute dispatches. Kernels know ops, never models.
//
// Tensors are addressed by device pointer (VK_KHR_buffer_device_address, core in 1.2): a push-
// constant block carries the 64-bit address of each tensor (GLSL `uvec2`, see
// shaders/common.glsl) plus the sizes; there are no per-op descriptor sets, so any number of
// inputs fits and maxStorageBufferRange does not limit a tensor. Push blocks are at most 128
// bytes (the smallest maxPushConstantsSize Vulkan allows).
//
// Barriers are derived, not written by kernels: each dispatch lists the byte ranges it reads
// and writes (by default: every input of its node, and its output), and the graph inserts a
// barrier only before a dispatch that touches a range an earlier, unbarriered dispatch wrote
// (or writes one it read).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../context.hpp"
#include "backend_common.hpp"
#include "mnemo/abi/mnemo_abi.h"

namespace mnemo_vk {

// A kernel's refusal to build a node (a shape beyond device limits, say). The graph turns it into
// an error naming the node.
struct KernelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Range {
    VkBuffer buffer = VK_NULL_HANDLE;
    uint64_t begin = 0, end = 0;  // bytes
};

struct Dispatch {
    PipelineKey pipeline;
    uint32_t groups[3] = {1, 1, 1};
    uint8_t push[Context::kPushConstantBytes] = {};
    uint32_t push_bytes = 0;
    std::vector<Range> reads, writes;
};

// A weight operand as the shaders' `Weight` struct reads it (common.glsl): the address rounded
// down to 4 bytes, the dtype, and the element index of the first element within that word
// (0, or 1 for a 16-bit tensor starting on a half word).
struct WeightArg {
    uint64_t address;
    uint32_t dtype;
    uint32_t first;
};
static_assert(sizeof(WeightArg) == 16);

using mnemo_backend::dtype_bytes;
using mnemo_backend::nbytes;
using mnemo_backend::numel;
// Product of the dims before the last one (rows of a [..., D] tensor).
// A product, not numel / last: a tensor whose last dim is 0 (a MATMUL with K = 0) still has its
// rows, and a division would trap on it.
inline uint64_t rows(const mnemo_tensor& t) {
    if (t.ndim <= 0) return 0;
    uint64_t r = 1;
    for (int32_t i = 0; i + 1 < t.ndim; ++i) r *= static_cast<uint64_t>(t.shape[i]);
    return r;
}
inline bool is_weight_dtype(int32_t d) { return d == MNEMO_DTYPE_F32 || d == MNEMO_DTYPE_F16 || d == MNEMO_DTYPE_BF16; }
using mnemo_backend::dtype_block;
using mnemo_backend::dtype_is_quantized;
// The variant suffix of a block-quantized dtype (MNEMO_QUANT_TYPES in backends/vulkan/CMakeLists.txt:
// "matmul_vec_q4_k_sg", "get_rows_q8_0"); nullptr for the types the shaders do not decode.
inline const char* quant_tag(int32_t d) {
    switch (d) {
        case MNEMO_DTYPE_Q8_0: return "q8_0";
        case MNEMO_DTYPE_Q4_0: return "q4_0";
        case MNEMO_DTYPE_Q4_K: return "q4_k";
        case MNEMO_DTYPE_Q5_K: return "q5_k";
        case MNEMO_DTYPE_Q6_K: return "q6_k";
        default: return nullptr;
    }
}
// Whether a block-quantized tensor fits the shaders (shaders/quant.glsl): it starts on a 2-byte
// boundary (its blocks hold f16s; WeightArg::first then says which half word), and a row's
// bytes stay below 2^31, as the shaders index a row's words with 32-bit signed access chains.
inline bool quant_tensor_ok(const mnemo_tensor& t) {
    if (!quant_tag(t.dtype) || t.ndim < 1 || t.offset % 2 != 0) return false;
    const mnemo_backend::DTypeBlock b = dtype_block(t.dtype);
    return static_cast<uint64_t>(t.shape[t.ndim - 1]) / b.elems * b.bytes < (1ull << 31);
}
// Workgroups needed for `n` items at `per_group` items per group.
inline uint32_t groups_for(uint64_t n, uint64_t per_group) {
    const uint64_t g = (n + per_group - 1) / per_group;
    if (g > 0xFFFFFFFFull) throw KernelError("dispatch too large");
    return static_cast<uint32_t>(g);
}

// `groups` workgroups numbered linearly, folded into a 2D grid whose rows hold at most the x
// limit every device allows (65535, or less if the device says so). Shaders recover the number
// as gl_WorkGroupID.x + gl_WorkGroupID.y * x (x passed in the push block, or gl_NumWorkGroups.x).
struct Grid {
    uint32_t x = 1, y = 1;
};
inline Grid fold_groups(const DeviceFeatures& f, uint64_t groups) {
    const uint64_t max_x = std::max<uint32_t>(std::min<uint32_t>(f.max_workgroup_count[0], 65535), 1);
    Grid g;
    g.x = static_cast<uint32_t>(std::max<uint64_t>(std::min<uint64_t>(groups, max_x), 1));
    g.y = std::max<uint32_t>(groups_for(groups, g.x), 1);
    return g;
}

class KernelBuilder {
public:
    KernelBuilder(const Context& ctx, const mnemo_node& node, uint32_t node_index, Buffer* scratch)
        : ctx_(ctx), node_(node), node_index_(node_index), scratch_(scratch) {}

    const mnemo_node& node() const { return node_; }
    const mnemo_tensor& input(int i) const { return node_.inputs[i]; }
    const mnemo_tensor& output() const { return node_.output; }
    const DeviceFeatures& features() const { return ctx_.features(); }
    // Index of the node in its graph; kernels that validate indices pass it to report_bad_index.
    uint32_t node_index() const { return node_index_; }

    // Device address of a tensor's first byte (base_offset: imported host memory, see Buffer).
    static uint64_t address(const mnemo_tensor& t) {
        const auto* b = static_cast<const Buffer*>(t.buffer);
        return b->address + b->base_offset + t.offset;
    }
    static WeightArg weight(const mnemo_tensor& t) {
        const uint64_t a = address(t);
        return {a & ~uint64_t{3}, static_cast<uint32_t>(t.dtype), static_cast<uint32_t>((a & 3) / 2)};
    }
    // Scratch memory of this node (sized by the kernel's scratch_bytes): address of byte `offset`.
    uint64_t scratch(uint64_t offset) const {
        if (!scratch_) throw KernelError("the kernel asked for scratch memory but declared none");
        return scratch_->address + offset;
    }
    Range scratch_range(uint64_t offset, uint64_t bytes) const { return {scratch_->buffer, offset, offset + bytes}; }
    static Range range(const mnemo_tensor& t) {
        const auto* b = static_cast<const Buffer*>(t.buffer);
        const uint64_t begin = b->base_offset + t.offset;  // bytes of the VkBuffer, as barriers see them
        return {b->buffer, begin, begin + nbytes(t)};
    }

    // Adds a dispatch of `shader` (a variant name from shaders/*.cmake) with push constants `p`.
    // It reads every input and writes the output unless the kernel edits reads/writes.
    template <class Push>
    Dispatch& dispatch(const char* shader, const Push& p, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1,
                       std::vector<uint32_t> spec = {}) {
        static_assert(std::is_trivially_copyable_v<Push>);
        static_assert(sizeof(Push) <= Context::kPushConstantBytes, "push constants are limited to 128 bytes");
        const uint32_t* max = features().max_workgroup_count;
        if (gx > max[0] || gy > max[1] || gz > max[2])
            throw KernelError(std::string(shader) + ": " + std::to_string(gx) + "x" + std::to_string(gy) + "x" +
                              std::to_string(gz) + " workgroups exceed the device limit " + std::to_string(max[0]) + "x" +
                              std::to_string(max[1]) + "x" + std::to_string(max[2]));
        Dispatch d;
        d.pipeline = {shader, std::move(spec)};
        d.groups[0] = gx;
        d.groups[1] = gy;
        d.groups[2] = gz;
        std::memcpy(d.push, &p, sizeof(Push));
        d.push_bytes = sizeof(Push);
        for (int32_t i = 0; i < node_.n_inputs; ++i) d.reads.push_back(range(node_.inputs[i]));
        d.writes.push_back(range(node_.output));
        out_.push_back(std::move(d));
        return out_.back();
    }

    std::vector<Dispatch>& dispatches() { return out_; }

private:
    const Context& ctx_;
    const mnemo_node& node_;
    uint32_t node_index_;
    Buffer* scratch_;
    std::vector<Dispatch> out_;
};

using Kernel = mnemo_backend::KernelT<DeviceFeatures, KernelBuilder>;

// The kernel of each op, or nullptr when the op has none on Vulkan.
const Kernel* kernel_for(int32_t op);

// Each op family registers its ops in register_<family>_kernels() (kernels/<family>.cpp, called
// by backends/common/kernel_table.cpp).
void register_kernel(int32_t op, Kernel k);

}  // namespace mnemo_vk
