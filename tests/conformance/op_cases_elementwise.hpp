// Conformance cases of the elementwise family: ADD, MUL (binary), SCALE, SILU, GELU (unary), SWIGLU,
// CLAMP.
#pragma once

#include <limits>

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

// CLAMP is exact (a choice among x, lo and hi): the bound is the smallest positive double, so any
// difference fails. Symmetric, one-sided in effect (hi above every value) and degenerate (lo == hi)
// bounds; a wide spread puts many values on both sides.
inline void clamp(std::vector<OpCase>& out) {
    struct Bounds { float lo, hi; const char* name; };
    for (const Bounds& b : {Bounds{-1.0f, 1.0f, "sym"}, Bounds{-0.5f, 100.0f, "low"}, Bounds{0.25f, 0.25f, "point"}}) {
        for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1}, {7}, {4097}, {32, 4096}, {2, 3, 5, 7}}) {
            OpCase c;
            c.name = std::string("clamp_") + b.name + "_" + dims_name(shape);
            c.op = MNEMO_OP_CLAMP;
            c.inputs = {f32(shape, 3.0f)};
            c.fparams[0] = b.lo;
            c.fparams[1] = b.hi;
            c.max_nmse = std::numeric_limits<double>::denorm_min();
            out.push_back(c);
        }
    }
    // The special values: NaN passes through, infinities and values on or beyond the bounds are
    // clamped, -0.0 stays -0.0 inside them (lo = -1, hi = 2).
    OpCase c;
    c.name = "clamp_special_values";
    c.op = MNEMO_OP_CLAMP;
    InputSpec x = f32({11});
    x.values = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
                std::numeric_limits<float>::infinity(), -1.0f, 2.0f, -1.0000001f, 2.0000002f, -0.0f, 0.0f, 1.5f,
                -std::numeric_limits<float>::quiet_NaN()};
    c.inputs = {x};
    c.fparams[0] = -1.0f;
    c.fparams[1] = 2.0f;
    c.max_nmse = std::numeric_limits<double>::denorm_min();
    c.nan_expected = true;
    out.push_back(c);
}

// Sizes around the vector width and past a thread split (from the CPU module's former self-test):
// broadcasts of 9, 17 and 257 columns (one vector plus a tail), 300 broadcast rows, a 70000-element
// add; unary lengths 13 (a tail), 64 (whole vectors only) and 40001 (split over threads, with a tail).
inline void elementwise_tails(std::vector<OpCase>& out) {
    struct Shapes { std::vector<int64_t> a, b; };
    for (int32_t op : {MNEMO_OP_ADD, MNEMO_OP_MUL}) {
        for (const Shapes& s : {Shapes{{4, 9}, {9}}, Shapes{{2, 3, 17}, {3, 17}}, Shapes{{5, 1}, {1}}, Shapes{{70000}, {70000}},
                                Shapes{{300, 257}, {257}}, Shapes{{3, 5}, {3, 5}}}) {
            OpCase c;
            c.name = std::string(op_info(op).name) + "_a" + dims_name(s.a) + "_b" + dims_name(s.b);
            c.op = op;
            c.inputs = {f32(s.a), f32(s.b)};
            out.push_back(c);
        }
    }
    for (int32_t op : {MNEMO_OP_SILU, MNEMO_OP_GELU, MNEMO_OP_SCALE, MNEMO_OP_SWIGLU}) {
        for (int64_t n : {13, 64, 40001}) {
            OpCase c;
            c.name = std::string(op_info(op).name) + "_" + std::to_string(n);
            c.op = op;
            c.inputs = {f32({n}, 4.0f)};
            if (op == MNEMO_OP_SWIGLU) c.inputs.push_back(f32({n}));
            if (op == MNEMO_OP_SCALE) c.fparams[0] = -0.375f;
            out.push_back(c);
        }
    }
}

inline void elementwise_cases(std::vector<OpCase>& out) {
    binary(out);
    unary(out);
    clamp(out);
    elementwise_tails(out);
}

}  // namespace mnemo::conformance::detail
