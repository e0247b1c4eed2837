// Which GGUF type each tensor takes in a quantization mix (docs/gguf.md, "Mixes"): llama.cpp's
// rules for the Llama family (its llama_tensor_get_type), restated as our own table, with Mnemo's
// own architectures under the same base rules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/io/gguf_convert.hpp"

namespace mnemo::detail {

// What the rules need to know about the model besides the tensor.
struct GgufMixModel {
    int layers = 0;            // blocks (blk.N), for the "more bits" layers of the _M mixes
    bool has_output = true;    // false: the head is tied to token_embd, which then takes the head's type
};

// The type of tensor `name` (its GGUF name) of row-major `shape` in `mix`. Every tensor of more
// than one dimension gets a type whose block divides its rows (the innermost dimension).
uint32_t gguf_mix_tensor_type(GgufMix mix, const std::string& name, const std::vector<int64_t>& shape, const GgufMixModel& model);

// The mix's base type (Q4_K for q4_k_s / q4_k_m ...) and its general.file_type (llama.cpp's
// llama_ftype: Q4_0 2, Q8_0 7, Q4_K_S 14, Q4_K_M 15, Q5_K_S 16, Q5_K_M 17, Q6_K 18 ...).
uint32_t gguf_mix_base_type(GgufMix mix);
uint32_t gguf_mix_file_type(GgufMix mix);

// The options' mix (`mix`, else the single-type mix of `type`; an error for a type that has none).
GgufMix gguf_mix_of(const GgufConvertOptions& options);

// `rows` rows of `cols` floats quantized to `type`, the rows split over `threads` threads.
void quantize_rows(uint32_t type, const float* src, uint8_t* dst, int64_t rows, int64_t cols, int threads);

// convert_to_gguf for a GGUF input (gguf_requantize.cpp).
void requantize_gguf(const std::string& in, const std::string& out, GgufMix mix, const GgufConvertOptions& options);

}  // namespace mnemo::detail
