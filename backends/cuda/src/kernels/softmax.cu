// SOFTMAX over the last dimension: one block per row (a grid-stride loop over rows), threads
// striding over the row, reductions in f32 through block_max / block_sum. In place is safe: the
// row's max and sum are complete before any element is written, each by the thread that read it.
#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {
namespace {

// Three strided passes over the row: max of scale*x, sum of exp(scale*x - max), then the write.
// exp is recomputed in the last pass instead of stored: one more read of x, no extra buffer.
// -inf entries give exp(-inf) = 0. A row of only -inf has max -inf, where the reference computes
// exp(-inf - -inf) = NaN: the row is written as NaN explicitly.
__global__ void __launch_bounds__(1024) softmax_kernel(const float* x, float* y, uint64_t rows, uint64_t d, float scale) {
    __shared__ float red[32];
    for (uint64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * d;
        float* yr = y + row * d;
        float m = -INFINITY;
        for (uint64_t i = threadIdx.x; i < d; i += blockDim.x) m = fmaxf(m, scale * xr[i]);
        m = block_max(m, red);
        if (m == -INFINITY) {  // the same m on every thread: a uniform branch
            for (uint64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = __int_as_float(0x7fc00000);
            continue;
        }
        float s = 0.0f;
        for (uint64_t i = threadIdx.x; i < d; i += blockDim.x) s += expf(scale * xr[i] - m);
        const float inv = 1.0f / block_sum(s, red);
        for (uint64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = expf(scale * xr[i] - m) * inv;
    }
}

bool softmax_supports(const DeviceProps&, const mnemo_node& n) {
    return n.n_inputs == 1 && n.inputs[0].dtype == MNEMO_DTYPE_F32 && n.output.dtype == MNEMO_DTYPE_F32;
}

void softmax_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& xt = n.inputs[0];
    const uint64_t d = static_cast<uint64_t>(last_dim(xt));
    if (numel(xt) == 0 || d == 0) return;
    const uint64_t rows = numel(xt) / d;
    const float* x = KernelBuilder::as<const float>(xt);
    float* y = KernelBuilder::as<float>(b.output());
    const float scale = n.fparams[0] == 0.0f ? 1.0f : n.fparams[0];
    const uint32_t grid = row_grid(b.props(), rows), threads = row_threads(d);
    b.launch([=](cudaStream_t st) {
        softmax_kernel<<<grid, threads, 0, st>>>(x, y, rows, d, scale);
        return cudaGetLastError();
    });
}

}  // namespace

void register_softmax_kernels() { register_kernel(MNEMO_OP_SOFTMAX, Kernel{softmax_supports, nullptr, softmax_build}); }

}  // namespace mnemo_cuda
