// Element types and the scalar conversions every backend and tool agrees on.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "mnemo/api.hpp"
#include "mnemo/abi/mnemo_abi.h"

namespace mnemo {

enum class DType : int32_t {
    F32 = MNEMO_DTYPE_F32,
    F16 = MNEMO_DTYPE_F16,
    BF16 = MNEMO_DTYPE_BF16,
    I32 = MNEMO_DTYPE_I32,
};

constexpr size_t dtype_size(DType t) {
    switch (t) {
        case DType::F32: return 4;
        case DType::F16: return 2;
        case DType::BF16: return 2;
        case DType::I32: return 4;
    }
    return 0;
}

constexpr std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::F32: return "f32";
        case DType::F16: return "f16";
        case DType::BF16: return "bf16";
        case DType::I32: return "i32";
    }
    return "?";
}

// Accepts our names ("f16") and safetensors names ("F16", "BF16", "F32", "I32").
MNEMO_API std::optional<DType> dtype_from_name(std::string_view name);

constexpr bool dtype_valid(int32_t raw) { return raw >= 0 && raw < MNEMO_DTYPE_COUNT_; }

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

// Read element i of a float-typed buffer (F32/F16/BF16) as f32.
inline float load_as_f32(const void* data, DType t, size_t i) {
    switch (t) {
        case DType::F32: return static_cast<const float*>(data)[i];
        case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
        case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
        case DType::I32: return static_cast<float>(static_cast<const int32_t*>(data)[i]);
    }
    return 0.0f;
}

}  // namespace mnemo
