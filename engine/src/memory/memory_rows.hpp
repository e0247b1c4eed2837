// Explicit memories are computed in f32 (the ENCODE graph's outputs, the prefix keys) and stored
// in memory.k/v states of the context's KV cache type: this rounds rows of `dim` floats into that
// dtype exactly as KV_STORE does (f16 round to nearest even, q8_0 by the reference quantizer), so
// a memory reads the same whether the engine or a kernel wrote it.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "mnemo/io/ggml_type.hpp"
#include "mnemo/ops/dtype.hpp"
#include "mnemo/quant/ggml_quants.hpp"

namespace mnemo::detail {

inline std::vector<uint8_t> encode_rows(DType dt, const std::vector<float>& v, int64_t dim) {
    const int64_t rows = dim > 0 ? static_cast<int64_t>(v.size()) / dim : 0;
    const uint64_t row_bytes = dtype_bytes(dt, dim);
    std::vector<uint8_t> out(static_cast<size_t>(row_bytes * static_cast<uint64_t>(rows)));
    if (out.empty()) return out;  // memcpy may not be handed the null data() of an empty vector
    if (dt == DType::F32) {
        std::memcpy(out.data(), v.data(), out.size());
    } else if (dt == DType::F16) {
        for (size_t i = 0; i < v.size(); ++i) {
            const uint16_t h = f32_to_f16(v[i]);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
    } else {
        for (int64_t r = 0; r < rows; ++r)
            quantize_row(ggml_type_of_dtype(dt), v.data() + r * dim, out.data() + static_cast<uint64_t>(r) * row_bytes, dim);
    }
    return out;
}

}  // namespace mnemo::detail
