// GGUF's quantized block types, as the format defines them (ggml's ggml-common.h for the block
// layouts, docs/gguf.md here for what Mnemo reads): the reference dequantizers every faster kernel
// is compared with, and the reference quantizers of the types Mnemo writes. A row is `n` elements
// of the innermost dimension, a multiple of the type's block (mnemo/io/ggml_type.hpp).
//
//   Q8_0  32 weights: f16 d, 32 x int8 q                      w = d * q
//   Q4_0  32 weights: f16 d, 16 bytes of nibbles              w = d * (q - 8); byte j holds
//         weights j (low nibble) and j + 16 (high nibble)
//   Q4_K  256 weights in 8 sub-blocks of 32: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins,
//         128 bytes of nibbles                                w = d * sc * q - dmin * m
//   Q5_K  as Q4_K plus 32 bytes holding a fifth (high) bit per weight
//   Q6_K  256 weights in 16 sub-blocks of 16: 128 bytes low nibbles, 64 bytes of 2-bit highs,
//         16 x int8 scales, f16 d                             w = d * sc * (q - 32)
#pragma once

#include <cstdint>

#include "mnemo/api.hpp"

namespace mnemo {

// True for the types dequantize_row reads (the float types and Q8_0, Q4_0, Q4_K, Q5_K, Q6_K).
MNEMO_API bool can_dequantize(uint32_t ggml_type);
// `n` elements of `src` (type `ggml_type`) as floats. Throws mnemo::Error for other types or an
// `n` that is not a whole number of blocks.
MNEMO_API void dequantize_row(uint32_t ggml_type, const void* src, float* dst, int64_t n);

// True for the types quantize_row writes: Q8_0 and Q4_0 with the format's reference rounding,
// Q4_K, Q5_K and Q6_K by an error-minimising search (src/quant/quantize_k.cpp), and the float
// types. Inputs must be finite.
MNEMO_API bool can_quantize(uint32_t ggml_type);
MNEMO_API void quantize_row(uint32_t ggml_type, const float* src, void* dst, int64_t n);

}  // namespace mnemo
