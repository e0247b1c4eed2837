// Device code shared by MATMUL and MOE_FFN: typed weight views, a team dot product for the
// bandwidth-bound mat-vec passes (decode), and a 64x64 shared-memory tile for the GEMM passes
// (prefill). Activations are always f32 and every sum is accumulated in f32: the conformance
// thresholds (NMSE 1e-7) leave no room for 16-bit activations or TF32.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "device_common.cuh"

namespace mnemo_cuda {

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

// 16 bytes of weights widened to f32: 4 floats or 8 halves. Element 0 is the low half of the
// first word (little endian, as the weights are stored).
template <class T>
struct Wide;
template <>
struct Wide<float> {
    static constexpr int kCount = 4;
    __device__ static void widen(const uint4& v, float (&f)[4]) {
        f[0] = __uint_as_float(v.x);
        f[1] = __uint_as_float(v.y);
        f[2] = __uint_as_float(v.z);
        f[3] = __uint_as_float(v.w);
    }
};
template <>
struct Wide<__half> {
    static constexpr int kCount = 8;
    __device__ static void widen(const uint4& v, float (&f)[8]) {
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            f[2 * q] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[q] & 0xffffu)));
            f[2 * q + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[q] >> 16)));
        }
    }
};
template <>
struct Wide<__nv_bfloat16> {
    static constexpr int kCount = 8;
    // A bf16 is the top half of an f32: widening is a shift, exact.
    __device__ static void widen(const uint4& v, float (&f)[8]) {
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            f[2 * q] = __uint_as_float(w[q] << 16);
            f[2 * q + 1] = __uint_as_float(w[q] & 0xffff0000u);
        }
    }
};

