// RMS_NORM and LAYER_NORM: one block per row (a grid-stride loop over rows, so any row count
// fits), threads striding over the row (coalesced), reductions in f32 through block_sum.
//
// In place (output == input) is safe: a row's statistics are complete (the reduction ends
// synchronised) before any element of it is written, and each element is written by the thread
// that read it.
#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {
namespace {

// LAYER_NORM takes two passes for the statistics (the mean, then squared deviations from it):
// rows with a large common offset stay exact where E[x^2] - E[x]^2 would cancel.
template <bool kLayer>
__global__ void __launch_bounds__(1024) norm_kernel(const float* x, float* y, WeightPtr w, WeightPtr b, bool has_w,
                                                    bool has_b, uint64_t rows, uint64_t d, float eps) {
    __shared__ float red[32];
    const float fd = static_cast<float>(d);
    for (uint64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // block-uniform: syncs stay uniform
        const float* xr = x + row * d;
        float* yr = y + row * d;
        float mean = 0.0f;
        if constexpr (kLayer) {
            float s = 0.0f;
            for (uint64_t i = threadIdx.x; i < d; i += blockDim.x) s += xr[i];
            mean = block_sum(s, red) / fd;
        }
        float q = 0.0f;
        for (uint64_t i = threadIdx.x; i < d; i += blockDim.x) {
            const float c = xr[i] - mean;
            q += c * c;
        }
        // 1/sqrtf (both correctly rounded) rather than rsqrtf (approximate): once per row.
        const float inv = 1.0f / sqrtf(block_sum(q, red) / fd + eps);
        for (uint64_t i = threadIdx.x; i < d; i += blockDim.x) {
            float v = (xr[i] - mean) * inv;
            if (has_w) v *= load_weight(w, i);
            if (has_b) v += load_weight(b, i);
            yr[i] = v;
        }
    }
}

bool norm_supports(const DeviceProps&, const mnemo_node& n) {
    if (n.n_inputs < 1 || n.inputs[0].dtype != MNEMO_DTYPE_F32 || n.output.dtype != MNEMO_DTYPE_F32) return false;
    for (int32_t i = 1; i < n.n_inputs; ++i) {
        const int32_t dt = n.inputs[i].dtype;
        if (dt != MNEMO_DTYPE_F32 && dt != MNEMO_DTYPE_F16 && dt != MNEMO_DTYPE_BF16) return false;
    }
    return true;
}

void norm_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& xt = n.inputs[0];
    const uint64_t d = static_cast<uint64_t>(last_dim(xt));
    if (numel(xt) == 0 || d == 0) return;
    const uint64_t rows = numel(xt) / d;
    const float* x = KernelBuilder::as<const float>(xt);
    float* y = KernelBuilder::as<float>(b.output());
    const bool has_w = n.n_inputs > 1, has_b = n.n_inputs > 2;
    // An absent weight or bias is never read; its pointer only has to be something.
    const WeightPtr w = has_w ? weight_of(n.inputs[1]) : WeightPtr{x, MNEMO_DTYPE_F32};
    const WeightPtr bias = has_b ? weight_of(n.inputs[2]) : WeightPtr{x, MNEMO_DTYPE_F32};
    const float eps = n.fparams[0];
    const uint32_t grid = row_grid(b.props(), rows), threads = row_threads(d);
    const bool layer = n.op == MNEMO_OP_LAYER_NORM;
    b.launch([=](cudaStream_t st) {
        if (layer) norm_kernel<true><<<grid, threads, 0, st>>>(x, y, w, bias, has_w, has_b, rows, d, eps);
        else norm_kernel<false><<<grid, threads, 0, st>>>(x, y, w, bias, has_w, has_b, rows, d, eps);
        return cudaGetLastError();
    });
}

}  // namespace

void register_norm_kernels() {
    register_kernel(MNEMO_OP_RMS_NORM, Kernel{norm_supports, nullptr, norm_build});
    register_kernel(MNEMO_OP_LAYER_NORM, Kernel{norm_supports, nullptr, norm_build});
}

}  // namespace mnemo_cuda
