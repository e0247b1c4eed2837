// Element types and the scalar conversions every backend and tool agrees on.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "mnemo/api.hpp"
#include "mnemo/abi/mnemo_abi.h"

namespace mnemo {

enum class DType : int32_t {
    F32 = MNEMO_DTYPE_F32,
    F16 = MNEMO_DTYPE_F16,
    BF16 = MNEMO_DTYPE_BF16,
    I32 = MNEMO_DTYPE_I32,
    // Block-quantized weights (layouts: mnemo/abi/mnemo_abi.h, mnemo/quant/ggml_quants.hpp): the
    // innermost dimension is a whole number of blocks; MATMUL's W and GET_ROWS's table take them.
    Q8_0 = MNEMO_DTYPE_Q8_0,
    Q4_0 = MNEMO_DTYPE_Q4_0,
    Q4_K = MNEMO_DTYPE_Q4_K,
    Q5_K = MNEMO_DTYPE_Q5_K,
    Q6_K = MNEMO_DTYPE_Q6_K,
};

constexpr bool dtype_is_quantized(DType t) {
    const int32_t raw = static_cast<int32_t>(t);
    return raw >= MNEMO_DTYPE_QUANT_FIRST_ && raw < MNEMO_DTYPE_QUANT_END_;
}

// A dtype's storage unit: `elems` consecutive elements of the innermost dimension in `bytes`
// bytes (one element for the element types). {0, 0} for a value that is no dtype.
struct DTypeBlock {
    int64_t elems = 0;
    int64_t bytes = 0;
};

constexpr DTypeBlock dtype_block(DType t) {
    switch (t) {
        case DType::F32: return {1, 4};
        case DType::F16: return {1, 2};
        case DType::BF16: return {1, 2};
        case DType::I32: return {1, 4};
        case DType::Q8_0: return {32, 34};
        case DType::Q4_0: return {32, 18};
        case DType::Q4_K: return {256, 144};
        case DType::Q5_K: return {256, 176};
        case DType::Q6_K: return {256, 210};
    }
    return {0, 0};
}

// Bytes of `elements` consecutive elements: a whole number of blocks for a quantized type (a part
// block counts whole, so a buffer sized by this is never short). 0 for a value that is no dtype.
constexpr uint64_t dtype_bytes(DType t, int64_t elements) {
    const DTypeBlock b = dtype_block(t);
    if (b.elems <= 0 || elements <= 0) return 0;
    return static_cast<uint64_t>((elements + b.elems - 1) / b.elems) * static_cast<uint64_t>(b.bytes);
}

// Bytes of one element, for the element types only. A block-quantized type has no per-element
// size: asking is a bug, and it throws instead of answering a wrong number (use dtype_bytes or
// dtype_block).
constexpr size_t dtype_size(DType t) {
    switch (t) {
        case DType::F32: return 4;
        case DType::F16: return 2;
        case DType::BF16: return 2;
        case DType::I32: return 4;
        case DType::Q8_0:
        case DType::Q4_0:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K: break;
    }
    throw std::logic_error("dtype_size: a block-quantized or unknown dtype has no element size (use dtype_bytes)");
}

constexpr std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::F32: return "f32";
        case DType::F16: return "f16";
        case DType::BF16: return "bf16";
        case DType::I32: return "i32";
        case DType::Q8_0: return "q8_0";
        case DType::Q4_0: return "q4_0";
        case DType::Q4_K: return "q4_k";
        case DType::Q5_K: return "q5_k";
        case DType::Q6_K: return "q6_k";
    }
    return "?";
}

// Accepts our names ("f16", "q4_k"), safetensors names ("F16", "BF16", "F32", "I32") and GGUF's
// spelling of the quantized types ("Q4_K").
MNEMO_API std::optional<DType> dtype_from_name(std::string_view name);

constexpr bool dtype_valid(int32_t raw) {
    return (raw >= 0 && raw < MNEMO_DTYPE_COUNT_) || (raw >= MNEMO_DTYPE_QUANT_FIRST_ && raw < MNEMO_DTYPE_QUANT_END_);
}

// IEEE half <-> float, round to nearest even, with subnormals, inf and NaN.
inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) { mant <<= 1; --exp; }
            mant &= 0x3ffu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t f32_to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) {  // inf or NaN (keep NaN quiet and non-zero)
        return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    }
    if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (absx < 0x38800000u) {  // result is subnormal or zero
        if (absx < 0x33000000u) return static_cast<uint16_t>(sign);
        const uint32_t e = absx >> 23;
        const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - e;  // 14..24
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return static_cast<uint16_t>(sign | r);
    }
    uint32_t r = absx - (112u << 23);  // rebias exponent
    const uint32_t rem = r & 0x1fffu;
    r >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
}

inline float bf16_to_f32(uint16_t b) {
    const uint32_t bits = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t f32_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
}

// Read element i of an element-typed buffer (F32/F16/BF16, or I32 converted) as f32. A quantized
// element is only readable with its block (mnemo/quant/ggml_quants.hpp): asking here throws.
inline float load_as_f32(const void* data, DType t, size_t i) {
    switch (t) {
        case DType::F32: return static_cast<const float*>(data)[i];
        case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
        case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
        case DType::I32: return static_cast<float>(static_cast<const int32_t*>(data)[i]);
        default: break;
    }
    throw std::logic_error("load_as_f32: a block-quantized dtype is read a block at a time (dequantize_row)");
}

}  // namespace mnemo
