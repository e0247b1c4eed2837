// What graph_prepare hands to a kernel: the node with its tensors resolved to host addresses, the
// kernel chosen for this node and ISA, and per-thread scratch. Every op family's file
// (kernels/<family>.cpp) registers, per op, a Kernel whose `select` picks the implementation once
// per node, so graph_run only calls a function pointer per thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "../cpu_features.hpp"
#include "mnemo/abi/mnemo_abi.h"
#include "mnemo/ops/dtype.hpp"

namespace mnemo_cpu {

struct PreparedNode;

// The state one parallel run of a node shares between its threads.
struct KernelCall {
    const PreparedNode* node;
    float* scratch;            // per-thread scratch: thread ith owns scratch + ith * scratch_stride
    size_t scratch_stride;     // floats
    std::atomic<int64_t>* next_task;  // work counter for dynamically scheduled kernels, starts at 0
};

// Called on every pool thread; a kernel splits its own work by (ith, nth).
using KernelFn = void (*)(const KernelCall& call, int ith, int nth);

struct PreparedNode {
    mnemo_node node;
    const void* in[MNEMO_MAX_INPUTS];  // buffer + offset of each input
    void* out;
    KernelFn kernel = nullptr;
    size_t scratch_floats = 0;  // per thread
    // False for nodes too small to be worth waking other threads for: they run inline.
    bool parallel = true;
    // Op-specific choices made in prepare (e.g. the matmul tiling); meaning is per kernel family.
    int64_t plan[4] = {0, 0, 0, 0};
    // The op's check of data-dependent indices before each run (Kernel::check_indices), or none.
    bool (*check_indices)(const PreparedNode& node, char* message, size_t cap) = nullptr;
};

inline int64_t numel(const mnemo_tensor& t) {
    int64_t n = 1;
    for (int32_t i = 0; i < t.ndim; ++i) n *= t.shape[i];
    return n;
}

// Rows of a [..., D] tensor: product of all but the last dimension.
// Bytes of `elements` consecutive elements of a row in `dtype` (whole blocks for the
// block-quantized types): a row's stride in a weight, table or cache.
inline uint64_t dtype_row_bytes(int32_t dtype, int64_t elements) {
    return mnemo::dtype_bytes(static_cast<mnemo::DType>(dtype), elements);
}

inline int64_t outer_rows(const mnemo_tensor& t) {
    int64_t n = 1;
    for (int32_t i = 0; i + 1 < t.ndim; ++i) n *= t.shape[i];
    return n;
}

// The contiguous share [begin, end) of `count` items for thread ith of nth, in multiples of
// `grain` so that vector and tile boundaries stay aligned.
inline void split_range(int64_t count, int ith, int nth, int64_t grain, int64_t* begin, int64_t* end) {
    const int64_t units = (count + grain - 1) / grain;
    const int64_t u0 = units * ith / nth;
    const int64_t u1 = units * (ith + 1) / nth;
    *begin = u0 * grain < count ? u0 * grain : count;
    *end = u1 * grain < count ? u1 * grain : count;
}

// False with "<what>: index i is v, outside 0..limit-1" in message when an index is out of range.
inline bool check_index_range(const int32_t* idx, int64_t count, int64_t limit, const char* what, char* message, size_t cap) {
    for (int64_t i = 0; i < count; ++i)
        if (idx[i] < 0 || idx[i] >= limit) {
            std::snprintf(message, cap, "%s: index %lld is %d, outside 0..%lld", what, static_cast<long long>(i), idx[i],
                          static_cast<long long>(limit - 1));
            return false;
        }
    return true;
}

// What the CPU backend knows of one op, registered by the op's family file (kernels/<family>.cpp,
// register_<family>_kernels()):
//  - select: picks the implementation for the node on this ISA, once per prepare; may set
//    node.plan and node.scratch_floats;
//  - work: how much work a node is (multiply-adds, or elements touched), to decide whether waking
//    the pool pays (default: the output's elements);
//  - check_indices: validates the node's data-dependent indices before each run (indices are
//    data, so they cannot be checked in prepare); false with a message. None: no indices.
struct Kernel {
    KernelFn (*select)(PreparedNode& node, Isa isa) = nullptr;
    double (*work)(const mnemo_node& node) = nullptr;
    bool (*check_indices)(const PreparedNode& node, char* message, size_t cap) = nullptr;
};

const Kernel* kernel_for(int32_t op);  // nullptr when the op has no kernel
void register_kernel(int32_t op, Kernel k);

}  // namespace mnemo_cpu
