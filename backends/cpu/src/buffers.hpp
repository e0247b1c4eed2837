// Host buffers of one context. A buffer handle is its base address (as the ABI requires for host
// backends); the table remembers each buffer's size, so that tensors and copies can be bounds
// checked, and whether the memory is ours (aligned_alloc) or wrapped caller memory (mmapped
// weights), which is never written or freed. Failures return null / false with the reason in
// `why` (the module's entry points prefix "cpu <function>: ").
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

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

    void* alloc(uint64_t size, std::string& why);
    void* wrap(void* host, uint64_t size, std::string& why);
    void release(void* buffer);
    bool write(void* buffer, uint64_t offset, const void* src, uint64_t size, std::string& why);
    bool read(void* buffer, uint64_t offset, void* dst, uint64_t size, std::string& why) const;

    const BufferRecord* find(const void* buffer) const;

private:
    std::unordered_map<const void*, BufferRecord> records_;
};

// offset + size <= limit without overflow.
inline bool range_fits(uint64_t offset, uint64_t size, uint64_t limit) {
    return offset <= limit && size <= limit - offset;
}

}  // namespace mnemo_cpu
