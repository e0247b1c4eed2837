// Element type names: our lower-case spelling ("bf16") used in configs and on the command line,
// and the upper-case spelling safetensors headers use ("BF16").
#include "mnemo/ops/dtype.hpp"

namespace mnemo {

std::optional<DType> dtype_from_name(std::string_view name) {
    if (name == "f32" || name == "F32") return DType::F32;
    if (name == "f16" || name == "F16") return DType::F16;
    if (name == "bf16" || name == "BF16") return DType::BF16;
    if (name == "i32" || name == "I32") return DType::I32;
    if (name == "q8_0" || name == "Q8_0") return DType::Q8_0;
    if (name == "q4_0" || name == "Q4_0") return DType::Q4_0;
    if (name == "q4_k" || name == "Q4_K") return DType::Q4_K;
    if (name == "q5_k" || name == "Q5_K") return DType::Q5_K;
    if (name == "q6_k" || name == "Q6_K") return DType::Q6_K;
    return std::nullopt;
}

}  // namespace mnemo
