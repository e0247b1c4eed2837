// SOFTMAX: one workgroup per row (shaders/softmax/softmax.comp), with the workgroup reductions of
// shaders/reduce_common.glsl in a subgroup-arithmetic variant (softmax_sg) or a shared-memory one.
#include "kernel_api.hpp"
#include "row_common.hpp"

namespace mnemo_vk {
namespace {

struct SoftmaxPush {
    uint64_t x, out;
    uint32_t rows, d;
    float scale;
    uint32_t row_groups;
};

bool softmax_supports(const DeviceFeatures&, const mnemo_node& n) {
    return n.inputs[0].dtype == MNEMO_DTYPE_F32 && n.output.dtype == MNEMO_DTYPE_F32;
}

void softmax_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& x = n.inputs[0];
    const uint32_t count = checked_u32(numel(x), "rows * D");
    if (count == 0) return;
    SoftmaxPush p{};
    p.x = KernelBuilder::address(x);
    p.out = KernelBuilder::address(n.output);
    p.d = static_cast<uint32_t>(x.shape[x.ndim - 1]);
    p.rows = count / p.d;
    p.scale = n.fparams[0] == 0.0f ? 1.0f : n.fparams[0];
    uint32_t gx, gy;
    row_grid(b, p.rows, &gx, &gy);
    p.row_groups = gx;
    b.dispatch(b.features().subgroup_arithmetic ? "softmax_sg" : "softmax", p, gx, gy, 1,
               {row_workgroup(b.features(), p.d)});
}

}  // namespace

void register_softmax_kernels() { register_kernel(MNEMO_OP_SOFTMAX, Kernel{softmax_supports, nullptr, softmax_build}); }

}  // namespace mnemo_vk
