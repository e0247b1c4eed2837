// MATMUL y[N, M] = x[N, K] W[M, K]^T, W in f32/f16/bf16 or block-quantized (q8_0, q4_0, q4_k,
// q5_k, q6_k: quant_blocks.cuh), f32 accumulation.
//
// Split on N (rows of x):
//  - N <= kVecMaxRows (decode): a mat-vec bound by W's bandwidth. A team of 32..256 threads per
//    weight row streams the row once in 16-byte loads (team_dot) against all N rows of x, so W
//    is read once per step whatever N is (a quantized row: each thread decodes whole 32-weight
//    sub-blocks, each once). The team grows for short M (k/v projections, a
//    single-row head) so that the grid still fills every SM; x is read through L1 (each block
//    reads the same few KiB), not staged in shared memory, which would copy it once per block.
//  - larger N (prefill): cuBLAS Sgemm when installed (plain FP32: the context never enables
//    TF32); 16-bit and quantized weights are widened (dequantized) to f32 in scratch, a chunk
//    of rows at a time, and each chunk is multiplied into its columns of y. Without cuBLAS (or
//    shapes cuBLAS's int arguments cannot express, or K = 0): Mnemo's own 64x64 tiled GEMM
//    (gemm_common.cuh), which decodes quantized W as it fills its shared-memory tile.
// A failed cuBLAS call has no cudaError_t of its own: the launch closure returns
// cudaErrorLaunchFailure, and the graph reports that as the node's launch failure.
#include <climits>
#include <string>
#include <type_traits>

#include "../blas.hpp"
#include "device_common.cuh"
#include "gemm_common.cuh"
#include "kernel_api.hpp"
#include "quant_weights.cuh"

