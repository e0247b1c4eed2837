// A weight operand whose dtype is known only at run time, f32/f16/bf16 or block-quantized (q8_0,
// q4_0, q4_k, q5_k, q6_k): one element per at(), decoded exactly as the reference decodes it
// (quant_blocks.cuh). Used where one kernel serves every dtype with a branch that is uniform
// across the launch (the lookup family's tables, MOE_FFN's gate and up when their dtypes differ)
// rather than one instantiation per dtype; those kernels are bound by gathers, not by decoding.
#pragma once
#include <cstdint>

#include "device_common.cuh"
#include "kernel_api.hpp"
#include "quant_weights.cuh"

namespace mnemo_cuda {

struct AnyDTypeWeights {
    using Elem = float;
    static constexpr bool kVector = false;     // team_dot: scalar loads through at()
    static constexpr bool kQuantized = false;  // ... even for a quantized dtype (no unit())
    const uint8_t* p;  // the tensor's first byte (a quantized tensor: its first block)
    int32_t dtype;
    int64_t base;  // element offset of this view; a quantized view may start anywhere in a block
    __device__ float at(int64_t i) const {
        const int64_t j = base + i;
        switch (dtype) {
            case MNEMO_DTYPE_Q8_0: return quant_at<Q8_0Block>(p, j);
            case MNEMO_DTYPE_Q4_0: return quant_at<Q4_0Block>(p, j);
            case MNEMO_DTYPE_Q4_K: return quant_at<Q4_KBlock>(p, j);
            case MNEMO_DTYPE_Q5_K: return quant_at<Q5_KBlock>(p, j);
            case MNEMO_DTYPE_Q6_K: return quant_at<Q6_KBlock>(p, j);
            default: return load_weight(WeightPtr{p, dtype}, static_cast<uint64_t>(j));
        }
    }
    __device__ AnyDTypeWeights at_offset(int64_t o) const { return {p, dtype, base + o}; }
};

inline AnyDTypeWeights any_dtype_weights(const mnemo_tensor& t) {
    return {static_cast<const Buffer*>(t.buffer)->ptr + t.offset, t.dtype, 0};
}

// Whether t's dtype is one AnyDTypeWeights reads: f32/f16/bf16, or block-quantized with rows
// (the last dimension) of whole blocks, as the op rules require, at any offset (blocks are read a
// byte at a time). Float alignment is the caller's rule, as with WeightPtr.
inline bool any_dtype_readable(const mnemo_tensor& t) {
    if (is_quant_weight_dtype(t.dtype))
        return t.ndim >= 1 && static_cast<uint64_t>(t.shape[t.ndim - 1]) % dtype_block(t.dtype).elems == 0;
    return is_weight_dtype(t.dtype);
}

}  // namespace mnemo_cuda
