// MATMUL with a block-quantized W (q8_0, q4_0, q4_k, q5_k, q6_k): what matmul.cpp's dispatch and
// the ISA paths of matmul_quant.cpp (arch/x86/matmul_quant_avx2.cpp, matmul_quant_vnni.cpp) share.
//
// Decode (a few rows of x) streams the packed weights once: each x row is first quantized to
// 8-bit blocks of 32 (QuantizedRows, in the thread's scratch), then every 32-weight block of W is
// an integer dot product with the matching x block, scaled by both blocks' scales. Prefill (many
// rows of x) does the same where the CPU has AVX-512 VNNI; on AVX2 alone it dequantizes a band of
// W rows to floats once and runs the f32 register tiles of dot.hpp over every x row.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernel_api.hpp"

namespace mnemo_cpu {

// Chooses the kernel of a MATMUL node whose W is block-quantized (and sets plan / scratch).
KernelFn select_matmul_quant(PreparedNode& p, Isa isa);

namespace quant {

// Decode takes the integer path up to this many rows of x; above it the rows share dequantized
// bands of W (prefill).
constexpr int64_t kDecodeMaxRows = 8;

// Rows of x quantized for the integer dot products, one after another in a thread's scratch. Row
// n of K elements (K a multiple of 32) is `row_bytes(K)` bytes at n * row_bytes(K):
//   int8 q[K]          x / d rounded to nearest, per block of 32 (|q| <= 127)
//   float d[K / 32]    the block's scale max|x| / 127 (0 for an all-zero block)
//   float s[K / 32]    the block's sum of x, exact in f32 (the K-quants' offsets and minima use it)
//   float r[K / 32]    the rounding residual of that sum: s - d * sum(q)
//   float h[K / 16]    d * sum(q) over each half block of 16 (Q6_K's sub-blocks)
struct QuantizedRow {
    const int8_t* q;
    const float* d;
    const float* s;
    const float* r;
    const float* h;
};
constexpr size_t row_bytes(int64_t k) { return static_cast<size_t>(k) + 5 * sizeof(float) * static_cast<size_t>(k / 32); }
inline QuantizedRow row_at(const void* base, int64_t k, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(base) + static_cast<size_t>(n) * row_bytes(k);
    const auto* d = reinterpret_cast<const float*>(p + k);
    return {reinterpret_cast<const int8_t*>(p), d, d + k / 32, d + 2 * (k / 32), d + 3 * (k / 32)};
}

// n weights of a row (whole blocks) from src to floats.
using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);

// The dequantizer of a block-quantized dtype: the AVX2 one where `vector` and this build has it
// (the reference's values, bar fused multiply-adds), else the reference dequantizer.
DequantizeFn dequantizer(bool vector, int32_t dtype);

// x rows a prefill chunk of the integer kernels holds: as many as fit in kChunkBytes of quantized
// rows (a quarter of an L2), a multiple of 4 from 4 to kChunkRows; each W row of a thread's band
// then meets the chunk while it sits in L1.
constexpr int64_t kChunkRows = 64;
constexpr uint64_t kChunkBytes = 256 * 1024;
constexpr int64_t chunk_rows(int64_t k) {
    const int64_t fit = static_cast<int64_t>(kChunkBytes / (row_bytes(k) > 0 ? row_bytes(k) : 1)) / 4 * 4;
    return fit < 4 ? 4 : fit > kChunkRows ? kChunkRows : fit;
}

#if defined(__aarch64__)
// The NEON integer kernels (arch/arm/matmul_quant_neon.inl), decode and prefill: baseline
// (VMULL.S8) and with ARMv8.2's SDOT; nullptr for a dtype they do not handle.
KernelFn integer_kernel_neon(int32_t dtype);
KernelFn integer_kernel_neon_dotprod(int32_t dtype);
#endif

#if defined(__x86_64__) || defined(__i386__)
// The integer kernels of arch/x86/ (x quantized to 8 bits, integer dot products per block): AVX2
// (VPMADDUBSW) and AVX-512 VNNI (VPDPBUSD on ymm); nullptr for a dtype they do not handle.
KernelFn integer_kernel_avx2(int32_t dtype);
KernelFn integer_kernel_vnni(int32_t dtype);
// The AVX2 dequantizers (arch/x86/matmul_quant_avx2.cpp) the prefill decodes bands of W with.
DequantizeFn dequantize_avx2(int32_t dtype);
// x rows to QuantizedRows (consecutive, row_bytes(k) apart) with the VNNI copy's quantizer.
void quantize_rows_vnni(const float* x, int64_t rows, int64_t k, void* out);
// From this many rows of x, a Q8_0 / Q4_0 W goes through the VNNI tiles of eight W rows
// (arch/x86/matmul_quant_tiles_vnni.cpp) instead of the row-at-a-time kernels: at two rows they
// tie (single thread, K = 1024, M = 32000: 1.4-1.8 ms against 1.7), from four on the tiles are
// 1.4x (N = 4) to 1.9x (N = 16, 64) faster.
constexpr int64_t kTileMinRows = 3;
// The tile kernel for a W of this dtype, or nullptr.
KernelFn tile_kernel_vnni(int32_t dtype);
// Its per-thread scratch for n rows of x.
size_t tile_scratch_floats(int64_t n, int64_t k);
#endif

}  // namespace quant
}  // namespace mnemo_cpu
