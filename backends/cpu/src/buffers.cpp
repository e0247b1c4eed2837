#include <sys/mman.h>

#include "buffers.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace mnemo_cpu {

// 64 bytes: a cache line, and enough for any vector load we issue.
constexpr uint64_t kAlignment = 64;
constexpr uint64_t kHugePage = uint64_t{2} << 20;

mnemo_status set_error(mnemo_error* err, mnemo_status status, const char* fmt, ...) {
    if (err) {
        va_list args;
        va_start(args, fmt);
        std::vsnprintf(err->message, sizeof(err->message), fmt, args);
        va_end(args);
    }
    return status;
}

BufferTable::~BufferTable() {
    for (auto& [ptr, rec] : records_)
        if (rec.owned) std::free(const_cast<void*>(ptr));
}

mnemo_status BufferTable::alloc(uint64_t size, void** out, mnemo_error* err) {
    if (size > UINT64_MAX - kAlignment)
        return set_error(err, MNEMO_ERR_INVALID, "cpu buffer_alloc: size %llu is too large",
                         static_cast<unsigned long long>(size));
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
    if (!p)
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cpu buffer_alloc: out of memory allocating %llu bytes",
                         static_cast<unsigned long long>(size));
    try {
        records_[p] = BufferRecord{size, true};
    } catch (const std::bad_alloc&) {
        std::free(p);
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cpu buffer_alloc: out of memory");
    }
    *out = p;
    return MNEMO_OK;
}

mnemo_status BufferTable::wrap(void* host, uint64_t size, void** out, mnemo_error* err) {
    if (!host) return set_error(err, MNEMO_ERR_INVALID, "cpu buffer_from_host: host pointer is null");
    auto it = records_.find(host);
    if (it != records_.end())
        return set_error(err, MNEMO_ERR_INVALID, "cpu buffer_from_host: %p is already a buffer of this context",
                         host);
    try {
        records_[host] = BufferRecord{size, false};
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cpu buffer_from_host: out of memory");
    }
    *out = host;
    return MNEMO_OK;
}

void BufferTable::release(void* buffer) {
    auto it = records_.find(buffer);
    if (it == records_.end()) return;
    if (it->second.owned) std::free(buffer);
    records_.erase(it);
}

mnemo_status BufferTable::write(void* buffer, uint64_t offset, const void* src, uint64_t size, mnemo_error* err) {
    const BufferRecord* rec = find(buffer);
    if (!rec) return set_error(err, MNEMO_ERR_INVALID, "cpu buffer_write: %p is not a buffer of this context", buffer);
    if (!rec->owned)
        return set_error(err, MNEMO_ERR_INVALID,
                         "cpu buffer_write: buffer %p wraps caller memory (buffer_from_host) and is read-only",
                         buffer);
    if (!range_fits(offset, size, rec->size))
        return set_error(err, MNEMO_ERR_INVALID,
                         "cpu buffer_write: %llu bytes at offset %llu exceed the buffer's %llu bytes",
                         static_cast<unsigned long long>(size), static_cast<unsigned long long>(offset),
                         static_cast<unsigned long long>(rec->size));
    if (size) std::memcpy(static_cast<char*>(buffer) + offset, src, static_cast<size_t>(size));
    return MNEMO_OK;
}

mnemo_status BufferTable::read(void* buffer, uint64_t offset, void* dst, uint64_t size, mnemo_error* err) const {
    const BufferRecord* rec = find(buffer);
    if (!rec) return set_error(err, MNEMO_ERR_INVALID, "cpu buffer_read: %p is not a buffer of this context", buffer);
    if (!range_fits(offset, size, rec->size))
        return set_error(err, MNEMO_ERR_INVALID,
                         "cpu buffer_read: %llu bytes at offset %llu exceed the buffer's %llu bytes",
                         static_cast<unsigned long long>(size), static_cast<unsigned long long>(offset),
                         static_cast<unsigned long long>(rec->size));
    if (size) std::memcpy(dst, static_cast<const char*>(buffer) + offset, static_cast<size_t>(size));
    return MNEMO_OK;
}

const BufferRecord* BufferTable::find(const void* buffer) const {
    auto it = records_.find(buffer);
    return it == records_.end() ? nullptr : &it->second;
}

}  // namespace mnemo_cpu
