// RMS_NORM, LAYER_NORM and SOFTMAX: one block per row (a grid-stride loop over rows, so any row
// count fits), threads striding over the row (coalesced), reductions in f32 through block_sum /
// block_max. ROPE: one block per (token, group of heads); the block forms the token's cos/sin in
// double once per tile of pairs and its threads rotate one pair each.
//
// In place (output == input) is safe everywhere: a row's statistics are complete (the reduction
// ends synchronised) before any element of it is written, each element is written by the thread
// that read it, and a ROPE pair is read whole before either half is written.
#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {
namespace {

// ------------------------------------------------------------------ launch shapes

// Threads for a row of d elements: a power of two (block_sum wants whole warps), the smallest
// one >= d for short rows, 256 for ordinary rows and 1024 for very long ones (a vocabulary
// softmax has few rows, so each row needs many threads).
uint32_t row_threads(uint64_t d) {
    uint32_t want = d >= 8192 ? 1024 : 256;
    while (want > 32 && want / 2 >= d) want /= 2;
    return want;
}

// One block per row up to the x limit of the grid; the kernels loop over the rest.
uint32_t row_grid(const DeviceProps& p, uint64_t rows) {
    const uint64_t cap = p.max_grid[0] > 0 ? static_cast<uint64_t>(p.max_grid[0]) : 65535;
    return static_cast<uint32_t>(std::max<uint64_t>(1, std::min(rows, cap)));
}

// ------------------------------------------------------------------ RMS_NORM / LAYER_NORM

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

// ------------------------------------------------------------------ SOFTMAX

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

// ------------------------------------------------------------------ ROPE

constexpr uint32_t kRopeThreads = 256;  // also the pairs per cos/sin tile
constexpr uint32_t kRopePairsPerBlock = 512;

// Block (t, g) rotates heads g*hpb .. of token t (a grid-stride loop over tokens). The angle
// (pos + offset) * inv_freq and its cos/sin are formed in double, as the reference does: an f32
// angle is off by up to 0.03 rad at position 1M. pos + offset is summed in 64-bit integers, so
// the position is exact (the offset, i[2], may be negative: Memory3's memory slots). A tile of
// up to 256 cos/sin pairs is computed once per block and shared by all its heads, so the double
// work is per token, not per element. The rotation is done in double too (a handful of
// operations per pair). Dims R..D-1 are copied unless the output is the input.
__global__ void __launch_bounds__(kRopeThreads) rope_kernel(const float* x, const int32_t* pos, const float* inv_freq, float* y,
                                                           uint64_t tokens, uint32_t heads, uint64_t d, uint32_t half,
                                                           uint32_t heads_per_block, int64_t offset, bool interleaved,
                                                           bool copy_tail) {
    __shared__ double cos_s[kRopeThreads];
    __shared__ double sin_s[kRopeThreads];
    const uint32_t h0 = blockIdx.y * heads_per_block;
    if (h0 >= heads) return;  // the whole block leaves: no barrier is skipped
    const uint32_t hc = min(heads_per_block, heads - h0);
    for (uint64_t n = blockIdx.x; n < tokens; n += gridDim.x) {
        const double p = static_cast<double>(static_cast<int64_t>(pos[n]) + offset);
        const uint64_t row0 = (n * heads + h0) * d;  // first element of head h0 of token n
        for (uint32_t j0 = 0; j0 < half; j0 += kRopeThreads) {
            const uint32_t cnt = min(kRopeThreads, half - j0);
            for (uint32_t t = threadIdx.x; t < cnt; t += blockDim.x) {
                double s, c;
                sincos(p * static_cast<double>(inv_freq[j0 + t]), &s, &c);
                sin_s[t] = s;
                cos_s[t] = c;
            }
            __syncthreads();
            for (uint32_t e = threadIdx.x; e < hc * cnt; e += blockDim.x) {
                const uint32_t hh = e / cnt, jj = e - hh * cnt, j = j0 + jj;
                const uint64_t base = row0 + static_cast<uint64_t>(hh) * d;
                // Mode 0 pairs (j, j + R/2) (HF rotate_half); mode 1 pairs (2j, 2j + 1).
                const uint64_t i0 = base + (interleaved ? 2ull * j : j);
                const uint64_t i1 = interleaved ? i0 + 1 : i0 + half;
                const double a = x[i0], bb = x[i1];  // both read before either is written
                const double c = cos_s[jj], s = sin_s[jj];
                y[i0] = static_cast<float>(a * c - bb * s);
                y[i1] = static_cast<float>(bb * c + a * s);
            }
            __syncthreads();  // the next tile overwrites cos_s / sin_s
        }
        if (copy_tail) {
            const uint64_t rot = 2ull * half, tail = d - rot;
            for (uint64_t e = threadIdx.x; e < hc * tail; e += blockDim.x) {
                const uint64_t hh = e / tail, k = e - hh * tail;
                const uint64_t at = row0 + hh * d + rot + k;
                y[at] = x[at];
            }
        }
    }
}

bool rope_supports(const DeviceProps&, const mnemo_node& n) {
    if (n.n_inputs != 3 || n.inputs[0].dtype != MNEMO_DTYPE_F32 || n.inputs[1].dtype != MNEMO_DTYPE_I32 ||
        n.inputs[2].dtype != MNEMO_DTYPE_F32 || n.output.dtype != MNEMO_DTYPE_F32 || n.inputs[0].ndim != 3)
        return false;
    // Heads and rotary pairs are 32-bit inside the kernel.
    return n.inputs[0].shape[1] <= INT32_MAX && n.iparams[1] / 2 <= INT32_MAX;
}

void rope_build(KernelBuilder& b) {
    const mnemo_node& n = b.node();
    const mnemo_tensor& xt = n.inputs[0];
    const uint64_t tokens = static_cast<uint64_t>(xt.shape[0]);
    const uint32_t heads = static_cast<uint32_t>(xt.shape[1]);
    const uint64_t d = static_cast<uint64_t>(xt.shape[2]);
    const uint32_t half = static_cast<uint32_t>(n.iparams[1] / 2);
    if (tokens == 0 || heads == 0 || d == 0) return;
    const float* x = KernelBuilder::as<const float>(xt);
    const int32_t* pos = KernelBuilder::as<const int32_t>(n.inputs[1]);
    const float* inv_freq = KernelBuilder::as<const float>(n.inputs[2]);
    float* y = KernelBuilder::as<float>(b.output());
    // Enough heads per block for about two pairs per thread, and few enough blocks along y.
    uint32_t hpb = std::max<uint32_t>(1, kRopePairsPerBlock / std::max<uint32_t>(half, 1));
    hpb = std::min(hpb, heads);
    hpb = std::max<uint32_t>(hpb, (heads + 65534) / 65535);
    const uint32_t gy = (heads + hpb - 1) / hpb;
    const uint32_t gx = row_grid(b.props(), tokens);
    const bool interleaved = n.iparams[0] == 1;
    const int64_t offset = n.iparams[2];  // optional: 0 when the graph gave two parameters
    const bool copy_tail = static_cast<const void*>(x) != static_cast<const void*>(y) && d > 2ull * half;
    b.launch([=](cudaStream_t st) {
        rope_kernel<<<dim3(gx, gy), kRopeThreads, 0, st>>>(x, pos, inv_freq, y, tokens, heads, d, half, hpb, offset,
                                                            interleaved, copy_tail);
        return cudaGetLastError();
    });
}

}  // namespace

void register_norm_kernels() {
    register_kernel(MNEMO_OP_RMS_NORM, Kernel{norm_supports, nullptr, norm_build});
    register_kernel(MNEMO_OP_LAYER_NORM, Kernel{norm_supports, nullptr, norm_build});
    register_kernel(MNEMO_OP_SOFTMAX, Kernel{softmax_supports, nullptr, softmax_build});
    register_kernel(MNEMO_OP_ROPE, Kernel{rope_supports, nullptr, rope_build});
}

}  // namespace mnemo_cuda
