// XLM's linear layers all carry a bias. The ADD op adds f32 tensors only, so a pkm folder stores
// biases as F32 (matrices and tables may be F32/F16/BF16); a bias of another dtype is a load error
// naming the tensor, rather than a graph error at the first token.
#pragma once

#include <string>

#include "mnemo/plugin.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::pkm {

inline mnemo_tid declare_bias(const plugin::Host& h, const std::string& name, int64_t n) {
    return h.weight(name, {n}, plugin::dtype_bit(MNEMO_DTYPE_F32));
}

// <name>.weight [out, in] (any float or block-quantized dtype: MATMUL's W) and, with `bias`,
// <name>.bias [out] (F32).
inline blocks::Linear declare_linear(const plugin::Host& h, const std::string& name, int64_t out, int64_t in,
                                     bool bias) {
    blocks::Linear l;
    l.w = h.weight(name + ".weight", {out, in}, plugin::kLinearDTypes);
    if (bias) l.b = declare_bias(h, name + ".bias", out);
    return l;
}

}  // namespace mnemo::pkm
