// RMS_NORM and LAYER_NORM: one workgroup per row (shaders/norm/norm.comp), with the workgroup
// reductions of shaders/reduce_common.glsl in a subgroup-arithmetic variant (*_sg) or a
// shared-memory one.
#include "kernel_api.hpp"
#include "row_common.hpp"

namespace mnemo_vk {
namespace {

// Layout of norm.comp's push block (std430: uvec2 <-> uint64_t, struct Weight <-> WeightArg).
struct NormPush {
    uint64_t x, out;
    WeightArg w, b;
    uint32_t rows, d;
    float eps;
    uint32_t flags;  // 1: weight, 2: bias
    uint32_t row_groups;
};

bool norm_supports(const DeviceFeatures&, const mnemo_node& n) {
    if (n.inputs[0].dtype != MNEMO_DTYPE_F32 || n.output.dtype != MNEMO_DTYPE_F32) return false;
    for (int32_t i = 1; i < n.n_inputs; ++i)
        if (!is_weight_dtype(n.inputs[i].dtype)) return false;
    return true;
}

void norm_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& x = n.inputs[0];
    const uint32_t count = checked_u32(numel(x), "rows * D");
    if (count == 0) return;
    NormPush p{};
    p.x = KernelBuilder::address(x);
    p.out = KernelBuilder::address(n.output);
    if (n.n_inputs > 1) {
        p.w = KernelBuilder::weight(n.inputs[1]);
        p.flags |= 1;
    }
    if (n.n_inputs > 2) {
        p.b = KernelBuilder::weight(n.inputs[2]);
        p.flags |= 2;
    }
    p.d = static_cast<uint32_t>(x.shape[x.ndim - 1]);
    p.rows = count / p.d;
    p.eps = n.fparams[0];
    uint32_t gx, gy;
    row_grid(b, p.rows, &gx, &gy);
    p.row_groups = gx;
    const bool sg = b.features().subgroup_arithmetic;
    const char* shader = n.op == MNEMO_OP_LAYER_NORM ? (sg ? "layer_norm_sg" : "layer_norm") : (sg ? "rms_norm_sg" : "rms_norm");
    b.dispatch(shader, p, gx, gy, 1, {row_workgroup(b.features(), p.d)});
}

}  // namespace

void register_norm_kernels() {
    register_kernel(MNEMO_OP_RMS_NORM, Kernel{norm_supports, nullptr, norm_build});
    register_kernel(MNEMO_OP_LAYER_NORM, Kernel{norm_supports, nullptr, norm_build});
}

}  // namespace mnemo_vk
