// ARGTOPK's order as integers (mnemo_abi.h: value descending, NaN below every number, -0.0 and
// +0.0 equal, ties to the lower index). Kernels that must return exactly the reference's indices
// (ARGTOPK, PK_TOPK) compare these keys instead of floats: one integer compare, no NaN cases, and
// a strict total order once the index breaks ties, so any selection algorithm gives one answer.
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace mnemo_cpu::topk {

// An integer that orders like the value: larger key = ranks first. NaN is below every number;
// -0.0 is folded into +0.0 so that the two tie.
inline int32_t rank_key(float v) {
    if (std::isnan(v)) return INT32_MIN;
    if (v == 0.0f) v = 0.0f;
    int32_t bits;
    std::memcpy(&bits, &v, 4);
    // Negative floats order backwards as integers: flip their magnitude bits.
    return bits ^ ((bits >> 31) & 0x7FFFFFFF);
}

// The same for doubles (PK_TOPK ranks its pair scores in double).
inline int64_t rank_key(double v) {
    if (std::isnan(v)) return INT64_MIN;
    if (v == 0.0) v = 0.0;
    int64_t bits;
    std::memcpy(&bits, &v, 8);
    return bits ^ ((bits >> 63) & INT64_MAX);
}

// A float key and its index (0..INT32_MAX) packed so that a larger packed value ranks first:
// the key in the high half, the index reversed in the low half (a lower index ranks first).
inline int64_t packed_rank(float v, int64_t index) {
    return static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(rank_key(v))) << 32 |
                                (0xFFFFFFFFull - static_cast<uint64_t>(index)));
}
inline int64_t packed_index(int64_t packed) {
    return static_cast<int64_t>(0xFFFFFFFFull - (static_cast<uint64_t>(packed) & 0xFFFFFFFFull));
}

}  // namespace mnemo_cpu::topk
