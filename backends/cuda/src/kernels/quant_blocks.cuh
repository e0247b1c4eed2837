// GGUF's block-quantized weight types, decoded one weight at a time on the device (and on the host,
// where tests/test_cuda_quant_blocks.cpp checks every decoder bit for bit against the engine's
// reference, engine/src/quant/dequantize.cpp). Layouts (docs/gguf.md, mnemo/quant/ggml_quants.hpp):
//
//   q8_0   34 bytes / 32 weights:  [0..1] f16 d, [2..33] int8 q            w = q * d
//   q4_0   18 bytes / 32 weights:  [0..1] f16 d, [2..17] nibbles: byte j holds weight j (low)
//                                  and j + 16 (high)                      w = (q - 8) * d
//   q4_k  144 bytes / 256 weights: [0..1] f16 d, [2..3] f16 dmin, [4..15] 6-bit scales and mins
//                                  of 8 sub-blocks of 32, [16..143] nibbles: weights 64i + l
//                                  (low) and 64i + 32 + l (high) share byte 32i + l
//                                  w = (d * sc) * q - dmin * m
//   q5_k  176 bytes / 256 weights: as q4_k, with [16..47] qh (bit s of qh[l] is the fifth bit of
//                                  weight 32s + l) and the nibbles at [48..175]
//   q6_k  210 bytes / 256 weights: [0..127] ql low nibbles, [128..191] qh 2-bit highs, [192..207]
//                                  int8 scales of 16 sub-blocks of 16, [208..209] f16 d (last)
//                                  w = (d * sc) * (q - 32)
//
// Every type is read as sub-blocks of 32 weights (`sub` 0 .. kSubs - 1 of a block, weight `l`
// 0..31 of it): a mat-vec thread decodes one sub-block per step, and a single weight is the same
// code with one `l`, so there is one decoder per type. Blocks are only 2-byte aligned (34, 18 and
// 210 bytes; a row of them starts anywhere the tensor's offset says), so everything is read a byte
// at a time: no wider load whose alignment is not proven.
//
// Bit-exact with the reference: products are formed in its order and rounded separately (mul_rn /
// sub_rn), so nvcc cannot contract `p - m` into an fma, which would round once instead of twice.
#pragma once
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define MNEMO_QHD __host__ __device__ __forceinline__
#else
#define MNEMO_QHD inline
#endif

namespace mnemo_cuda {
namespace qblock {

MNEMO_QHD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
MNEMO_QHD float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

// IEEE binary16 bits -> f32 (exact). The device has an instruction for it; the host side spells it
// out (normal, subnormal, inf and NaN), so the header needs no CUDA headers there.
MNEMO_QHD float half_bits_to_f32(uint16_t h) {
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(h));
#else
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {  // subnormal: shift the mantissa up to a leading 1, lowering the exponent per shift
        exp = 113;
        while ((man & 0x400u) == 0) {
            man <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
#endif
}

// A little-endian 16-bit value at any byte address.
MNEMO_QHD uint16_t u16_at(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
MNEMO_QHD float f16_at(const uint8_t* p) { return half_bits_to_f32(u16_at(p)); }

}  // namespace qblock

struct Q8_0Block {
    static constexpr int kElems = 32, kBytes = 34, kSubs = 1;
    MNEMO_QHD static float weight(const uint8_t* b, int /*sub*/, int l) {
        const float d = qblock::f16_at(b);
        return qblock::mul_rn(static_cast<float>(static_cast<int8_t>(b[2 + l])), d);
    }
};

struct Q4_0Block {
    static constexpr int kElems = 32, kBytes = 18, kSubs = 1;
    MNEMO_QHD static float weight(const uint8_t* b, int /*sub*/, int l) {
        const float d = qblock::f16_at(b);
        const uint8_t q = b[2 + (l & 15)];
        const int v = (l < 16 ? (q & 0x0f) : (q >> 4)) - 8;
        return qblock::mul_rn(static_cast<float>(v), d);
    }
};

namespace qblock {
// Q4_K / Q5_K: 6-bit scale and min of sub-block j (0..7) from the 12 bytes at s. Sub-blocks 0-3
// keep them in the low 6 bits of bytes j (scale) and j + 4 (min); 4-7 keep their low 4 bits in
// byte j + 4 (scale: low nibble, min: high nibble) and their top 2 bits in the top bits of bytes
// j - 4 (scale) and j (min).
MNEMO_QHD void scale_min_k4(int j, const uint8_t* s, int& sc, int& m) {
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// Weight l of sub-block `sub` of a Q4_K (qh == nullptr) or Q5_K block: sub-block 2i + h is the
// low (h = 0) or high (h = 1) nibbles of bytes 32i .. 32i + 31 of qs; Q5_K's fifth bit is bit
// `sub` of qh[l].
MNEMO_QHD float k4_weight(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, int sub, int l) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    int sc, m;
    scale_min_k4(sub, b + 4, sc, m);
    const uint8_t byte = qs[32 * (sub >> 1) + l];
    int q = (sub & 1) ? (byte >> 4) : (byte & 0x0f);
    if (qh) q += ((qh[l] >> sub) & 1) << 4;
    const float p = mul_rn(mul_rn(d, static_cast<float>(sc)), static_cast<float>(q));
    return sub_rn(p, mul_rn(dmin, static_cast<float>(m)));
}
}  // namespace qblock

struct Q4_KBlock {
    static constexpr int kElems = 256, kBytes = 144, kSubs = 8;
    MNEMO_QHD static float weight(const uint8_t* b, int sub, int l) { return qblock::k4_weight(b, nullptr, b + 16, sub, l); }
};

struct Q5_KBlock {
    static constexpr int kElems = 256, kBytes = 176, kSubs = 8;
    MNEMO_QHD static float weight(const uint8_t* b, int sub, int l) { return qblock::k4_weight(b, b + 16, b + 48, sub, l); }
};

// Q6_K: sub-block `sub` = 4h + k is weights 128h + 32k .. + 31 (half h, quarter k). Weight l takes
// its low 4 bits from ql[64h + 32(k & 1) + l] (low nibble for k < 2, high for k >= 2), its top 2
// bits from bits 2k, 2k + 1 of qh[32h + l], and the scale of its 16 weights from
// scales[8h + 2k + l / 16].
struct Q6_KBlock {
    static constexpr int kElems = 256, kBytes = 210, kSubs = 8;
    MNEMO_QHD static float weight(const uint8_t* b, int sub, int l) {
        const int h = sub >> 2, k = sub & 3;
        const uint8_t lo = b[64 * h + 32 * (k & 1) + l];
        const uint8_t hi = b[128 + 32 * h + l];
        const int q = (((k < 2) ? (lo & 0x0f) : (lo >> 4)) | (((hi >> (2 * k)) & 3) << 4)) - 32;
        const float sc = static_cast<float>(static_cast<int8_t>(b[192 + 8 * h + 2 * k + (l >> 4)]));
        const float d = qblock::f16_at(b + 208);
        return qblock::mul_rn(qblock::mul_rn(d, sc), static_cast<float>(q));
    }
};

// The 32 weights of sub-block `sub` of block b, in order. One decoder per type (weight() above);
// with the loop unrolled the compiler loads the block's scales once for all 32.
template <class Q>
MNEMO_QHD void dequantize_sub(const uint8_t* b, int sub, float (&y)[32]) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int l = 0; l < 32; ++l) y[l] = Q::weight(b, sub, l);
}

}  // namespace mnemo_cuda
