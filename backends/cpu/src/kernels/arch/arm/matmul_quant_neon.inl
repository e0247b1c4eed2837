// MATMUL with a block-quantized W on arm64 (NEON), decode and prefill: the x86 integer kernels'
// scheme (arch/x86/matmul_quant_x86.inl) in Advanced SIMD. Written once and compiled twice: by
// matmul_quant_neon.cpp for the AArch64 baseline (VMULL.S8 and pairwise adds) and by
// matmul_quant_neon_dotprod.cpp with the ARMv8.2 dot-product instructions (SDOT: 16 products
// into four 32-bit lanes in one instruction), chosen at run time where the CPU has them. The
// including file defines
//   QN_NS       the namespace of this copy (inside mnemo_cpu::quant)
//   QN_TARGET   the function attribute of every function here (empty, or +dotprod)
//   QN_DOTPROD  1 to use SDOT
//   QN_ENTRY    the name of the entry point, quant::integer_kernel_neon[_dotprod](dtype)
//
// Each thread quantizes the rows of x into its scratch once (quant::QuantizedRow: 8-bit blocks of
// 32 with their scale dx and their exact f32 sum s), then streams its band of W rows. Every
// 32-weight block of W is unpacked to signed 8-bit codes c centred on the type's middle, with
// w = a c + b inside the block (the reference dequantizer's values):
//   Q8_0  a = d,                  c = q
//   Q4_0  a = d,                  c = q - 8
//   Q4_K  a = d sc,  b = 8 a - dmin m,   c = q - 8    (per sub-block of 32)
//   Q5_K  a = d sc,  b = 16 a - dmin m,  c = q - 16
//   Q6_K  a = d sc per 16 weights,       c = q - 32
// so w . x ~ a dx (c . qx) + b s: the integer dot product (|c qx| <= 128 x 127: two products fit
// 16 bits for the pairwise adds) is exact, the only approximation is x's rounding to 8 bits (an
// NMSE of about 2e-5, as on x86); centring the codes keeps the offset b out of that rounding.
// Prefill takes x in chunks that stay in L2 and walks the band once per chunk.

#if !defined(QN_NS) || !defined(QN_TARGET) || !defined(QN_DOTPROD) || !defined(QN_ENTRY)
#error "include matmul_quant_neon.inl from matmul_quant_neon.cpp or matmul_quant_neon_dotprod.cpp only"
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/arch/arm/simd_neon.hpp"
#include "kernels/kernel_api.hpp"
#include "kernels/matmul_quant.hpp"
#include "mnemo/ops/dtype.hpp"

