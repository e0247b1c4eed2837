// Host buffers of one context. A buffer handle is its base address (as the ABI requires for host
// backends); the table remembers each buffer's size, so that tensors and copies can be bounds
// checked, and whether the memory is ours (aligned_alloc) or wrapped caller memory (mmapped
// weights), which is never written or freed.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "mnemo/abi/mnemo_abi.h"

namespace mnemo_cpu {

struct BufferRecord {
    uint64_t size = 0;
    bool owned = false;  // false: wraps host memory given to buffer_from_host (read-only)
};

class BufferTable {
public:
    BufferTable() = default;
    ~BufferTable();
    BufferTable(const BufferTable&) = delete;
    BufferTable& operator=(const BufferTable&) = delete;

    mnemo_status alloc(uint64_t size, void** out, mnemo_error* err);
    mnemo_status wrap(void* host, uint64_t size, void** out, mnemo_error* err);
    void release(void* buffer);
    mnemo_status write(void* buffer, uint64_t offset, const void* src, uint64_t size, mnemo_error* err);
    mnemo_status read(void* buffer, uint64_t offset, void* dst, uint64_t size, mnemo_error* err) const;

    const BufferRecord* find(const void* buffer) const;

private:
    std::unordered_map<const void*, BufferRecord> records_;
};

// Writes a message into err (when not null) and returns status.
mnemo_status set_error(mnemo_error* err, mnemo_status status, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

// offset + size <= limit without overflow.
inline bool range_fits(uint64_t offset, uint64_t size, uint64_t limit) {
    return offset <= limit && size <= limit - offset;
}

}  // namespace mnemo_cpu
