// Structural validation of a node (op, arity, dtypes, shapes, parameters) before any kernel
// touches it. The engine checks the same rules, but the module is a C ABI boundary: anything
// that reaches it must be safe to execute, so it re-checks what its kernels rely on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "mnemo/abi/mnemo_abi.h"

namespace mnemo_cpu {

// False with a reason in `message` when the node cannot run on this backend.
bool check_node(const mnemo_node& node, char* message, size_t cap);

// Size in bytes of a tensor's data; false on overflow or invalid dtype.
bool tensor_bytes(const mnemo_tensor& t, uint64_t* bytes);

const char* op_name(int32_t op);

inline bool is_float_weight(int32_t dt) {
    return dt == MNEMO_DTYPE_F32 || dt == MNEMO_DTYPE_F16 || dt == MNEMO_DTYPE_BF16;
}

inline std::string shape_text(const mnemo_tensor& t) {
    static const char* names[] = {"f32", "f16", "bf16", "i32"};
    std::string s = (t.dtype >= 0 && t.dtype < MNEMO_DTYPE_COUNT_) ? names[t.dtype] : "?";
    s += "[";
    for (int32_t i = 0; i < t.ndim && i < MNEMO_MAX_DIMS; ++i) {
        if (i) s += ", ";
        s += std::to_string(t.shape[i]);
    }
    return s + "]";
}

class Checker {
public:
    Checker(const mnemo_node& n, char* msg, size_t cap) : n_(n), msg_(msg), cap_(cap) {}

    bool fail(const std::string& what) {
        std::snprintf(msg_, cap_, "%s: %s", op_name(n_.op), what.c_str());
        return false;
    }
    bool input(int i, bool dtype_ok, int32_t ndim_min, int32_t ndim_max, const char* expected) {
        const mnemo_tensor& t = n_.inputs[i];
        if (!dtype_ok || t.ndim < ndim_min || t.ndim > ndim_max)
            return fail("input " + std::to_string(i) + ": expected " + expected + ", got " + shape_text(t));
        return true;
    }
    bool f32(int i, int32_t lo, int32_t hi, const char* expected) {
        return input(i, n_.inputs[i].dtype == MNEMO_DTYPE_F32, lo, hi, expected);
    }
    bool weight(int i, int32_t ndim, const char* expected) {
        return input(i, is_float_weight(n_.inputs[i].dtype), ndim, ndim, expected);
    }
    bool i32_vec(int i, int64_t n, const char* expected) {
        const mnemo_tensor& t = n_.inputs[i];
        if (t.dtype != MNEMO_DTYPE_I32 || t.ndim != 1 || t.shape[0] != n)
            return fail("input " + std::to_string(i) + ": expected i32[" + std::to_string(n) + "] " + expected +
                        ", got " + shape_text(t));
        return true;
    }
    // The output must have exactly the given shape, f32 unless another dtype is named.
    bool output(const mnemo_tensor& want, int32_t dtype = MNEMO_DTYPE_F32) {
        const mnemo_tensor& o = n_.output;
        bool same = o.dtype == dtype && o.ndim == want.ndim;
        for (int32_t i = 0; same && i < o.ndim; ++i) same = o.shape[i] == want.shape[i];
        if (!same) {
            mnemo_tensor w = want;
            w.dtype = dtype;
            return fail("output: expected " + shape_text(w) + ", got " + shape_text(o));
        }
        return true;
    }

private:
    const mnemo_node& n_;
    char* msg_;
    size_t cap_;
};

inline bool suffix_of(const mnemo_tensor& a, const mnemo_tensor& b) {
    if (b.ndim > a.ndim) return false;
    for (int32_t i = 0; i < b.ndim; ++i)
        if (b.shape[b.ndim - 1 - i] != a.shape[a.ndim - 1 - i]) return false;
    return true;
}

inline bool same_shape(const mnemo_tensor& a, const mnemo_tensor& b) {
    if (a.ndim != b.ndim) return false;
    for (int32_t i = 0; i < a.ndim; ++i)
        if (a.shape[i] != b.shape[i]) return false;
    return true;
}

// Per-family structural checks of the memory-layer ops, next to their kernels
// (kernels/product_keys.cpp, kernels/lookup.cpp, kernels/moe.cpp).
bool check_product_key_node(const mnemo_node& n, Checker& c);  // PK_SCORE PK_TOPK PK_PAIR_SCORES
bool check_lookup_node(const mnemo_node& n, Checker& c);       // MEM_INDEX PEER_GATE HIVE
bool check_moe_node(const mnemo_node& n, Checker& c);          // MOE_FFN

}  // namespace mnemo_cpu