namespace mnemo_cpu::quant::QN_NS {
namespace {

QN_TARGET inline float f16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// ------------------------------------------------------------------ x rows to 8-bit blocks

QN_TARGET void quantize_rows(const float* x, int64_t rows, int64_t k, void* out) {
    for (int64_t r = 0; r < rows; ++r) {
        auto* base = static_cast<uint8_t*>(out) + static_cast<size_t>(r) * row_bytes(k);
        const QuantizedRow q = row_at(out, k, r);
        auto* qs = reinterpret_cast<int8_t*>(base);
        auto* d = const_cast<float*>(q.d);
        auto* s = const_cast<float*>(q.s);
        auto* res = const_cast<float*>(q.r);
        auto* halves = const_cast<float*>(q.h);
        const float* xr = x + r * k;
        for (int64_t b = 0; b < k / 32; ++b) {
            float32x4_t v[8];
            for (int i = 0; i < 8; ++i) v[i] = vld1q_f32(xr + 32 * b + 4 * i);
            float32x4_t sum = vaddq_f32(vaddq_f32(vaddq_f32(v[0], v[1]), vaddq_f32(v[2], v[3])),
                                        vaddq_f32(vaddq_f32(v[4], v[5]), vaddq_f32(v[6], v[7])));
            float32x4_t amax = vabsq_f32(v[0]);
            for (int i = 1; i < 8; ++i) amax = vmaxq_f32(amax, vabsq_f32(v[i]));
            const float m = vmaxvq_f32(amax);
            s[b] = vaddvq_f32(sum);
            d[b] = m / 127.0f;
            const float32x4_t id = vdupq_n_f32(m > 0.0f ? 127.0f / m : 0.0f);
            int32x4_t qi[8];
            for (int i = 0; i < 8; ++i) qi[i] = vcvtnq_s32_f32(vmulq_f32(v[i], id));  // to nearest, ties to even
            int32_t h[2] = {0, 0};
            for (int i = 0; i < 8; ++i) h[i / 4] += vaddvq_s32(qi[i]);
            for (int i = 0; i < 8; i += 2) {
                const int16x8_t q16 = vcombine_s16(vmovn_s32(qi[i]), vmovn_s32(qi[i + 1]));
                vst1_s8(qs + 32 * b + 4 * i, vmovn_s16(q16));
            }
            halves[2 * b] = d[b] * static_cast<float>(h[0]);
            halves[2 * b + 1] = d[b] * static_cast<float>(h[1]);
            res[b] = s[b] - d[b] * static_cast<float>(h[0] + h[1]);
        }
    }
}

// ------------------------------------------------------------------ 32-weight blocks of W

// One block unpacked: codes of weights 0-15 and 16-31, their multipliers (equal but for Q6_K) and
// the block's offset.
struct Block {
    int8x16_t c0, c1;
    float a0, a1, b;
};

// Four 32-bit lanes that add up to c . x over 16 codes.
QN_TARGET inline int32x4_t dot16(int8x16_t c, int8x16_t x) {
#if QN_DOTPROD
    return vdotq_s32(vdupq_n_s32(0), c, x);
#else
    const int16x8_t lo = vmull_s8(vget_low_s8(c), vget_low_s8(x));
    const int16x8_t hi = vmull_high_s8(c, x);
    return vpadalq_s16(vpaddlq_s16(lo), hi);
#endif
}

template <int NR>
QN_TARGET inline void accumulate(const Block& w, int64_t blk, const QuantizedRow* x, float* sum) {
    for (int n = 0; n < NR; ++n) {
        const int8_t* xq = x[n].q + 32 * blk;
        const int32x4_t p0 = dot16(w.c0, vld1q_s8(xq)), p1 = dot16(w.c1, vld1q_s8(xq + 16));
        const float dx = x[n].d[blk];
        if (w.a0 == w.a1) {
            sum[n] += w.a0 * dx * static_cast<float>(vaddvq_s32(vaddq_s32(p0, p1))) + w.b * x[n].s[blk];
        } else {
            sum[n] += dx * (w.a0 * static_cast<float>(vaddvq_s32(p0)) + w.a1 * static_cast<float>(vaddvq_s32(p1))) +
                      w.b * x[n].s[blk];
        }
    }
}

// Scale and min of sub-block j of a Q4_K / Q5_K super-block (the 12 packed bytes at s).
QN_TARGET inline void scale_min_k4(int j, const uint8_t* s, float& sc, float& m) {
    if (j < 4) {
        sc = static_cast<float>(s[j] & 63);
        m = static_cast<float>(s[j + 4] & 63);
    } else {
        sc = static_cast<float>((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        m = static_cast<float>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

// out[n] = W row . x row n for NR rows of x, over k weights.
template <int DT, int NR>
QN_TARGET void row_dots(const uint8_t* w, int64_t k, const QuantizedRow* x, float* out) {
    float sum[NR] = {};
    const uint8x16_t low = vdupq_n_u8(0x0f);
    if constexpr (DT == MNEMO_DTYPE_Q8_0 || DT == MNEMO_DTYPE_Q4_0) {
        constexpr int64_t kBytes = DT == MNEMO_DTYPE_Q8_0 ? 34 : 18;
        for (int64_t b = 0; b < k / 32; ++b) {
            const uint8_t* p = w + kBytes * b;
            __builtin_prefetch(p + 4096);
            Block blk;
            blk.a0 = blk.a1 = f16_at(p);
            blk.b = 0.0f;
            if constexpr (DT == MNEMO_DTYPE_Q8_0) {
                blk.c0 = vld1q_s8(reinterpret_cast<const int8_t*>(p + 2));
                blk.c1 = vld1q_s8(reinterpret_cast<const int8_t*>(p + 18));
            } else {
                const uint8x16_t v = vld1q_u8(p + 2);
                blk.c0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, low)), vdupq_n_s8(8));
                blk.c1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), vdupq_n_s8(8));
            }
            accumulate<NR>(blk, b, x, sum);
        }
    } else if constexpr (DT == MNEMO_DTYPE_Q4_K || DT == MNEMO_DTYPE_Q5_K) {
        constexpr bool kQ5 = DT == MNEMO_DTYPE_Q5_K;
        constexpr int64_t kBytes = kQ5 ? 176 : 144;
        const int8x16_t centre = vdupq_n_s8(kQ5 ? 16 : 8);
        for (int64_t sb = 0; sb < k / 256; ++sb) {
            const uint8_t* p = w + kBytes * sb;
            __builtin_prefetch(p + 4096);
            __builtin_prefetch(p + 4096 + 64);
            __builtin_prefetch(p + 4096 + 128);
            const float d = f16_at(p), dmin = f16_at(p + 2);
            const uint8_t* qs = p + (kQ5 ? 48 : 16);
            uint8x16_t qh0 = vdupq_n_u8(0), qh1 = vdupq_n_u8(0);
            if constexpr (kQ5) {
                qh0 = vld1q_u8(p + 16);
                qh1 = vld1q_u8(p + 32);
            }
            for (int j = 0; j < 8; ++j) {
                float sc, m;
                scale_min_k4(j, p + 4, sc, m);
                // Sub-block j: the low (j even) or high (j odd) nibbles of bytes 32 (j / 2) ...
                const uint8x16_t v0 = vld1q_u8(qs + 32 * (j / 2)), v1 = vld1q_u8(qs + 32 * (j / 2) + 16);
                uint8x16_t n0 = j % 2 ? vshrq_n_u8(v0, 4) : vandq_u8(v0, low);
                uint8x16_t n1 = j % 2 ? vshrq_n_u8(v1, 4) : vandq_u8(v1, low);
                if constexpr (kQ5) {  // ... and its fifth bits, bit j of every qh byte
                    const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << j));
                    n0 = vorrq_u8(n0, vandq_u8(vtstq_u8(qh0, bit), vdupq_n_u8(0x10)));
                    n1 = vorrq_u8(n1, vandq_u8(vtstq_u8(qh1, bit), vdupq_n_u8(0x10)));
                }
                Block blk;
                blk.c0 = vsubq_s8(vreinterpretq_s8_u8(n0), centre);
                blk.c1 = vsubq_s8(vreinterpretq_s8_u8(n1), centre);
                blk.a0 = blk.a1 = d * sc;
                blk.b = (kQ5 ? 16.0f : 8.0f) * blk.a0 - dmin * m;
                accumulate<NR>(blk, 8 * sb + j, x, sum);
            }
        }
    } else {  // Q6_K
        for (int64_t sb = 0; sb < k / 256; ++sb) {
            const uint8_t* p = w + 210 * sb;
            __builtin_prefetch(p + 4096);
            __builtin_prefetch(p + 4096 + 64);
            __builtin_prefetch(p + 4096 + 128);
            __builtin_prefetch(p + 4096 + 192);
            const auto* scales = reinterpret_cast<const int8_t*>(p + 192);
            const float d = f16_at(p + 208);
            for (int h = 0; h < 2; ++h) {
                const uint8_t* ql = p + 64 * h;
                const uint8x16_t qh0 = vld1q_u8(p + 128 + 32 * h), qh1 = vld1q_u8(p + 128 + 32 * h + 16);
                for (int g = 0; g < 4; ++g) {
                    // Group g of 32: low 4 bits from bytes l (+ 32 for odd g) of the half's ql, low
                    // nibble for g < 2; high 2 bits from bits 2g of the half's qh.
                    const uint8x16_t v0 = vld1q_u8(ql + 32 * (g & 1)), v1 = vld1q_u8(ql + 32 * (g & 1) + 16);
                    const uint8x16_t l0 = g < 2 ? vandq_u8(v0, vdupq_n_u8(0x0f)) : vshrq_n_u8(v0, 4);
                    const uint8x16_t l1 = g < 2 ? vandq_u8(v1, vdupq_n_u8(0x0f)) : vshrq_n_u8(v1, 4);
                    const int8x16_t shift = vdupq_n_s8(static_cast<int8_t>(-2 * g));
                    const uint8x16_t h0 = vshlq_n_u8(vandq_u8(vshlq_u8(qh0, shift), vdupq_n_u8(3)), 4);
                    const uint8x16_t h1 = vshlq_n_u8(vandq_u8(vshlq_u8(qh1, shift), vdupq_n_u8(3)), 4);
                    Block blk;
                    blk.c0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l0, h0)), vdupq_n_s8(32));
                    blk.c1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l1, h1)), vdupq_n_s8(32));
                    blk.a0 = d * static_cast<float>(scales[8 * h + 2 * g]);
                    blk.a1 = d * static_cast<float>(scales[8 * h + 2 * g + 1]);
                    blk.b = 0.0f;
                    accumulate<NR>(blk, 8 * sb + 4 * h + g, x, sum);
                }
            }
        }
    }
    for (int n = 0; n < NR; ++n) out[n] = sum[n];
}



