// ADD, MUL, SCALE, SILU, GELU, SWIGLU, CLAMP: one invocation per element
// (shaders/elementwise/elementwise.comp).
#include <algorithm>

#include "kernel_api.hpp"

namespace mnemo_vk {
namespace {

struct ElementwisePush {
    uint64_t a, b, out;
    uint32_t n, nb;
    float s;  // SCALE's factor, CLAMP's lo
    uint32_t row_groups;
    float hi;  // CLAMP's hi
};

constexpr uint32_t kLocal = 256;

bool all_f32(const DeviceFeatures&, const mnemo_node& n) {
    for (int32_t i = 0; i < n.n_inputs; ++i)
        if (n.inputs[i].dtype != MNEMO_DTYPE_F32) return false;
    return n.output.dtype == MNEMO_DTYPE_F32;
}

void build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    ElementwisePush p{};
    p.a = KernelBuilder::address(n.inputs[0]);
    p.b = n.n_inputs > 1 ? KernelBuilder::address(n.inputs[1]) : p.a;
    p.out = KernelBuilder::address(n.output);
    const uint64_t count = numel(n.output);
    if (count > 0xFFFFFFFFull) throw KernelError("more than 2^32 elements");
    p.n = static_cast<uint32_t>(count);
    p.nb = n.n_inputs > 1 ? static_cast<uint32_t>(numel(n.inputs[1])) : 1;
    p.s = n.fparams[0];
    p.hi = n.fparams[1];
    // A 2D grid keeps the x count under the device limit for large tensors.
    const Grid g = fold_groups(b.features(), groups_for(count, kLocal));
    p.row_groups = g.x;
    const char* shader = nullptr;
    switch (n.op) {
        case MNEMO_OP_ADD: shader = "binary_add"; break;
        case MNEMO_OP_MUL: shader = "binary_mul"; break;
        case MNEMO_OP_SCALE: shader = "unary_scale"; break;
        case MNEMO_OP_SILU: shader = "unary_silu"; break;
        case MNEMO_OP_GELU: shader = n.iparams[0] == 1 ? "unary_gelu_erf" : "unary_gelu_tanh"; break;
        case MNEMO_OP_SWIGLU: shader = "binary_swiglu"; break;
        case MNEMO_OP_CLAMP: shader = "unary_clamp"; break;
        default: throw KernelError("not an elementwise op");
    }
    if (count == 0) return;
    b.dispatch(shader, p, g.x, g.y);
}

}  // namespace

void register_elementwise_kernels() {
    for (int32_t op : {MNEMO_OP_ADD, MNEMO_OP_MUL, MNEMO_OP_SCALE, MNEMO_OP_SILU, MNEMO_OP_GELU, MNEMO_OP_SWIGLU, MNEMO_OP_CLAMP})
        register_kernel(op, Kernel{all_f32, nullptr, build});
}

}  // namespace mnemo_vk
