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
inline uint64_t dtype_bytes(int32_t dtype) { return dtype == MNEMO_DTYPE_F16 || dtype == MNEMO_DTYPE_BF16 ? 2 : 4; }
inline uint64_t nbytes(const mnemo_tensor& t) { return numel(t) * dtype_bytes(t.dtype); }

// One op's kernel: supports() may refuse shapes the kernels do not handle (the engine has already
// checked the op's shape rules); scratch_bytes() (optional) sizes per-node scratch; build() turns
// the node into the backend's work items through its Builder.
template <class Props, class Builder>
struct KernelT {
    bool (*supports)(const Props&, const mnemo_node&) = nullptr;
    uint64_t (*scratch_bytes)(const Props&, const mnemo_node&) = nullptr;
    void (*build)(Builder&) = nullptr;
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
