// The tensor types of GGUF files (ggml's `ggml_type` ids, stored in each tensor's info) and their
// block layouts: a type stores its elements in blocks of `block_elems` consecutive elements of the
// innermost dimension, each `block_bytes` long. Every id a GGUF file may carry is listed, so a file
// holding a type Mnemo cannot compute with is still read, sized and named in the error; `computes`
// says which ones Mnemo's kernels read. Ids and layouts: ggml's `docs/gguf.md` and `ggml-common.h`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mnemo/api.hpp"
#include "mnemo/ops/dtype.hpp"

namespace mnemo {

struct GgmlTypeInfo {
    uint32_t id = 0;
    const char* name = "";  // as llama.cpp prints it: "Q4_K", "F16"
    uint32_t block_elems = 1;
    uint32_t block_bytes = 0;
    bool computes = false;  // Mnemo reads it (converted or in place)
};

// The type with that id, or nullptr for an id no GGUF writer uses (removed or unknown ids).
MNEMO_API const GgmlTypeInfo* ggml_type_info(uint32_t id);

// "Q4_K (12)" for a known id, "unknown type 77" otherwise: what errors say.
MNEMO_API std::string ggml_type_label(uint32_t id);

// Ids of the types Mnemo names in its own code.
namespace ggml_type {
inline constexpr uint32_t F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
                          Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15, I8 = 24,
                          I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30;
}  // namespace ggml_type

// Mnemo's dtype of a ggml type id, for the types Mnemo holds as they are (the float types, I32
// and the block-quantized types of mnemo/abi/mnemo_abi.h); nullopt for the others.
constexpr std::optional<DType> dtype_of_ggml_type(uint32_t id) {
    switch (id) {
        case ggml_type::F32: return DType::F32;
        case ggml_type::F16: return DType::F16;
        case ggml_type::BF16: return DType::BF16;
        case ggml_type::I32: return DType::I32;
        case ggml_type::Q8_0: return DType::Q8_0;
        case ggml_type::Q4_0: return DType::Q4_0;
        case ggml_type::Q4_K: return DType::Q4_K;
        case ggml_type::Q5_K: return DType::Q5_K;
        case ggml_type::Q6_K: return DType::Q6_K;
        default: return std::nullopt;
    }
}

// The ggml type id of a dtype (every dtype has one).
constexpr uint32_t ggml_type_of_dtype(DType t) {
    switch (t) {
        case DType::F32: return ggml_type::F32;
        case DType::F16: return ggml_type::F16;
        case DType::BF16: return ggml_type::BF16;
        case DType::I32: return ggml_type::I32;
        case DType::Q8_0: return ggml_type::Q8_0;
        case DType::Q4_0: return ggml_type::Q4_0;
        case DType::Q4_K: return ggml_type::Q4_K;
        case DType::Q5_K: return ggml_type::Q5_K;
        case DType::Q6_K: return ggml_type::Q6_K;
    }
    throw std::logic_error("ggml_type_of_dtype: not a dtype");
}

}  // namespace mnemo
