// The q8_0 block quantizer KV_STORE runs on the device to write a q8_0 K/V cache, and on the host
// in tests/test_cuda_quant_blocks.cpp, which checks it bit for bit against the engine's reference
// quantizer (engine/src/quant/quantize.cpp), as the CPU's KV_STORE uses that very quantizer and
// conformance compares the caches the two write. Its rounding, step by step:
//   amax = max |x_j| (fmax: a NaN is skipped), d = amax / 127 (one f32 division),
//   id = d != 0 ? 1 / d : 0, stored scale = f16(d) rounded to nearest even,
//   q_j = int8(round(x_j * id)) with the f32 id (not the f16 scale), halves away from zero.
// Each operation is a single IEEE rounding on both sides (__fdiv_rn / __fmul_rn on the device, so
// no fast-math reciprocal or contraction can change a code).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant_blocks.cuh"

namespace mnemo_cuda {
namespace qblock {

MNEMO_QHD float div_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

// f32 -> IEEE binary16 bits, rounded to nearest even; overflow gives inf, NaN a quiet NaN. In
// integer arithmetic on both sides, not with the device's conversion instruction: on an H100
// (CUDA 13.0, sm_90) the bytes of `__half_as_ushort(__float2half_rn(d))` written one at a time
// came out with the low byte 0 (the scale cut to 2 mantissa bits), which the first run of the
// conformance cases kv_store_q8_0_* on a GPU showed; integers give the same bits everywhere.
MNEMO_QHD uint16_t f32_to_half_bits(float f) {
    uint32_t x;
#ifdef __CUDA_ARCH__
    x = __float_as_uint(f);
#else
    std::memcpy(&x, &f, 4);
#endif
    const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 (and inf): inf
    uint32_t r, rem, half;
    if (a >= 0x38800000u) {  // a normal half: drop 13 mantissa bits, rebias the exponent 127 -> 15
        r = (a - (112u << 23)) >> 13;
        rem = a & 0x1fffu;
        half = 0x1000u;
    } else if (a >= 0x33000000u) {  // a subnormal half: units of 2^-24, the implicit 1 made explicit
        const uint32_t shift = 126u - (a >> 23);  // 14 .. 24 for exponents 102 .. 112
        const uint32_t m = (a & 0x7fffffu) | 0x800000u;
        r = m >> shift;
        rem = m & ((1u << shift) - 1u);
        half = 1u << (shift - 1u);
    } else {
        return static_cast<uint16_t>(sign);  // below half the smallest subnormal (2^-25 itself ties to 0)
    }
    if (rem > half || (rem == half && (r & 1u))) ++r;  // a carry out of the mantissa bumps the exponent
    return static_cast<uint16_t>(sign | r);
}

}  // namespace qblock

// The 32 floats at x into the 34-byte q8_0 block at b (any alignment: written a byte at a time).
MNEMO_QHD void quantize_q8_0_block(const float* x, uint8_t* b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = fmaxf(amax, fabsf(x[j]));
    const float d = qblock::div_rn(amax, 127.0f);
    const float id = d != 0.0f ? qblock::div_rn(1.0f, d) : 0.0f;
    const uint16_t h = qblock::f32_to_half_bits(d);
    b[0] = static_cast<uint8_t>(h & 0xffu);
    b[1] = static_cast<uint8_t>(h >> 8);
    // As the reference (engine/src/quant/quantize.cpp, q8_code): round, and +-inf / NaN (a block
    // whose largest value is subnormal: 1 / d overflows) pinned to +-127 / 0 rather than cast.
    for (int j = 0; j < 32; ++j) {
        const float r = roundf(qblock::mul_rn(x[j], id));
        const int8_t q = !(r == r) ? int8_t{0} : static_cast<int8_t>(r >= 127.0f ? 127.0f : r <= -127.0f ? -127.0f : r);
        b[2 + j] = static_cast<uint8_t>(q);
    }
}

}  // namespace mnemo_cuda
