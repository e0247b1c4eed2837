#include <sys/mman.h>

#include "buffers.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace mnemo_cpu {

// 64 bytes: a cache line, and enough for any vector load we issue.
constexpr uint64_t kAlignment = 64;
constexpr uint64_t kHugePage = uint64_t{2} << 20;

BufferTable::~BufferTable() {
    for (auto& [ptr, rec] : records_)
        if (rec.owned) std::free(const_cast<void*>(ptr));
}

void* BufferTable::alloc(uint64_t size, std::string& why) {
    if (size > UINT64_MAX - kHugePage) {
        why = "size " + std::to_string(size) + " is too large";
        return nullptr;
    }
    // aligned_alloc wants a multiple of the alignment; a zero-size buffer still gets a unique
    // address so that it can be registered and freed like any other.
    // Large buffers (weights, KV caches, activations) are placed on 2 MiB boundaries and asked
    // for transparent huge pages: streaming a matrix through 4 KiB pages costs a TLB walk per page
    // and stops the hardware prefetchers at every page boundary.
    const uint64_t align = size >= kHugePage ? kHugePage : kAlignment;
    const uint64_t rounded = size == 0 ? align : (size + align - 1) / align * align;
    void* p = std::aligned_alloc(static_cast<size_t>(align), static_cast<size_t>(rounded));
#if defined(MADV_HUGEPAGE)
    if (p && align == kHugePage) madvise(p, static_cast<size_t>(rounded), MADV_HUGEPAGE);  // a hint: failure is fine
#endif
    if (!p) {
        why = "out of memory allocating " + std::to_string(size) + " bytes";
        return nullptr;
    }
    try {
        records_[p] = BufferRecord{size, true};
    } catch (const std::bad_alloc&) {
        std::free(p);
        throw;
    }
    return p;
}

void* BufferTable::wrap(void* host, uint64_t size, std::string& why) {
    if (records_.count(host)) {
        char text[64];
        std::snprintf(text, sizeof text, "%p", host);
        why = std::string(text) + " is already a buffer of this context";
        return nullptr;
    }
    records_[host] = BufferRecord{size, false};
    return host;
}

void BufferTable::release(void* buffer) {
    auto it = records_.find(buffer);
    if (it == records_.end()) return;
    if (it->second.owned) std::free(buffer);
    records_.erase(it);
}

namespace {

std::string overrun(uint64_t offset, uint64_t size, uint64_t limit) {
    return std::to_string(size) + " bytes at offset " + std::to_string(offset) + " exceed the buffer's " + std::to_string(limit) +
           " bytes";
}

}  // namespace

// The caller (the module's entry point) has checked that the buffer is one of ours.
bool BufferTable::write(void* buffer, uint64_t offset, const void* src, uint64_t size, std::string& why) {
    const BufferRecord* rec = find(buffer);
    if (!rec->owned) {
        why = "the buffer wraps caller memory (buffer_from_host) and is read-only";
        return false;
    }
    if (!range_fits(offset, size, rec->size)) {
        why = overrun(offset, size, rec->size);
        return false;
    }
    if (size) std::memcpy(static_cast<char*>(buffer) + offset, src, static_cast<size_t>(size));
    return true;
}

bool BufferTable::read(void* buffer, uint64_t offset, void* dst, uint64_t size, std::string& why) const {
    const BufferRecord* rec = find(buffer);
    if (!range_fits(offset, size, rec->size)) {
        why = overrun(offset, size, rec->size);
        return false;
    }
    if (size) std::memcpy(dst, static_cast<const char*>(buffer) + offset, static_cast<size_t>(size));
    return true;
}

const BufferRecord* BufferTable::find(const void* buffer) const {
    auto it = records_.find(buffer);
    return it == records_.end() ? nullptr : &it->second;
}

}  // namespace mnemo_cpu