template <int DT>
QN_TARGET void integer_matmul(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const mnemo_node& nd = p.node;
    const int64_t m = nd.inputs[1].shape[0], k = nd.inputs[1].shape[1], n = outer_rows(nd.inputs[0]);
    int64_t m0, m1;
    split_range(m, ith, nth, 8, &m0, &m1);
    if (m0 >= m1) return;
    const auto* x = static_cast<const float*>(p.in[0]);
    const auto* w = static_cast<const uint8_t*>(p.in[1]);
    auto* y = static_cast<float*>(p.out);
    void* xq = call.scratch + static_cast<size_t>(ith) * call.scratch_stride;
    quantize_rows(x, n, k, xq);
    const uint64_t wrow = dtype_row_bytes(DT, k);
    const int64_t chunk = chunk_rows(k);
    QuantizedRow xrows[kChunkRows];
    float out[4];
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
        const int64_t c1 = std::min(n, c0 + chunk);
        for (int64_t r = c0; r < c1; ++r) xrows[r - c0] = row_at(xq, k, r);
        for (int64_t i = m0; i < m1; ++i) {
            const uint8_t* wr = w + static_cast<uint64_t>(i) * wrow;
            for (int64_t r = c0; r < c1; r += 4) {
                const int64_t nr = std::min<int64_t>(4, c1 - r);
                const QuantizedRow* xr = xrows + (r - c0);
                switch (nr) {
                    case 1: row_dots<DT, 1>(wr, k, xr, out); break;
                    case 2: row_dots<DT, 2>(wr, k, xr, out); break;
                    case 3: row_dots<DT, 3>(wr, k, xr, out); break;
                    default: row_dots<DT, 4>(wr, k, xr, out); break;
                }
                for (int64_t j = 0; j < nr; ++j) y[(r + j) * m + i] = out[j];
            }
        }
    }
}

}  // namespace
}  // namespace mnemo_cpu::quant::QN_NS

namespace mnemo_cpu::quant {

KernelFn QN_ENTRY(int32_t dtype) {
    switch (dtype) {
        case MNEMO_DTYPE_Q8_0: return QN_NS::integer_matmul<MNEMO_DTYPE_Q8_0>;
        case MNEMO_DTYPE_Q4_0: return QN_NS::integer_matmul<MNEMO_DTYPE_Q4_0>;
        case MNEMO_DTYPE_Q4_K: return QN_NS::integer_matmul<MNEMO_DTYPE_Q4_K>;
        case MNEMO_DTYPE_Q5_K: return QN_NS::integer_matmul<MNEMO_DTYPE_Q5_K>;
        case MNEMO_DTYPE_Q6_K: return QN_NS::integer_matmul<MNEMO_DTYPE_Q6_K>;
        default: return nullptr;
    }
}

}  // namespace mnemo_cpu::quant
