// Small pieces every backend module needs in the same form (header-only: each module is its own
// shared library and links nothing of the others): error text for the engine, buffer range
// checks, the bad-index message, UUID formatting, and the op -> kernel table. C++17, because the
// CUDA module's kernels (nvcc) include it too; node_support.hpp holds the C++20 host side.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "mnemo/abi/backend_abi.h"

namespace mnemo_backend {

inline mnemo_status set_error(mnemo_error* err, mnemo_status status, const std::string& message) {
    if (err) std::snprintf(err->message, sizeof err->message, "%s", message.c_str());
    return status;
}

// A switch from the environment: set, non-empty and not "0".
inline bool env_on(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::strcmp(v, "0") != 0;
}

// "" when [offset, offset + size) lies inside a buffer of `buffer_size` bytes, else the message.
inline std::string range_error(const char* access, uint64_t offset, uint64_t size, uint64_t buffer_size) {
    if (offset <= buffer_size && size <= buffer_size - offset) return "";
    return std::string(access) + " of " + std::to_string(size) + " bytes at offset " + std::to_string(offset) +
           " is outside the " + std::to_string(buffer_size) + "-byte buffer";
}

inline std::string node_label(int32_t op, size_t index) {
    return std::string(mnemo_op_name(op)) + " (node " + std::to_string(index) + ")";
}

// What a run reports when a kernel met an index outside 0..limit-1.
inline std::string bad_index_message(int32_t op, size_t node, int32_t value, int32_t limit) {
    return node_label(op, node) + ": index " + std::to_string(value) + " is outside 0.." + std::to_string(limit - 1);
}

inline std::string format_uuid(const uint8_t u[16]) {
    char s[40];
    std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
                  u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    return s;
}

// Elements and bytes of a tensor as a backend sees it (contiguous).
inline uint64_t numel(const mnemo_tensor& t) {
    uint64_t n = 1;
    for (int32_t i = 0; i < t.ndim; ++i) n *= static_cast<uint64_t>(t.shape[i]);
    return n;
}

// A dtype's storage unit: `elems` consecutive elements of the innermost dimension in `bytes` bytes
// (one element for the element types, a block for the block-quantized ones of mnemo_abi.h; the
// same table as mnemo::dtype_block, checked in node_support.hpp). {0, 0} for no dtype.
struct DTypeBlock {
    uint64_t elems, bytes;
};
constexpr DTypeBlock dtype_block(int32_t dtype) {
    switch (dtype) {
        case MNEMO_DTYPE_F32: return {1, 4};
        case MNEMO_DTYPE_F16: return {1, 2};
        case MNEMO_DTYPE_BF16: return {1, 2};
        case MNEMO_DTYPE_I32: return {1, 4};
        case MNEMO_DTYPE_Q8_0: return {32, 34};
        case MNEMO_DTYPE_Q4_0: return {32, 18};
        case MNEMO_DTYPE_Q4_K: return {256, 144};
        case MNEMO_DTYPE_Q5_K: return {256, 176};
        case MNEMO_DTYPE_Q6_K: return {256, 210};
        default: return {0, 0};
    }
}
constexpr bool dtype_is_quantized(int32_t dtype) { return dtype >= MNEMO_DTYPE_QUANT_FIRST_ && dtype < MNEMO_DTYPE_QUANT_END_; }

// Bytes of one element of an element type (f32/f16/bf16/i32). A block-quantized type has no
// per-element size: asking is a kernel bug (it must refuse or handle the type first), so it
// throws rather than answer a wrong size.
inline uint64_t dtype_bytes(int32_t dtype) {
    const DTypeBlock b = dtype_block(dtype);
    if (b.elems != 1) throw std::logic_error("dtype_bytes: dtype " + std::to_string(dtype) + " has no per-element size");
    return b.bytes;
}
// Bytes of a contiguous tensor: its rows of the innermost dimension, each a whole number of blocks
// (node_error checked that, and that the size fits 64 bits).
inline uint64_t nbytes(const mnemo_tensor& t) {
    if (t.ndim < 1) return 0;
    const DTypeBlock b = dtype_block(t.dtype);
    if (b.elems == 0) return 0;
    uint64_t rows = 1;
    for (int32_t i = 0; i + 1 < t.ndim; ++i) rows *= static_cast<uint64_t>(t.shape[i]);
    return rows * (static_cast<uint64_t>(t.shape[t.ndim - 1]) / b.elems) * b.bytes;
}

// One op's kernel: supports() may refuse shapes the kernels do not handle (the engine has already
// checked the op's shape rules); scratch_bytes() (optional) sizes per-node scratch; build() turns
// the node into the backend's work items through its Builder.
template <class Props, class Builder>
struct KernelT {
    bool (*supports)(const Props&, const mnemo_node&) = nullptr;
    uint64_t (*scratch_bytes)(const Props&, const mnemo_node&) = nullptr;
    void (*build)(Builder&) = nullptr;
    // The kernel reads block-quantized inputs (q8_0 ... q6_k). Without it, a node with one is
    // refused before supports() runs, naming the op and the dtype (node_support.hpp).
    bool reads_quantized = false;
    // Optional: why supports() says no, for the refusals a user can act on (a dtype mix the
    // kernels do not take, say); "" leaves the generic "not supported on this device".
    std::string (*refusal)(const Props&, const mnemo_node&) = nullptr;
};

// The kernel of each op, filled once by `fill` (which calls every family's register function:
// backends/common/kernel_table.cpp).
template <class Kernel>
class KernelTable {
public:
    void set(int32_t op, Kernel k) {
        if (op > 0 && op < MNEMO_OP_COUNT_) {
            table_[op] = k;
            present_[op] = true;
        }
    }
    // nullptr when the op has no kernel.
    const Kernel* get(int32_t op, void (*fill)()) {
        std::call_once(once_, fill);
        if (op <= 0 || op >= MNEMO_OP_COUNT_ || !present_[op]) return nullptr;
        return &table_[op];
    }

private:
    Kernel table_[MNEMO_OP_COUNT_]{};
    bool present_[MNEMO_OP_COUNT_]{};
    std::once_flag once_;
};

}  // namespace mnemo_backend