// A weight tensor of a dtype known at compile time (the fast paths).
template <class T>
struct TypedWeights {
    using Elem = T;
    static constexpr bool kVector = true;
    static constexpr bool kQuantized = false;  // block-quantized views: QuantWeights (quant_weights.cuh)
    const T* p;
    __device__ float at(int64_t i) const { return to_f32(p[i]); }
    __device__ TypedWeights at_offset(int64_t o) const { return {p + o}; }
};
// (A dtype known only at run time, float or quantized: AnyDTypeWeights, any_weights.cuh.)

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// acc[r] += sum_k w[k] * xs[r][k] over this thread's share of k (rows r < nx; the others are
// untouched). A team of `team` threads (lane 0..team-1) splits the row; the caller reduces the
// team's partial sums. When the weight row and every x row start on 16 bytes and len fills
// whole 16-byte vectors, W streams in 16-byte loads (evict-first: it is read once, while x is
// re-read by every row and should stay in L1); otherwise one element per load. A block-quantized
// view (QuantWeights) is read a 32-weight sub-block per thread and step instead.
template <int NX, class W>
__device__ __forceinline__ void team_dot(W w, int64_t len, const float* const (&xs)[NX], int nx, int lane, int team,
                                         float (&acc)[NX]) {
    if constexpr (W::kQuantized) {
        // Block-quantized W (len a whole number of blocks): each thread decodes whole 32-weight
        // sub-blocks, each read once, and applies them to every x row.
        const int64_t units = len / W::kUnit;
        for (int64_t u = lane; u < units; u += team) {
            float f[W::kUnit];
            w.unit(u, f);
#pragma unroll
            for (int r = 0; r < NX; ++r) {
                if (r >= nx) break;
                const float* xr = xs[r] + u * W::kUnit;
#pragma unroll
                for (int l = 0; l < W::kUnit; ++l) acc[r] = fmaf(f[l], __ldg(xr + l), acc[r]);
            }
        }
    } else {
        if constexpr (W::kVector) {
            using T = typename W::Elem;
            constexpr int kV = Wide<T>::kCount;
            bool vec = len % kV == 0 && aligned16(w.p);
#pragma unroll
            for (int r = 0; r < NX; ++r)
                if (r < nx) vec = vec && aligned16(xs[r]);
            if (vec) {
                constexpr int kUnroll = 4;  // loads in flight per thread before the first is used
                const uint4* wv = reinterpret_cast<const uint4*>(w.p);
                const int64_t nv = len / kV;
                for (int64_t base = lane; base < nv; base += static_cast<int64_t>(team) * kUnroll) {
                    uint4 raw[kUnroll];
#pragma unroll
                    for (int u = 0; u < kUnroll; ++u) {
                        const int64_t i = base + static_cast<int64_t>(u) * team;
                        raw[u] = i < nv ? __ldcs(wv + i) : make_uint4(0u, 0u, 0u, 0u);
                    }
#pragma unroll
                    for (int u = 0; u < kUnroll; ++u) {
                        const int64_t i = base + static_cast<int64_t>(u) * team;
                        if (i >= nv) break;
                        float f[kV];
                        Wide<T>::widen(raw[u], f);
#pragma unroll
                        for (int r = 0; r < NX; ++r) {
                            if (r >= nx) break;
                            const float4* xv = reinterpret_cast<const float4*>(xs[r] + i * kV);
#pragma unroll
                            for (int q = 0; q < kV / 4; ++q) {
                                const float4 a = __ldg(xv + q);
                                acc[r] = fmaf(f[4 * q], a.x, acc[r]);
                                acc[r] = fmaf(f[4 * q + 1], a.y, acc[r]);
                                acc[r] = fmaf(f[4 * q + 2], a.z, acc[r]);
                                acc[r] = fmaf(f[4 * q + 3], a.w, acc[r]);
                            }
                        }
                    }
                }
                return;
            }
        }
        for (int64_t i = lane; i < len; i += team) {
            const float wi = w.at(i);
#pragma unroll
            for (int r = 0; r < NX; ++r)
                if (r < nx) acc[r] = fmaf(wi, __ldg(xs[r] + i), acc[r]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The GEMM tile: C[row, m] = sum_k B[row][k] * W[m][k] for 64 weight rows m0..m0+63 and 64 B
// rows, each B row given by a pointer (nullptr: past the end, reads as zeros). NW = 2 computes
// two weight matrices against the same B rows at once (MoE gate and up). 256 threads; thread
// (tx = tid % 16, ty = tid / 16) owns rows m0 + tx + 16 i and B rows ty + 16 j (i, j < 4): the
// strided ownership makes every shared-memory read conflict-free (16 consecutive a-columns, two
// broadcast b-columns per warp).
namespace tile {
constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256, kTM = 4, kTN = 4;
}

template <int NW>
struct TileShared {
    float a[NW][tile::kBK][tile::kBM + 1];  // W tile, k-major; +1 spreads the transposed stores over banks
    float b[tile::kBK][tile::kBN + 1];      // B tile, k-major
    const float* rows[tile::kBN];           // set by the caller, synchronised before gemm_tile
};

// Every thread of the block must call this (it synchronises); on return all threads are past
// their last shared-memory read of the tile (when K > 0). acc[q][i][j]: weight q, row
// m0 + tx + 16 i, B row ty + 16 j.
template <int NW, class W0, class W1>
__device__ __forceinline__ void gemm_tile(W0 w0, W1 w1, int64_t m0, int64_t M, int64_t K, TileShared<NW>& sh,
                                          float (&acc)[NW][tile::kTM][tile::kTN]) {
    using namespace tile;
    const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
#pragma unroll
    for (int q = 0; q < NW; ++q)
#pragma unroll
        for (int i = 0; i < kTM; ++i)
#pragma unroll
            for (int j = 0; j < kTN; ++j) acc[q][i][j] = 0.0f;

    for (int64_t k0 = 0; k0 < K; k0 += kBK) {
        // 64 x 16 elements per operand, 4 per thread; 16 consecutive threads read 16 consecutive k.
#pragma unroll
        for (int l = 0; l < (kBM * kBK) / kThreads; ++l) {
            const int e = tid + l * kThreads, r = e / kBK, kk = e % kBK;
            const int64_t m = m0 + r, k = k0 + kk;
            const bool in = m < M && k < K;
            sh.a[0][kk][r] = in ? w0.at(m * K + k) : 0.0f;
            if constexpr (NW == 2) sh.a[NW - 1][kk][r] = in ? w1.at(m * K + k) : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < (kBN * kBK) / kThreads; ++l) {
            const int e = tid + l * kThreads, r = e / kBK, kk = e % kBK;
            const float* row = sh.rows[r];
            sh.b[kk][r] = row && k0 + kk < K ? row[k0 + kk] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kBK; ++kk) {
            float bv[kTN];
#pragma unroll
            for (int j = 0; j < kTN; ++j) bv[j] = sh.b[kk][ty + 16 * j];
#pragma unroll
            for (int q = 0; q < NW; ++q)
#pragma unroll
                for (int i = 0; i < kTM; ++i) {
                    const float av = sh.a[q][kk][tx + 16 * i];
#pragma unroll
                    for (int j = 0; j < kTN; ++j) acc[q][i][j] = fmaf(av, bv[j], acc[q][i][j]);
                }
        }
        __syncthreads();
    }
}

}  // namespace mnemo_cuda
