// Conformance cases of the elementwise family: ADD, MUL (binary), SCALE, SILU, GELU (unary), SWIGLU.
#pragma once

#include "conformance/op_case.hpp"

namespace mnemo::conformance::detail {

inline void binary(std::vector<OpCase>& out) {
    struct Shapes { std::vector<int64_t> a, b; };
    for (int32_t op : {MNEMO_OP_ADD, MNEMO_OP_MUL}) {
        for (const Shapes& s : {Shapes{{7, 33}, {33}}, Shapes{{2, 3, 4097}, {3, 4097}}, Shapes{{1}, {1}},
                                Shapes{{32, 4096}, {4096}}, Shapes{{4, 5, 6, 7}, {4, 5, 6, 7}}, Shapes{{9, 1}, {1}}}) {
            OpCase c;
            c.name = std::string(op_info(op).name) + "_a" + dims_name(s.a) + "_b" + dims_name(s.b);
            c.op = op;
            c.inputs = {f32(s.a), f32(s.b)};
            out.push_back(c);
        }
    }
}

inline void unary(std::vector<OpCase>& out) {
    for (int32_t op : {MNEMO_OP_SILU, MNEMO_OP_GELU, MNEMO_OP_SCALE}) {
        for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1}, {7}, {4097}, {32, 4096}, {2, 3, 5, 7}}) {
            OpCase c;
            c.name = std::string(op_info(op).name) + "_" + dims_name(shape);
            c.op = op;
            // A wide spread so both tails of the activation (saturation, x -> -inf) are hit.
            c.inputs = {f32(shape, 4.0f)};
            if (op == MNEMO_OP_SCALE) c.fparams[0] = shape.size() == 1 ? -3.0f : 0.125f;
            out.push_back(c);
        }
    }
    // The exact (erf) GELU of XLM/BERT-style models: i[0] = 1. Odd lengths hit the vector tails.
    // The tanh form differs from it by an NMSE of only ~2e-8 on inputs of spread 2 (less on wider
    // ones), so the bound is 1e-10: a kernel that ignored i[0] fails, while an f32 erf (relative
    // error ~1e-6) passes with a wide margin.
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1}, {7}, {4097}, {32, 4096}, {3, 5, 33}}) {
        OpCase c;
        c.name = "gelu_erf_" + dims_name(shape);
        c.op = MNEMO_OP_GELU;
        c.inputs = {f32(shape, 2.0f)};
        c.iparams[0] = 1;
        c.max_nmse = 1e-10;
        out.push_back(c);
    }
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1}, {7}, {4097}, {32, 11008}, {2, 3, 33}}) {
        OpCase c;
        c.name = "swiglu_" + dims_name(shape);
        c.op = MNEMO_OP_SWIGLU;
        c.inputs = {f32(shape, 4.0f), f32(shape)};
        out.push_back(c);
    }
}

inline void elementwise_cases(std::vector<OpCase>& out) {
    binary(out);
    unary(out);
}

}  // namespace mnemo::conformance::detail
