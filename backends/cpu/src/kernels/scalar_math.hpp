// Scalar helpers shared by the portable kernels and by the vector kernels' tails.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "mnemo/ops/dtype.hpp"

namespace mnemo_cpu {

// Element i of an F32/F16/BF16 tensor as f32 (the dtype is known per node, not per element).
inline float load_weight(const void* base, int32_t dtype, size_t i) {
    return mnemo::load_as_f32(base, static_cast<mnemo::DType>(dtype), i);
}

inline float silu_scalar(float x) { return x / (1.0f + std::exp(-x)); }

inline float gelu_tanh_scalar(float x) {
    const float k = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

}  // namespace mnemo_cpu
