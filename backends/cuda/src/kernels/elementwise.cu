// ADD, MUL, SCALE, SILU, GELU, SWIGLU, CLAMP: a grid-stride loop, one element per thread per step.
#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {
namespace {

enum class Unary { Scale, Silu, GeluTanh, GeluErf, Clamp };
enum class Binary { Add, Mul, Swiglu };

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

template <Unary U>
__global__ void unary_kernel(const float* __restrict__ x, float* __restrict__ y, uint64_t n, float s, float hi) {
    for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const float v = x[i];
        if constexpr (U == Unary::Scale) y[i] = s * v;
        else if constexpr (U == Unary::Silu) y[i] = silu(v);
        // CLAMP (lo = s): NaN fails both tests and stays NaN, unlike fminf / fmaxf.
        else if constexpr (U == Unary::Clamp) y[i] = v < s ? s : (v > hi ? hi : v);
        else if constexpr (U == Unary::GeluTanh) y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        else y[i] = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    }
}

// b is a trailing suffix of a's shape: element i of a meets element i % nb of b.
template <Binary B>
__global__ void binary_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ y, uint64_t n,
                              uint64_t nb) {
    for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        if constexpr (B == Binary::Add) y[i] = a[i] + b[i % nb];
        else if constexpr (B == Binary::Mul) y[i] = a[i] * b[i % nb];
        else y[i] = silu(a[i]) * b[i];
    }
}

constexpr int kThreads = 256;

// Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
uint32_t grid_for(const DeviceProps& p, uint64_t n) { return stride_grid(p, n, kThreads, 32); }

bool all_f32(const DeviceProps&, const mnemo_node& n) {
    for (int32_t i = 0; i < n.n_inputs; ++i)
        if (n.inputs[i].dtype != MNEMO_DTYPE_F32) return false;
    return n.output.dtype == MNEMO_DTYPE_F32;
}

template <Unary U>
void launch_unary(KernelBuilder& b, uint64_t n) {
    const float* x = KernelBuilder::as<const float>(b.input(0));
    float* y = KernelBuilder::as<float>(b.output());
    const float s = b.node().fparams[0], hi = b.node().fparams[1];
    const uint32_t grid = grid_for(b.props(), n);
    b.launch([=](cudaStream_t st) {
        unary_kernel<U><<<grid, kThreads, 0, st>>>(x, y, n, s, hi);
        return cudaGetLastError();
    });
}

template <Binary B>
void launch_binary(KernelBuilder& b, uint64_t n) {
    const float* a = KernelBuilder::as<const float>(b.input(0));
    const float* bb = KernelBuilder::as<const float>(b.input(1));
    float* y = KernelBuilder::as<float>(b.output());
    const uint64_t nb = std::max<uint64_t>(numel(b.input(1)), 1);
    const uint32_t grid = grid_for(b.props(), n);
    b.launch([=](cudaStream_t st) {
        binary_kernel<B><<<grid, kThreads, 0, st>>>(a, bb, y, n, nb);
        return cudaGetLastError();
    });
}

void build(KernelBuilder& b) {
    const uint64_t n = numel(b.output());
    if (n == 0) return;
    switch (b.node().op) {
        case MNEMO_OP_ADD: launch_binary<Binary::Add>(b, n); break;
        case MNEMO_OP_MUL: launch_binary<Binary::Mul>(b, n); break;
        case MNEMO_OP_SWIGLU: launch_binary<Binary::Swiglu>(b, n); break;
        case MNEMO_OP_SCALE: launch_unary<Unary::Scale>(b, n); break;
        case MNEMO_OP_SILU: launch_unary<Unary::Silu>(b, n); break;
        case MNEMO_OP_CLAMP: launch_unary<Unary::Clamp>(b, n); break;
        case MNEMO_OP_GELU:
            if (b.node().iparams[0] == 1) launch_unary<Unary::GeluErf>(b, n);
            else launch_unary<Unary::GeluTanh>(b, n);
            break;
        default: throw KernelError("not an elementwise op");
    }
}

}  // namespace

void register_elementwise_kernels() {
    for (int32_t op : {MNEMO_OP_ADD, MNEMO_OP_MUL, MNEMO_OP_SCALE, MNEMO_OP_SILU, MNEMO_OP_GELU, MNEMO_OP_SWIGLU, MNEMO_OP_CLAMP})
        register_kernel(op, Kernel{all_f32, nullptr, build});
}

}  // namespace mnemo_cuda
