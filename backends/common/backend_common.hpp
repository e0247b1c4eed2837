// Small pieces every GPU backend module needs in the same form (header-only: each module is its
// own shared library and links nothing of the others): error text for the engine, buffer range
// checks, the bad-index message, UUID formatting, and the op -> kernel table.
#pragma once
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "mnemo/abi/backend_abi.h"

namespace mnemo_backend {

inline mnemo_status set_error(mnemo_error* err, mnemo_status status, const std::string& message) {
    if (err) std::snprintf(err->message, sizeof err->message, "%s", message.c_str());
    return status;
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

// The kernel of each op, filled once by `fill` (which calls the families' register functions).
template <class Kernel>
class KernelTable {
public:
    void set(int32_t op, Kernel k) {
        if (op > 0 && op < MNEMO_OP_COUNT_) table_[op] = k;
    }
    // nullptr when the op has no kernel.
    const Kernel* get(int32_t op, void (*fill)()) {
        std::call_once(once_, fill);
        if (op <= 0 || op >= MNEMO_OP_COUNT_ || !table_[op].build) return nullptr;
        return &table_[op];
    }

private:
    Kernel table_[MNEMO_OP_COUNT_]{};
    std::once_flag once_;
};

}  // namespace mnemo_backend
