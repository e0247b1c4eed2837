// The exact top-k machinery of the Vulkan backend, shared by ARGTOPK (topk.cpp) and PK_TOPK
// (product_keys_topk.cpp): shaders/topk_common.glsl, argtopk.comp, argtopk_sort.comp and
// shaders/product_keys/pk_topk.comp.
//
// Both ops must return the reference's indices bit for bit, so the shaders rank unique integer
// tuples (order key of the value, then the complement of the index) and never compare floats.
// One workgroup per row:
//  - k small enough for shared memory (2K <= capacity, K = k rounded up to a power of two): the
//    row streams through a filtered bitonic top-K selection; one dispatch (argtopk_select,
//    pk_topk_select_*).
//  - larger k: the row's tuples are sorted completely. A row of at most `capacity` tuples is
//    sorted in shared memory by one dispatch; a longer one goes to scratch and is sorted by
//    shared-memory block passes plus one global dispatch per long compare distance
//    (argtopk_sort_*). PK_TOPK first runs pk_topk_stage1_* (stage 1 in shared memory, then every
//    pair's tuple into scratch). Rows are processed in batches that bound the scratch size.
// PK_TOPK scores in double: native with shaderFloat64, else exact integer emulation (the *_soft
// variants, shaders/topk_f64.glsl); both reproduce the reference's doubles exactly.
#pragma once
#include <algorithm>
#include <climits>
#include <vector>

#include "kernel_api.hpp"

namespace mnemo_vk::topk {

inline constexpr uint32_t kMaxCapacity = 4096;          // tuples; beyond it a reduction costs more than it saves
inline constexpr uint64_t kBatchBytes = uint64_t{64} << 20;  // scratch of one batch of sorted rows
inline constexpr int kMaxCores = 5;                     // Tucker cores in the PK_TOPK push block

inline uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }

inline uint64_t pow2_ceil(uint64_t v) {
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

// Workgroup size: 256 invocations, or the largest power of two the device allows.
inline uint32_t workgroup(const DeviceFeatures& f) {
    uint32_t wg = 256;
    while (wg > 32 && wg > f.max_workgroup_invocations) wg >>= 1;
    return wg;
}

// Selection capacity: the largest power of two n <= kMaxCapacity whose shared arrays
// (bytes_per_tuple * n, plus counters) fit the device, and at least two passes of the workgroup;
// 0 when none does.
inline uint32_t capacity(const DeviceFeatures& f, uint32_t bytes_per_tuple) {
    const uint32_t wg = workgroup(f);
    for (uint32_t n = kMaxCapacity; n >= 2 * wg; n >>= 1)
        if (uint64_t{n} * bytes_per_tuple + 64 <= f.max_shared_memory) return n;
    return 0;
}

// The streaming selection keeps K tuples and admits a full pass of candidates next to them.
inline bool selection_fits(uint64_t K, uint32_t n, uint32_t wg) { return n != 0 && 2 * K <= n && K + wg <= n; }

// Workgroups numbered linearly, folded into rows of at most the device's x limit (the shaders'
// group_linear); no groups gives no rows.
inline Grid fold(const DeviceFeatures& f, uint64_t groups) {
    Grid g;
    const uint64_t max_x = std::max<uint32_t>(std::min<uint32_t>(f.max_workgroup_count[0], 65535), 1);
    g.x = u32(std::min<uint64_t>(std::max<uint64_t>(groups, 1), max_x));
    g.y = groups_for(groups, g.x);
    return g;
}

// ------------------------------------------------------------------ the full sort in scratch

struct SortPush {
    uint64_t src, keys, out, aux;
    uint32_t rows, row0, d, p, k, size_first, size_last, stride, flags, grid_x, m, nk;
};
static_assert(sizeof(SortPush) == 80);

inline constexpr uint32_t kLoadSource = 1;   // the first block pass reads x itself (ARGTOPK)
inline constexpr uint32_t kWriteOutput = 2;  // the pass writes the op's output instead of scratch

// Bytes per tuple in the sort's shared memory / per selection shape.
inline constexpr uint32_t kArgtopkTuple = 8;     // 2 words
inline constexpr uint32_t kPkSortTuple = 12;     // 3 words
inline constexpr uint32_t kPkSelectTuple = 14;   // 3 words + candidate lists of n/4 each side
inline constexpr uint32_t kPkStage1Tuple = 16;   // 3 words + candidate lists of n/2 each side

// Dispatches that sort `rows` rows of p tuples (already in scratch at p.keys, or loaded from x
// when `from_source`) and write the first k of each as output. `keys` / `aux` are the scratch
// ranges of the batch (aux: PK_TOPK's candidate lists, read by the final pass).
void add_sort(KernelBuilder& b, const char* local, const char* global, SortPush p, uint32_t n, uint32_t wg,
              bool from_source, const Range& keys, const Range* aux);

// Rows per batch when each row needs `row_bytes` of scratch.
inline uint64_t batch_rows(uint64_t rows, uint64_t row_bytes) {
    return std::clamp<uint64_t>(kBatchBytes / std::max<uint64_t>(row_bytes, 1), 1, std::max<uint64_t>(rows, 1));
}

}  // namespace mnemo_vk::topk
