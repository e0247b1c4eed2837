// The K/V cache inputs KV_STORE and ATTENTION share (and ATTENTION's explicit-memory prefix,
// which is read alongside the cache): f32, f16 or q8_0, 4-D [S, H, C, D]. A q8_0 cache stores
// each row of D values as D/32 blocks, so D must be a whole number of blocks.
#pragma once

#include <string>

#include "ops/shape_rule.hpp"

namespace mnemo::shape {

inline bool is_cache_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::Q8_0; }

inline const TensorShape& kv_cache(const Rule& r, size_t i, const char* what) {
    const TensorShape& t = r.in(i);
    if (!is_cache_dtype(t.dtype) || t.ndim != 4) r.fail_input(i, std::string("4-D f32/f16/q8_0 ") + what);
    if (t.dtype == DType::Q8_0 && t.shape[3] % 32 != 0)
        r.fail("input " + std::to_string(i) + ": a q8_0 " + what + " needs a last dimension that is a multiple of 32 (the q8_0 block), got " +
               t.str() + ": use an f16 or f32 cache");
    return t;
}

// Inputs a and b hold the same dtype (both caches, or a cache and the prefix read with it).
inline void same_cache_dtype(const Rule& r, size_t a, size_t b) {
    if (r.in(a).dtype != r.in(b).dtype)
        r.fail("input " + std::to_string(b) + " " + r.in(b).str() + " must have the dtype of input " + std::to_string(a) + " " +
               r.in(a).str() + " (k/v caches and the prefix share one cache type)");
}

}  // namespace mnemo::shape
