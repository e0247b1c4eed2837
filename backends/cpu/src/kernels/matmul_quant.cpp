// MATMUL y[N, M] = x[N, K] W[M, K]^T with W block-quantized (q8_0, q4_0, q4_k, q5_k, q6_k): the
// portable kernel, the AVX2 prefill and the choice between them and the x86 decode kernels
// (arch/x86/matmul_quant_avx2.cpp, matmul_quant_vnni.cpp; what they share: matmul_quant.hpp).
//
// Every path splits the rows of W (output columns) into one contiguous band per thread, so each
// thread streams its own part of the packed weights exactly once per K block:
//  - portable: B rows of W at a time are dequantized (the reference dequantizer, bit-exact) into
//    the thread's scratch and every row of x is dotted with them in f32: for decode B = 4, for
//    prefill B = 16, so a band is decoded once and reused by all rows of x;
//  - AVX2 prefill without VNNI (N > quant::kDecodeMaxRows): bands of 48 W rows x 1024 columns are dequantized
//    once (AVX2 dequantizers, the reference's products) and the f32 register tiles of dot.hpp (3 W
//    rows x 4 x rows) run over blocks of 32 x rows against them, so the x block stays in L2 while
//    a tile of W sits in L1;
//  - x86 integer kernels (decode, N <= quant::kDecodeMaxRows; and prefill where the CPU has AVX-512
//    VNNI): x is quantized to 8-bit blocks of 32 and each block of W is an integer dot product
//    (arch/x86/); prefill takes x in chunks that stay in L2 and two W rows at a time;
//  - arm64 NEON integer kernels (decode and prefill): the same scheme (arch/arm/).
#include <algorithm>
#include <cstring>

#include "arch/arm/simd_neon.hpp"
#include "arch/x86/simd_avx2.hpp"
#include "dot.hpp"
#include "kernel_api.hpp"
#include "matmul_quant.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/quant/ggml_quants.hpp"

namespace mnemo_cpu {
namespace {

// plan[] layout of quantized matmul nodes.
enum PlanSlot { kPlanBand = 0, kPlanKc = 1 };

constexpr int64_t kPortableDecodeBand = 4;
constexpr int64_t kPortablePrefillBand = 16;
constexpr int64_t kPrefillBand = 48;   // W rows dequantized at once (a multiple of the tile's 3)
constexpr int64_t kPrefillKc = 1024;   // columns per K block: a multiple of every block size
constexpr int64_t kPrefillNc = 32;     // x rows per block: 32 x 1024 floats = 128 KiB, in L2

struct QuantShape {
    const float* x;
    const uint8_t* w;
    float* y;
    int64_t n, m, k;
    uint32_t ggml;        // the ggml type id of W (for dequantize_row)
    int64_t block_elems;  // weights per block
    int64_t block_bytes;
    uint64_t row_bytes;   // bytes of one row of W