namespace mnemo_cuda {
namespace {

constexpr uint64_t kVecMaxRows = 8;                 // rows of x the mat-vec holds in registers
constexpr int kVecThreads = 256;                    // threads per mat-vec block
constexpr uint64_t kWidenBytes = uint64_t{64} << 20;  // f32 bytes of widened W per cuBLAS chunk

struct Shape {
    uint64_t n, k, m;
};

// N is the product of x's leading dimensions (not numel / K: K may be 0 with N > 0, and y must
// then be zeros).
Shape shape_of(const mnemo_node& node) {
    const mnemo_tensor& x = node.inputs[0];
    uint64_t n = 1;
    for (int32_t i = 0; i + 1 < x.ndim; ++i) n *= static_cast<uint64_t>(x.shape[i]);
    return {n, static_cast<uint64_t>(last_dim(x)), static_cast<uint64_t>(node.inputs[1].shape[0])};
}


// The cuBLAS path: every dimension and leading dimension fits cuBLAS's int arguments.
bool blas_shape(const Shape& s) {
    return s.k > 0 && s.n <= INT_MAX && s.m <= INT_MAX && s.k <= INT_MAX;
}
uint64_t widen_rows(const Shape& s) {
    return std::max<uint64_t>(1, std::min<uint64_t>(s.m, kWidenBytes / (s.k * 4)));
}
bool needs_widen_scratch(const mnemo_node& node, const Shape& s) {
    return s.n > kVecMaxRows && s.m > 0 && node.inputs[1].dtype != MNEMO_DTYPE_F32 && blas_shape(s);
}

bool supports(const DeviceProps&, const mnemo_node& node) {
    const int32_t wdt = node.inputs[1].dtype;
    const bool quant = is_quant_weight_dtype(wdt);
    if (node.n_inputs != 2 || node.inputs[0].dtype != MNEMO_DTYPE_F32 || node.output.dtype != MNEMO_DTYPE_F32 ||
        !(is_weight_dtype(wdt) || quant) || node.inputs[0].ndim < 1 || node.inputs[1].ndim != 2)
        return false;
    // Every element on its own alignment (vector loads are chosen per row at run time). Quantized
    // blocks are read a byte at a time (quant_blocks.cuh): any offset will do.
    if (node.inputs[0].offset % 4 != 0 || node.output.offset % 4 != 0 || (!quant && node.inputs[1].offset % dtype_bytes(wdt) != 0))
        return false;
    const Shape s = shape_of(node);
    // The quantized views address rows by whole blocks (the op rule already requires it).
    if (quant && s.k % dtype_block(wdt).elems != 0) return false;
    // Grid x counts blocks of weight rows (at least one row per block on every path).
    return s.m <= static_cast<uint64_t>(INT_MAX);
}

uint64_t scratch_bytes(const DeviceProps&, const mnemo_node& node) {
    const Shape s = shape_of(node);
    // Only the cuBLAS path widens; load_blas is the same (cached) answer the context got.
    if (!needs_widen_scratch(node, s) || !load_blas(nullptr)) return 0;
    return widen_rows(s) * s.k * 4;
}

// ------------------------------------------------------------------------------- mat-vec
// Block: 256 threads = 256 / team rows of W, `team` threads each. y[r, m] for r < nx.
template <int NX, class W>
__global__ void __launch_bounds__(kVecThreads)
    matvec_kernel(W w, const float* __restrict__ x, float* __restrict__ y, int64_t K, int64_t M, int nx, int team) {
    __shared__ float partial[NX][kVecThreads / 32];
    const int rows_per_block = kVecThreads / team;
    const int local = static_cast<int>(threadIdx.x) / team, lane = static_cast<int>(threadIdx.x) % team;
    const int64_t m = static_cast<int64_t>(blockIdx.x) * rows_per_block + local;
    float acc[NX];
#pragma unroll
    for (int r = 0; r < NX; ++r) acc[r] = 0.0f;
    if (m < M) {
        const float* xs[NX];
#pragma unroll
        for (int r = 0; r < NX; ++r) xs[r] = x + static_cast<int64_t>(r < nx ? r : 0) * K;
        team_dot<NX>(w.at_offset(m * K), K, xs, nx, lane, team, acc);
    }
    // team is a multiple of 32: every warp is whole and belongs to one row.
    const int warp = static_cast<int>(threadIdx.x) / 32;
#pragma unroll
    for (int r = 0; r < NX; ++r) {
        const float v = warp_sum(acc[r]);
        if ((threadIdx.x & 31) == 0) partial[r][warp] = v;
    }
    __syncthreads();
    // One thread per (row, r) adds its row's warps in a fixed order.
    if (static_cast<int>(threadIdx.x) < rows_per_block * NX) {
        const int row = static_cast<int>(threadIdx.x) / NX, r = static_cast<int>(threadIdx.x) % NX;
        const int64_t mm = static_cast<int64_t>(blockIdx.x) * rows_per_block + row;
        const int warps_per_row = team / 32;
        if (r < nx && mm < M) {
            float s = 0.0f;
            for (int q = 0; q < warps_per_row; ++q) s += partial[r][row * warps_per_row + q];
            y[static_cast<int64_t>(r) * M + mm] = s;
        }
    }
}

// W: a weight view (TypedWeights, QuantWeights); `grain`: the weights one team_dot step of a
// thread covers (a 16-byte load, a 32-weight sub-block).
template <class W>
void launch_matvec(KernelBuilder& b, const Shape& s, W w, uint64_t grain) {
    const float* x = KernelBuilder::as<const float>(b.input(0));
    float* y = KernelBuilder::as<float>(b.output());
    const int64_t K = static_cast<int64_t>(s.k), M = static_cast<int64_t>(s.m);
    const int nx = static_cast<int>(s.n);
    // Start with a warp per row; double the team while the grid is short of ~4 blocks per SM
    // and each thread keeps at least two 16-byte loads of the row.
    const uint64_t loads = std::max<uint64_t>(s.k / grain, 1);
    const uint64_t target = static_cast<uint64_t>(std::max(b.props().multiprocessors, 1)) * 4;
    int team = 32;
    auto blocks = [&](int t) { return (s.m + static_cast<uint64_t>(kVecThreads / t) - 1) / static_cast<uint64_t>(kVecThreads / t); };
    while (team < kVecThreads && blocks(team) < target && loads >= static_cast<uint64_t>(team) * 4) team *= 2;
    const uint32_t grid = static_cast<uint32_t>(blocks(team));
    auto go = [&](auto kernel) {
        b.launch([=](cudaStream_t st) {
            kernel<<<grid, kVecThreads, 0, st>>>(w, x, y, K, M, nx, team);
            return cudaGetLastError();
        });
    };
    if (nx == 1) go(matvec_kernel<1, W>);
    else if (nx == 2) go(matvec_kernel<2, W>);
    else if (nx <= 4) go(matvec_kernel<4, W>);
    else go(matvec_kernel<8, W>);
}

// ------------------------------------------------------------------------------- tiled GEMM
template <class W>
__global__ void __launch_bounds__(tile::kThreads)
    gemm_kernel(W w, const float* __restrict__ x, float* __restrict__ y, int64_t N, int64_t K, int64_t M) {
    __shared__ TileShared<1> sh;
    const int64_t m0 = static_cast<int64_t>(blockIdx.x) * tile::kBM;
    const int64_t tiles = (N + tile::kBN - 1) / tile::kBN;
    const int tx = static_cast<int>(threadIdx.x) % 16, ty = static_cast<int>(threadIdx.x) / 16;
    for (int64_t t = blockIdx.y; t < tiles; t += gridDim.y) {  // uniform per block
        const int64_t n0 = t * tile::kBN;
        if (threadIdx.x < tile::kBN) {
            const int64_t n = n0 + threadIdx.x;
            sh.rows[threadIdx.x] = n < N ? x + n * K : nullptr;
        }
        __syncthreads();
        float acc[1][tile::kTM][tile::kTN];
        gemm_tile<1>(w, w, m0, M, K, sh, acc);
#pragma unroll
        for (int i = 0; i < tile::kTM; ++i)
#pragma unroll
            for (int j = 0; j < tile::kTN; ++j) {
                const int64_t m = m0 + tx + 16 * i, n = n0 + ty + 16 * j;
                if (m < M && n < N) y[n * M + m] = acc[0][i][j];
            }
        __syncthreads();  // sh.rows is rewritten by the next tile
    }
}

template <class W>
void launch_tiled(KernelBuilder& b, const Shape& s, W w) {
    const float* x = KernelBuilder::as<const float>(b.input(0));
    float* y = KernelBuilder::as<float>(b.output());
    const int64_t N = static_cast<int64_t>(s.n), K = static_cast<int64_t>(s.k), M = static_cast<int64_t>(s.m);
    const dim3 grid(blocks_for(s.m, tile::kBM), static_cast<uint32_t>(std::min<uint64_t>((s.n + tile::kBN - 1) / tile::kBN, 65535)));
    b.launch([=](cudaStream_t st) {
        gemm_kernel<W><<<grid, tile::kThreads, 0, st>>>(w, x, y, N, K, M);
        return cudaGetLastError();
    });
}

// ------------------------------------------------------------------------------- cuBLAS
template <class T>
__global__ void widen_kernel(const T* __restrict__ src, float* __restrict__ dst, uint64_t n) {
    for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
        dst[i] = to_f32(src[i]);
}

// Column-major view of the row-major tensors: y (N x M) is col-major M x N (ld M), W (M x K)
// is col-major K x M (ld K), x (N x K) is col-major K x N (ld K). So y = W^T(op T) * x:
// m = M rows, n = N columns, k = K, A = W with lda = K, B = x with ldb = K, C = y with ldc = M.
// A chunk of weight rows m0..m0+rows-1 writes rows m0.. of that col-major C: pointer y + m0.
void sgemm_launch(KernelBuilder& b, const float* wrows, int rows, int64_t m0, const Shape& s) {
    const Blas* blas = b.blas();
    cublasHandle_t h = b.blas_handle();
    const float* x = KernelBuilder::as<const float>(b.input(0));
    float* y = KernelBuilder::as<float>(b.output()) + m0;
    const int n = static_cast<int>(s.n), k = static_cast<int>(s.k), ldc = static_cast<int>(s.m);
    b.launch([=](cudaStream_t) {
        // The handle is bound to the context's stream, the one every closure runs on; setting the
        // stream here would reset its fixed workspace (cuBLAS could then allocate during capture).
        const float one = 1.0f, zero = 0.0f;
        const cublasStatus_t st = blas->sgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, k, &one, wrows, k, x, k, &zero, y, ldc);
        return st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
    });
}

// Rows of a quantized W as f32, for cuBLAS: a thread per 32-weight sub-block (`units` of them
// from the view's first block), each written as its 32 floats.
template <class Q>
__global__ void dequantize_kernel(QuantWeights<Q> w, float* __restrict__ dst, uint64_t units) {
    for (uint64_t u = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; u < units;
         u += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        float f[QuantWeights<Q>::kUnit];
        w.unit(static_cast<int64_t>(u), f);
        float* out = dst + u * QuantWeights<Q>::kUnit;
#pragma unroll
        for (int l = 0; l < QuantWeights<Q>::kUnit; ++l) out[l] = f[l];
    }
}

// W in chunks of widen_rows(s) rows: widen(m0, rows, wide) records the launch that writes W's rows
// m0 .. m0 + rows - 1 as f32 into the scratch `wide`, then cuBLAS multiplies them into y.
template <class Widen>
void blas_in_chunks(KernelBuilder& b, const Shape& s, Widen widen) {
    float* wide = reinterpret_cast<float*>(b.scratch(0));
    const uint64_t chunk = widen_rows(s);
    for (uint64_t m0 = 0; m0 < s.m; m0 += chunk) {
        const uint64_t rows = std::min(chunk, s.m - m0);
        widen(m0, rows, wide);
        sgemm_launch(b, wide, static_cast<int>(rows), static_cast<int64_t>(m0), s);
    }
}

template <class T>
void launch_blas(KernelBuilder& b, const Shape& s) {
    const mnemo_tensor& wt = b.input(1);
    if constexpr (std::is_same_v<T, float>) {
        sgemm_launch(b, KernelBuilder::as<const float>(wt), static_cast<int>(s.m), 0, s);
    } else {
        const T* w = KernelBuilder::as<const T>(wt);
        blas_in_chunks(b, s, [&](uint64_t m0, uint64_t rows, float* wide) {
            const uint64_t count = rows * s.k;
            const T* src = w + m0 * s.k;
            const uint32_t grid = stride_grid(b.props(), count, 256, 16);
            b.launch([=](cudaStream_t st) {
                widen_kernel<T><<<grid, 256, 0, st>>>(src, wide, count);
                return cudaGetLastError();
            });
        });
    }
}

template <class Q>
void launch_blas_quant(KernelBuilder& b, const Shape& s, QuantWeights<Q> w) {
    const uint64_t row_bytes = s.k / Q::kElems * Q::kBytes;  // K is a whole number of blocks
    blas_in_chunks(b, s, [&](uint64_t m0, uint64_t rows, float* wide) {
        const uint64_t units = rows * s.k / QuantWeights<Q>::kUnit;
        const QuantWeights<Q> src{w.p + m0 * row_bytes};
        const uint32_t grid = stride_grid(b.props(), units, 256, 16);
        b.launch([=](cudaStream_t st) {
            dequantize_kernel<Q><<<grid, 256, 0, st>>>(src, wide, units);
            return cudaGetLastError();
        });
    });
}

template <class T>
void build_typed(KernelBuilder& b, const Shape& s) {
    const TypedWeights<T> w{KernelBuilder::as<const T>(b.input(1))};
    if (s.n <= kVecMaxRows) launch_matvec(b, s, w, Wide<T>::kCount);
    else if (b.blas() && blas_shape(s)) launch_blas<T>(b, s);
    else launch_tiled(b, s, w);
}

template <class Q>
void build_quant(KernelBuilder& b, const Shape& s) {
    const QuantWeights<Q> w{KernelBuilder::ptr(b.input(1))};
    if (s.n <= kVecMaxRows) launch_matvec(b, s, w, QuantWeights<Q>::kUnit);
    else if (b.blas() && blas_shape(s)) launch_blas_quant<Q>(b, s, w);
    else launch_tiled(b, s, w);
}

void build(KernelBuilder& b) {
    const Shape s = shape_of(b.node());
    if (s.n == 0 || s.m == 0) return;  // empty output
    const int32_t dt = b.input(1).dtype;
    switch (dt) {
        case MNEMO_DTYPE_F32: build_typed<float>(b, s); return;
        case MNEMO_DTYPE_F16: build_typed<__half>(b, s); return;
        case MNEMO_DTYPE_BF16: build_typed<__nv_bfloat16>(b, s); return;
        default: break;
    }
    if (!visit_quant_block(dt, [&](auto q) { build_quant<decltype(q)>(b, s); }))
        throw KernelError("matmul: weight dtype " + std::to_string(dt) +
                          " is not one the CUDA kernels read (expected f32, f16, bf16, q8_0, q4_0, q4_k, q5_k or q6_k)");
}

}  // namespace

void register_matmul_kernels() {
    Kernel k{supports, scratch_bytes, build};
    k.reads_quantized = true;  // q8_0, q4_0, q4_k, q5_k, q6_k weights (supports() names which)
    register_kernel(MNEMO_OP_MATMUL, k);
}

}  // namespace mnemo_cuda
