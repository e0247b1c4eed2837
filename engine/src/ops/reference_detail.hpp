// Shared pieces of the naive op references (reference*.cpp): the view of a node's tensors and one
// function per op in the family files. See reference.cpp for the rules all of them follow (plain
// loops, double accumulation, data-dependent indices checked with a message).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"

namespace mnemo::reference {

// A read-only view of one input tensor.
struct In {
    const void* data;
    DType dtype;
    TensorShape shape;

    // Element i of an element-typed tensor (F32/F16/BF16; I32 converted). A block-quantized
    // tensor is read a row at a time with row_f32.
    float f(int64_t i) const { return load_as_f32(data, dtype, static_cast<size_t>(i)); }
    // Row r of the innermost dimension as floats (len elements): any float or block-quantized
    // dtype, quantized rows through the reference dequantizer (mnemo/quant/ggml_quants.hpp).
    void row_f32(int64_t r, float* out) const;
    int32_t i32(int64_t i) const { return static_cast<const int32_t*>(data)[i]; }
    int64_t dim(int32_t d) const { return shape.shape[d]; }
    int64_t last() const { return shape.shape[shape.ndim - 1]; }
    int64_t numel() const { return shape.numel(); }
};

struct Ctx {
    const mnemo_node& node;
    const char* name;
    std::vector<In> in;
    float* out;
    int64_t out_numel;

    [[noreturn]] void fail(const std::string& what) const { throw Error(std::string(name) + ": " + what); }
};

// Product of every dimension but the last: the number of rows an op over the last axis sees.
// (numel / last would divide by zero when the last dimension is empty.)
inline int64_t leading_rows(const TensorShape& s) {
    int64_t rows = 1;
    for (int32_t i = 0; i + 1 < s.ndim; ++i) rows *= s.shape[i];
    return rows;
}

// One reference per op, named after it, defined in its family's file (reference_<family>.cpp).
#define MNEMO_OP(id, value, name, family, min_inputs, max_inputs, aliases, category) void name(const Ctx& c);
#include "mnemo/abi/mnemo_ops.def"
#undef MNEMO_OP

// KV_STORE and ATTENTION: row n's sequence id and position index the cache (reference.cpp).
void check_seq_pos(const Ctx& c, const In& seq, const In& pos, int64_t n, int64_t n_seq, int64_t ctx_len);

// GELU's tanh approximation (the elementwise GELU and PEER_GATE's activation 2).
inline double gelu_tanh(double x) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// ARGTOPK's order: value descending, NaN below every number (ties are left to a stable sort).
bool ranks_before(float a, float b);

}  // namespace mnemo::reference
