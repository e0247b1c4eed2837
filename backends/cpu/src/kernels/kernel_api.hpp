// What graph_prepare hands to a kernel: the node with its tensors resolved to host addresses, the
// kernel chosen for this node and ISA, and per-thread scratch. Every kernel family file exports
// a `select_*` function that picks the implementation once per node, so graph_run only calls a
// function pointer per thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../cpu_features.hpp"
#include "mnemo/abi/mnemo_abi.h"

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
};

inline int64_t numel(const mnemo_tensor& t) {
    int64_t n = 1;
    for (int32_t i = 0; i < t.ndim; ++i) n *= t.shape[i];
    return n;
}

// Rows of a [..., D] tensor: product of all but the last dimension.
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

// Kernel families (one file each). select_* returns the kernel for the node on this ISA and
// sets node.plan / node.scratch_floats; check_* validate data-dependent indices before a run and
// return false with a message (indices are data, so they cannot be checked in prepare).
KernelFn select_matmul(PreparedNode& node, Isa isa);
KernelFn select_elementwise(PreparedNode& node, Isa isa);  // ADD MUL SCALE SILU GELU SWIGLU
KernelFn select_norm(PreparedNode& node, Isa isa);         // RMS_NORM LAYER_NORM
KernelFn select_softmax(PreparedNode& node, Isa isa);
KernelFn select_rope(PreparedNode& node, Isa isa);
KernelFn select_rows(PreparedNode& node, Isa isa);         // GET_ROWS KV_STORE
KernelFn select_attention(PreparedNode& node, Isa isa);
KernelFn select_attn_mass(PreparedNode& node, Isa isa);
KernelFn select_memory_ops(PreparedNode& node, Isa isa);  // ARGTOPK TAKE_ALONG EMBEDDING_BAG
KernelFn select_product_keys(PreparedNode& node, Isa isa);  // PK_SCORE PK_TOPK PK_PAIR_SCORES
KernelFn select_lookup(PreparedNode& node, Isa isa);        // MEM_INDEX PEER_GATE HIVE
KernelFn select_moe(PreparedNode& node, Isa isa);           // MOE_FFN
KernelFn select_vq_decode(PreparedNode& node, Isa isa);     // VQ_DECODE

bool check_rows_indices(const PreparedNode& node, char* message, size_t cap);
bool check_attention_indices(const PreparedNode& node, char* message, size_t cap);
bool check_memory_indices(const PreparedNode& node, char* message, size_t cap);  // TAKE_ALONG EMBEDDING_BAG
bool check_product_key_indices(const PreparedNode& node, char* message, size_t cap);  // PK_PAIR_SCORES
bool check_lookup_indices(const PreparedNode& node, char* message, size_t cap);  // MEM_INDEX PEER_GATE HIVE
bool check_moe_indices(const PreparedNode& node, char* message, size_t cap);     // MOE_FFN
bool check_vq_indices(const PreparedNode& node, char* message, size_t cap);      // VQ_DECODE: coarse list numbers

}  // namespace mnemo_cpu
