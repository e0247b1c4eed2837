// What the row-wise kernels of the Vulkan backend share (norm.cpp, softmax.cpp, rope.cpp): the
// workgroup size for one row, rows laid out as a grid, and the 32-bit element-count check.
#pragma once
#include <algorithm>
#include <string>

#include "kernel_api.hpp"

namespace mnemo_vk {

// Largest power of two <= v (v >= 1).
inline uint32_t floor_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p <= v / 2) p *= 2;
    return p;
}

// Workgroup size for a row of d elements: enough invocations that each has a few elements,
// a power of two (the shared-memory tree halves it), at least 32 (one subgroup on most GPUs),
// and 1024 for very long rows (vocabulary softmax: few rows, so each needs more lanes).
inline uint32_t row_workgroup(const DeviceFeatures& f, uint64_t d) {
    const uint32_t cap = floor_pow2(std::clamp<uint32_t>(f.max_workgroup_invocations, 32, 1024));
    uint32_t want = d >= 8192 ? 1024 : 256;
    while (want > 32 && want / 2 >= d) want /= 2;  // short rows: the smallest power of two >= d
    return std::min(want, cap);
}

// Rows (workgroups) as a grid: x up to the device limit, the rest in y.
inline void row_grid(const KernelBuilder& b, uint64_t rows, uint32_t* gx, uint32_t* gy) {
    const Grid g = fold_groups(b.features(), rows);
    *gx = g.x;
    *gy = g.y;
}

inline uint32_t checked_u32(uint64_t v, const char* what) {
    if (v > 0xFFFFFFFFull) throw KernelError(std::string(what) + " exceed 2^32 elements");
    return static_cast<uint32_t>(v);
}

}  // namespace mnemo_vk
