// What a shape rule sees and how it fails. Each op's rule is one function, shape_<name>, in the
// file of its family (shape_<family>.cpp); op_table.cpp builds the table of them from the op
// list. The same rules run in the engine (as plugins add ops) and in every backend module (at
// its C ABI boundary), so a rule checks everything a kernel relies on.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "mnemo/abi/mnemo_abi.h"
#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"

namespace mnemo::shape {

// The inputs and parameters of one op instance, with the checks rules share. Every failure
// throws mnemo::Error "<op>: <what>" (the op's name first, so messages read the same from the
// graph builder, the reference implementation and every backend).
class Rule {
public:
    Rule(int32_t op, std::span<const TensorShape> in, std::span<const int64_t> ip, std::span<const float> fp)
        : op_(op), in_(in), ip_(ip), fp_(fp) {}

    int32_t op() const { return op_; }
    size_t inputs() const { return in_.size(); }
    const TensorShape& in(size_t i) const { return in_[i]; }

    // Parameter k; a rule that reads parameter k first calls need_i(k + 1) / need_f(k + 1) unless
    // the parameter is optional (then use i_or / f_or).
    int64_t i(size_t k) const { return ip_[k]; }
    float f(size_t k) const { return fp_[k]; }
    int64_t i_or(size_t k, int64_t fallback) const { return k < ip_.size() ? ip_[k] : fallback; }
    void need_i(size_t n) const {
        if (ip_.size() < n) fail("needs " + std::to_string(n) + " integer parameter(s)");
    }
    void need_f(size_t n) const {
        if (fp_.size() < n) fail("needs " + std::to_string(n) + " float parameter(s)");
    }

    [[noreturn]] void fail(const std::string& what) const;
    [[noreturn]] void fail_input(size_t i, const std::string& expected) const;

    // Input i as an f32 activation of ndim_min..ndim_max dimensions.
    const TensorShape& f32(size_t i, int32_t ndim_min, int32_t ndim_max, const char* what) const;
    // Input i as a weight (f32/f16/bf16) of exactly ndim dimensions.
    const TensorShape& weight(size_t i, int32_t ndim, const char* what) const;
    // Input i as a weight of exactly ndim dimensions that may also be block-quantized (q8_0 ...
    // q6_k; MATMUL's W, GET_ROWS's table): its innermost dimension a whole number of blocks.
    const TensorShape& packed_weight(size_t i, int32_t ndim, const char* what) const;
    // Input i of dtype dt, any rank.
    const TensorShape& of_dtype(size_t i, DType dt, const char* what) const;
    // Input i as an i32 vector of length n (any length when n < 0).
    const TensorShape& i32_vec(size_t i, int64_t n, const char* what) const;

private:
    int32_t op_;
    std::span<const TensorShape> in_;
    std::span<const int64_t> ip_;
    std::span<const float> fp_;
};

// b equals a trailing suffix of a's shape (bias / per-channel scale broadcasting).
bool suffix_broadcastable(const TensorShape& a, const TensorShape& b);
bool same_shape(const TensorShape& a, const TensorShape& b);
std::string dims_text(int32_t lo, int32_t hi);  // "3-D", "1...4-D"

// One rule per op: the output shape, or a throw.
using ShapeFn = TensorShape (*)(const Rule&);
#define MNEMO_OP(id, value, name, family, min_inputs, max_inputs, aliases, category) TensorShape shape_##name(const Rule& r);
#include "mnemo/abi/mnemo_ops.def"
#undef MNEMO_OP

}  // namespace mnemo::shape
