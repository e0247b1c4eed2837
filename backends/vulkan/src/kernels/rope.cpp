// ROPE: one invocation per rotated pair (shaders/rope/rope.comp).
#include "kernel_api.hpp"
#include "row_common.hpp"

namespace mnemo_vk {
namespace {

constexpr uint32_t kRopeLocal = 256;  // rope.comp local_size_x

struct RopePush {
    uint64_t x, pos, inv_freq, out;
    uint32_t total, per_row, heads, d, half, interleaved, row_groups;
    int32_t offset;  // i[2], added to every position (exactly, in the shader)
};

bool rope_supports(const DeviceFeatures&, const mnemo_node& n) {
    // The offset travels as an i32 and rope.comp's exact sum needs |offset| <= 2^30 (the engine's
    // bound too).
    const int64_t offset = n.iparams[2];
    return n.inputs[0].dtype == MNEMO_DTYPE_F32 && n.inputs[1].dtype == MNEMO_DTYPE_I32 &&
           n.inputs[2].dtype == MNEMO_DTYPE_F32 && n.output.dtype == MNEMO_DTYPE_F32 &&
           offset >= -(int64_t{1} << 30) && offset <= (int64_t{1} << 30);
}

void rope_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& x = n.inputs[0];
    const uint64_t rows = static_cast<uint64_t>(x.shape[0]) * static_cast<uint64_t>(x.shape[1]);
    const uint64_t d = static_cast<uint64_t>(x.shape[2]), half = static_cast<uint64_t>(n.iparams[1] / 2);
    RopePush p{};
    p.x = KernelBuilder::address(x);
    p.pos = KernelBuilder::address(n.inputs[1]);
    p.inv_freq = KernelBuilder::address(n.inputs[2]);
    p.out = KernelBuilder::address(n.output);
    checked_u32(rows * d, "N * H * D");  // element indices are 32-bit in the shader
    p.per_row = static_cast<uint32_t>(d - half);  // R/2 pairs + (D - R) copied dims
    p.total = checked_u32(rows * p.per_row, "N * H * (D - R/2)");
    p.heads = static_cast<uint32_t>(x.shape[1]);
    p.d = static_cast<uint32_t>(d);
    p.half = static_cast<uint32_t>(half);
    p.interleaved = n.iparams[0] == 1 ? 1 : 0;
    p.offset = static_cast<int32_t>(n.iparams[2]);
    if (p.total == 0) return;
    const Grid g = fold_groups(b.features(), groups_for(p.total, kRopeLocal));
    p.row_groups = g.x;
    b.dispatch("rope", p, g.x, g.y);
}

}  // namespace

void register_rope_kernels() { register_kernel(MNEMO_OP_ROPE, Kernel{rope_supports, nullptr, rope_build}); }

}  // namespace mnemo_vk
