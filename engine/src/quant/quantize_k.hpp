// The K-quant quantizers (quantize_k.cpp), called block by block from quantize_row.
#pragma once

#include <cstdint>

namespace mnemo::detail {

void quantize_block_q4_k(const float* x, uint8_t* block);  // 256 floats -> 144 bytes
void quantize_block_q5_k(const float* x, uint8_t* block);  // 256 floats -> 176 bytes
void quantize_block_q6_k(const float* x, uint8_t* block);  // 256 floats -> 210 bytes

}  // namespace mnemo::detail
