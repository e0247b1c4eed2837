// TAKE_ALONG (pick the scores of the chosen keys) and MEM_INDEX (UltraMem's virtual index -> table
// row pipeline): shaders/take_along.comp and shaders/mem_index.comp, one invocation per output
// element. Both read indices that are data: the shaders check them, report the first bad one
// through the status word and skip that element, and the graph fails the run with the value.
#include <algorithm>
#include <cstdint>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

constexpr uint32_t kLocal = 256;
// Element indices inside the shaders stay below 2^31: an access chain index is signed.
constexpr uint64_t kMaxIndex = 0x7FFFFFFFull;

// 256-wide groups covering `count` invocations; the shader folds (x, y) back with row_groups.
Grid grid_for(const KernelBuilder& b, uint64_t count) { return fold_groups(b.features(), groups_for(count, kLocal)); }

// ------------------------------------------------------------------ TAKE_ALONG

struct TakeAlongPush {
    uint64_t x, idx, out;
    uint32_t d, k, total, node, row_groups;
};

bool take_along_supported(const DeviceFeatures&, const mnemo_node& n) {
    return n.inputs[0].dtype == MNEMO_DTYPE_F32 && n.inputs[1].dtype == MNEMO_DTYPE_I32 &&
           n.output.dtype == MNEMO_DTYPE_F32 && numel(n.inputs[0]) <= kMaxIndex && numel(n.inputs[1]) <= kMaxIndex;
}

void build_take_along(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& x = n.inputs[0];
    const mnemo_tensor& idx = n.inputs[1];
    TakeAlongPush p{};
    p.x = KernelBuilder::address(x);
    p.idx = KernelBuilder::address(idx);
    p.out = KernelBuilder::address(n.output);
    p.d = static_cast<uint32_t>(x.shape[x.ndim - 1]);
    p.k = static_cast<uint32_t>(idx.shape[idx.ndim - 1]);
    p.total = static_cast<uint32_t>(numel(idx));
    p.node = b.node_index();
    if (p.total == 0) return;
    const Grid g = grid_for(b, p.total);
    p.row_groups = g.x;
    b.dispatch("take_along", p, g.x, g.y);
}

// ------------------------------------------------------------------ MEM_INDEX

struct MemIndexPush {
    uint64_t v, shuffle, out;
    uint32_t count, shuffle_size, value_num, offset, rows, groups;
    int32_t s_limit;
    uint32_t with_group, node, row_groups;
};

bool mem_index_supported(const DeviceFeatures&, const mnemo_node& n) {
    for (int32_t i = 0; i < n.n_inputs; ++i)
        if (n.inputs[i].dtype != MNEMO_DTYPE_I32) return false;
    return n.output.dtype == MNEMO_DTYPE_I32 && numel(n.inputs[0]) <= kMaxIndex;
}

void build_mem_index(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const bool shuffled = n.n_inputs > 1;
    // The engine's shape rules hold: value_num, A, G >= 1, 0 <= offset < A <= 2^31 - 1, and
    // G * A fits an i32 with groups. Every s is an i32 (< 2^31), so clamping value_num and G to
    // 2^31 changes neither s / value_num, s % value_num nor the test g >= G.
    constexpr int64_t kClamp = int64_t{1} << 31;
    const int64_t value_num = std::min(n.iparams[0], kClamp), groups = std::min(n.iparams[3], kClamp);
    MemIndexPush p{};
    p.v = KernelBuilder::address(n.inputs[0]);
    p.shuffle = shuffled ? KernelBuilder::address(n.inputs[1]) : p.v;
    p.out = KernelBuilder::address(n.output);
    p.count = static_cast<uint32_t>(numel(n.inputs[0]));
    p.shuffle_size = shuffled ? static_cast<uint32_t>(std::min<uint64_t>(numel(n.inputs[1]), kMaxIndex)) : 0;
    p.value_num = static_cast<uint32_t>(value_num);
    p.offset = static_cast<uint32_t>(n.iparams[1]);
    p.rows = static_cast<uint32_t>(n.iparams[2]);
    p.groups = static_cast<uint32_t>(groups);
    p.s_limit = static_cast<int32_t>(std::min<int64_t>(value_num * groups, kClamp - 1));
    p.with_group = n.iparams[4] != 0 ? 1u : 0u;
    p.node = b.node_index();
    if (p.count == 0) return;
    const Grid g = grid_for(b, p.count);
    p.row_groups = g.x;
    b.dispatch(shuffled ? "mem_index_shuffle" : "mem_index", p, g.x, g.y);
}

}  // namespace

void register_memory_kernels() {
    register_kernel(MNEMO_OP_TAKE_ALONG, Kernel{take_along_supported, nullptr, build_take_along});
    register_kernel(MNEMO_OP_MEM_INDEX, Kernel{mem_index_supported, nullptr, build_mem_index});
}

}  // namespace mnemo_vk
