// Context's import of host memory (VK_EXT_external_memory_host): memory tables kept in host
// memory on any device, and every weight on unified memory; where the driver will not import, a
// read-only copy in host-visible memory.
#include "context.hpp"

#include "backend_common.hpp"

#include <cstring>

namespace mnemo_vk {

// The import covers whole alignment units: from the unit holding `host` to the end of the unit
// holding its last byte. Neighbouring weights share units, so a page may be imported by two
// buffers (each its own VkDeviceMemory; the spec sets no rule against overlapping imports, and a
// driver that refuses one makes this context copy from then on, below).
Buffer* Context::import_host(const void* host, uint64_t size, std::string& why) {
    if (!import_host_ || !host || size == 0) return import_host_pages(host, size, why);  // says why not
    if (!import_refused_) {
        if (Buffer* b = import_host_pages(host, size, why)) return b;
        import_refused_ = true;  // later buffers of this context go straight to copies
    } else {
        why = "this driver does not import such memory";
    }
    // A driver that refuses the import (NVIDIA's is known to, DeviceFeatures::host_import_file_pages,
    // and is not even asked) gets the bytes once in host-visible memory of its own: still host
    // memory that kernels read over the bus, as --memory-tables host asks, and as read-only as an
    // import; the cost is a second copy in RAM.
    std::string copy_why;
    Buffer* c = make_buffer(size, true, copy_why);
    if (!c) {
        why += "; copying it into host-visible memory failed too: " + copy_why;
        return nullptr;
    }
    std::memcpy(c->mapped, host, size);
    c->host_copy = true;
    buffers_[c].reset(c);
    return c;
}

Buffer* Context::import_host_pages(const void* host, uint64_t size, std::string& why) {
    if (!import_host_) {
        why = "this context does not import host memory";
        return nullptr;
    }
    if (!host || size == 0) {
        why = "nothing to import";
        return nullptr;
    }
    const uint64_t align = features().host_import_alignment;
    const auto addr = reinterpret_cast<uintptr_t>(host);
    const uintptr_t begin = addr & ~static_cast<uintptr_t>(align - 1);
    const uint64_t head = addr - begin;
    if (size > features().max_allocation || features().max_allocation - size < head + align) {
        why = "an import of " + std::to_string(size) + " bytes exceeds the device's maxMemoryAllocationSize";
        return nullptr;
    }
    const uint64_t span = (head + size + align - 1) & ~(align - 1);
    void* base = reinterpret_cast<void*>(begin);

    // Which memory types can hold this pointer (none: e.g. a mapping the driver cannot pin).
    auto hpp = vk_struct<VkMemoryHostPointerPropertiesEXT>(VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT);
    VkResult r = vk_.vkGetMemoryHostPointerPropertiesEXT(device_, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                                                         base, &hpp);
    if (r != VK_SUCCESS || hpp.memoryTypeBits == 0) {
        why = r != VK_SUCCESS ? vk_fail("vkGetMemoryHostPointerPropertiesEXT", r) : "no memory type can import this pointer";
        return nullptr;
    }

    auto b = std::make_unique<Buffer>();
    b->size = size;
    b->base_offset = head;
    b->imported = true;
    auto ext = vk_struct<VkExternalMemoryBufferCreateInfo>(VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO);
    ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    auto bci = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    bci.pNext = &ext;
    bci.size = span;
    bci.usage = kImportedBufferUsage;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    r = vk_.vkCreateBuffer(device_, &bci, nullptr, &b->buffer);
    if (r != VK_SUCCESS) {
        why = vk_fail("vkCreateBuffer (host import)", r);
        return nullptr;
    }
    auto fail = [&](std::string message) -> Buffer* {
        why = std::move(message);
        vk_.vkDestroyBuffer(device_, b->buffer, nullptr);
        if (b->memory) vk_.vkFreeMemory(device_, b->memory, nullptr);
        return nullptr;
    };
    VkMemoryRequirements req{};
    vk_.vkGetBufferMemoryRequirements(device_, b->buffer, &req);
    const uint32_t types = req.memoryTypeBits & hpp.memoryTypeBits;
    if (req.size > span || types == 0)
        return fail(req.size > span ? "the buffer needs more memory than the import covers" : "no memory type suits both the buffer and the pointer");
    // Device-local types first: on some integrated GPUs those map host pages with the GPU's
    // preferred caching; any importable type is correct.
    int type = -1;
    for (uint32_t i = 0; i < memory_type_count_ && type < 0; ++i)
        if ((types & (1u << i)) && (memory_flags_[i] & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) type = static_cast<int>(i);
    for (uint32_t i = 0; i < memory_type_count_ && type < 0; ++i)
        if (types & (1u << i)) type = static_cast<int>(i);

    auto import = vk_struct<VkImportMemoryHostPointerInfoEXT>(VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT);
    import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    import.pHostPointer = base;
    auto flags = vk_struct<VkMemoryAllocateFlagsInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    flags.pNext = &import;
    auto mai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    mai.pNext = &flags;
    mai.allocationSize = span;
    mai.memoryTypeIndex = static_cast<uint32_t>(type);
    r = vk_.vkAllocateMemory(device_, &mai, nullptr, &b->memory);
    if (r != VK_SUCCESS) {
        b->memory = VK_NULL_HANDLE;
        return fail(vk_fail("vkAllocateMemory (host import)", r));
    }
    r = vk_.vkBindBufferMemory(device_, b->buffer, b->memory, 0);
    if (r != VK_SUCCESS) return fail(vk_fail("vkBindBufferMemory (host import)", r));
    auto ai = vk_struct<VkBufferDeviceAddressInfo>(VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
    ai.buffer = b->buffer;
    b->address = vk_.vkGetBufferDeviceAddress(device_, &ai);
    // Reads (buffer_read) copy straight from the caller's memory.
    b->mapped = static_cast<uint8_t*>(const_cast<void*>(host));
    Buffer* out = b.release();
    buffers_[out].reset(out);
    return out;
}

}  // namespace mnemo_vk