    // Start of row r of W at column c (c a multiple of the block).
    const uint8_t* at(int64_t r, int64_t c) const {
        return w + static_cast<uint64_t>(r) * row_bytes + static_cast<uint64_t>(c / block_elems * block_bytes);
    }
};

QuantShape quant_shape(const PreparedNode& p) {
    const mnemo_node& nd = p.node;
    QuantShape s;
    s.x = static_cast<const float*>(p.in[0]);
    s.w = static_cast<const uint8_t*>(p.in[1]);
    s.y = static_cast<float*>(p.out);
    s.m = nd.inputs[1].shape[0];
    s.k = nd.inputs[1].shape[1];
    s.n = outer_rows(nd.inputs[0]);
    const auto dt = static_cast<mnemo::DType>(nd.inputs[1].dtype);
    s.ggml = mnemo::ggml_type_of_dtype(dt);
    s.block_elems = mnemo::dtype_block(dt).elems;
    s.block_bytes = mnemo::dtype_block(dt).bytes;
    s.row_bytes = mnemo::dtype_bytes(dt, s.k);
    return s;
}

// x . w over k floats, four partial sums (the compiler vectorises it for the baseline ISA).
float dot_f32(const float* x, const float* w, int64_t k) {
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int64_t j = 0;
    for (; j + 4 <= k; j += 4) {
        a0 += x[j] * w[j];
        a1 += x[j + 1] * w[j + 1];
        a2 += x[j + 2] * w[j + 2];
        a3 += x[j + 3] * w[j + 3];
    }
    for (; j < k; ++j) a0 += x[j] * w[j];
    return (a0 + a1) + (a2 + a3);
}

void matmul_quant_portable(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const QuantShape s = quant_shape(p);
    const int64_t band = p.plan[kPlanBand];
    float* wbuf = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    int64_t m0, m1;
    split_range(s.m, ith, nth, 1, &m0, &m1);
    for (int64_t mc = m0; mc < m1; mc += band) {
        const int64_t rows = std::min(band, m1 - mc);
        for (int64_t r = 0; r < rows; ++r) mnemo::dequantize_row(s.ggml, s.at(mc + r, 0), wbuf + r * s.k, s.k);
        for (int64_t n = 0; n < s.n; ++n)
            for (int64_t r = 0; r < rows; ++r) s.y[n * s.m + mc + r] = dot_f32(s.x + n * s.k, wbuf + r * s.k, s.k);
    }
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)

MNEMO_AVX2 void matmul_quant_prefill_avx2(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const QuantShape s = quant_shape(p);
    const int64_t band = p.plan[kPlanBand], kc = p.plan[kPlanKc];
    const quant::DequantizeFn dequantize = quant::dequantize_avx2(p.node.inputs[1].dtype);
    float* wbuf = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    int64_t m0, m1;
    split_range(s.m, ith, nth, 3, &m0, &m1);
    if (m0 >= m1) return;
    if (s.k == 0) {  // an empty sum: zeros
        for (int64_t n = 0; n < s.n; ++n) std::memset(s.y + n * s.m + m0, 0, static_cast<size_t>(m1 - m0) * sizeof(float));
        return;
    }
    for (int64_t kb = 0; kb < s.k; kb += kc) {
        const int64_t kl = std::min(kc, s.k - kb);
        for (int64_t mc = m0; mc < m1; mc += band) {
            const int64_t rows = std::min(band, m1 - mc);
            for (int64_t r = 0; r < rows; ++r) dequantize(s.at(mc + r, kb), wbuf + r * kl, kl);
            for (int64_t nb = 0; nb < s.n; nb += kPrefillNc) {
                const int64_t nb1 = std::min(s.n, nb + kPrefillNc);
                int64_t r = 0;
                for (; r + 3 <= rows; r += 3)
                    for (int64_t n = nb; n < nb1; n += 4)
                        avx2::tile_rows_avx2<MNEMO_DTYPE_F32, 3>(static_cast<int>(std::min<int64_t>(4, nb1 - n)), s.x + n * s.k + kb, s.k,
                                                                 wbuf + r * kl, kl, s.y + n * s.m + mc + r, s.m, 0, kl, kb > 0);
                for (; r < rows; ++r)
                    for (int64_t n = nb; n < nb1; n += 4)
                        avx2::tile_rows_avx2<MNEMO_DTYPE_F32, 1>(static_cast<int>(std::min<int64_t>(4, nb1 - n)), s.x + n * s.k + kb, s.k,
                                                                 wbuf + r * kl, kl, s.y + n * s.m + mc + r, s.m, 0, kl, kb > 0);
            }
        }
    }
}

#endif  // MNEMO_HAVE_AVX2_KERNELS

template <int DT>
void dequantize_reference(const void* src, float* dst, int64_t n) {
    mnemo::dequantize_row(mnemo::ggml_type_of_dtype(static_cast<mnemo::DType>(DT)), src, dst, n);
}

}  // namespace

quant::DequantizeFn quant::dequantizer(bool vector, int32_t dtype) {
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (vector)
        if (DequantizeFn f = dequantize_avx2(dtype)) return f;
#endif
    (void)vector;
    switch (dtype) {
        case MNEMO_DTYPE_Q8_0: return dequantize_reference<MNEMO_DTYPE_Q8_0>;
        case MNEMO_DTYPE_Q4_0: return dequantize_reference<MNEMO_DTYPE_Q4_0>;
        case MNEMO_DTYPE_Q4_K: return dequantize_reference<MNEMO_DTYPE_Q4_K>;
        case MNEMO_DTYPE_Q5_K: return dequantize_reference<MNEMO_DTYPE_Q5_K>;
        case MNEMO_DTYPE_Q6_K: return dequantize_reference<MNEMO_DTYPE_Q6_K>;
        default: return nullptr;
    }
}

KernelFn select_matmul_quant(PreparedNode& p, Isa isa) {
    const int32_t dtype = p.node.inputs[1].dtype;
    const int64_t n = outer_rows(p.node.inputs[0]);
    const int64_t k = p.node.inputs[1].shape[1];
    const bool decode = n <= quant::kDecodeMaxRows;
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) {
        // With AVX-512 VNNI the integer kernels win at prefill too (1B shape, pp128: q4_0 87 -> 117
        // t/s, q4_k_m 87 -> 109); with AVX2's VPMADDUBSW they do not (q4_0 +5 %, q4_k -10 %), so
        // AVX2 prefill keeps the dequantized bands and the f32 GEMM.
        if (n >= quant::kTileMinRows && use_vnni_tiles())
            if (KernelFn f = quant::tile_kernel_vnni(dtype)) {
                p.scratch_floats = quant::tile_scratch_floats(n, k);
                return f;
            }
        if (decode || use_avx512_vnni()) {
            if (KernelFn f = use_avx512_vnni() ? quant::integer_kernel_vnni(dtype) : quant::integer_kernel_avx2(dtype)) {
                p.scratch_floats = (static_cast<size_t>(n) * quant::row_bytes(k) + sizeof(float) - 1) / sizeof(float);
                return f;
            }
        } else {
            p.plan[kPlanBand] = kPrefillBand;
            p.plan[kPlanKc] = std::max<int64_t>(1, std::min(k, kPrefillKc));
            p.scratch_floats = static_cast<size_t>(kPrefillBand * p.plan[kPlanKc]);
            return matmul_quant_prefill_avx2;
        }
    }
#elif defined(MNEMO_HAVE_NEON_KERNELS)
    if (isa == Isa::Neon)
        if (KernelFn f = use_neon_dotprod() ? quant::integer_kernel_neon_dotprod(dtype) : quant::integer_kernel_neon(dtype)) {
            p.scratch_floats = (static_cast<size_t>(n) * quant::row_bytes(k) + sizeof(float) - 1) / sizeof(float);
            return f;
        }
#else
    (void)isa;
#endif
    p.plan[kPlanBand] = decode ? kPortableDecodeBand : kPortablePrefillBand;
    p.scratch_floats = static_cast<size_t>(p.plan[kPlanBand] * std::max<int64_t>(k, 1));
    return matmul_quant_portable;
}

}  // namespace mnemo_cpu
