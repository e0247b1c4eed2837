// ROPE: one block per (token, group of heads); the block forms the token's cos/sin in double once
// per tile of pairs and its threads rotate one pair each. In place (output == input) is safe: a
// pair is read whole before either half is written.
#include <climits>

#include "device_common.cuh"
#include "kernel_api.hpp"

namespace mnemo_cuda {
namespace {

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

void register_rope_kernels() { register_kernel(MNEMO_OP_ROPE, Kernel{rope_supports, nullptr, rope_build}); }

}  // namespace mnemo_cuda
