// RMS_NORM, LAYER_NORM and SOFTMAX: one workgroup per row (shaders/norm.comp, softmax.comp),
// with the workgroup reductions of shaders/reduce_common.glsl in a subgroup-arithmetic variant
// (*_sg) or a shared-memory one. ROPE: one invocation per rotated pair (shaders/rope.comp).
#include <algorithm>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

constexpr uint32_t kRopeLocal = 256;  // rope.comp local_size_x

// Layout of norm.comp's push block (std430: uvec2 <-> uint64_t, struct Weight <-> WeightArg).
struct NormPush {
    uint64_t x, out;
    WeightArg w, b;
    uint32_t rows, d;
    float eps;
    uint32_t flags;  // 1: weight, 2: bias
    uint32_t row_groups;
};

struct SoftmaxPush {
    uint64_t x, out;
    uint32_t rows, d;
    float scale;
    uint32_t row_groups;
};

struct RopePush {
    uint64_t x, pos, inv_freq, out;
    uint32_t total, per_row, heads, d, half, interleaved, row_groups;
    int32_t offset;  // i[2], added to every position (exactly, in the shader)
};

// Largest power of two <= v (v >= 1).
uint32_t floor_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p <= v / 2) p *= 2;
    return p;
}

// Workgroup size for a row of d elements: enough invocations that each has a few elements,
// a power of two (the shared-memory tree halves it), at least 32 (one subgroup on most GPUs),
// and 1024 for very long rows (vocabulary softmax: few rows, so each needs more lanes).
uint32_t row_workgroup(const DeviceFeatures& f, uint64_t d) {
    const uint32_t cap = floor_pow2(std::clamp<uint32_t>(f.max_workgroup_invocations, 32, 1024));
    uint32_t want = d >= 8192 ? 1024 : 256;
    while (want > 32 && want / 2 >= d) want /= 2;  // short rows: the smallest power of two >= d
    return std::min(want, cap);
}

// Rows (workgroups) as a grid: x up to the device limit, the rest in y.
void row_grid(const KernelBuilder& b, uint64_t rows, uint32_t* gx, uint32_t* gy) {
    const Grid g = fold_groups(b.features(), rows);
    *gx = g.x;
    *gy = g.y;
}

uint32_t checked_u32(uint64_t v, const char* what) {
    if (v > 0xFFFFFFFFull) throw KernelError(std::string(what) + " exceed 2^32 elements");
    return static_cast<uint32_t>(v);
}

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

void register_norm_kernels() {
    register_kernel(MNEMO_OP_RMS_NORM, Kernel{norm_supports, nullptr, norm_build});
    register_kernel(MNEMO_OP_LAYER_NORM, Kernel{norm_supports, nullptr, norm_build});
    register_kernel(MNEMO_OP_SOFTMAX, Kernel{softmax_supports, nullptr, softmax_build});
    register_kernel(MNEMO_OP_ROPE, Kernel{rope_supports, nullptr, rope_build});
}

}  // namespace mnemo_vk
