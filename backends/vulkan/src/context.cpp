#include "context.hpp"

#include "backend_common.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "embedded_shaders.hpp"

namespace mnemo_vk {

namespace {

constexpr uint64_t kStagingBytes = 32ull << 20;  // uploads of weights go through in 32 MiB pieces

void check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw std::runtime_error(vk_fail(what, r));
}

using mnemo_backend::env_on;

}  // namespace

bool host_import_usable(const PhysicalDevice& d) {
    return d.features.host_import && d.features.unified_memory && !env_on("MNEMO_VK_FORCE_STAGING");
}

Context::Context(int32_t device_index) {
    const Instance& in = instance();
    if (!in.vk) throw std::runtime_error("Vulkan is not available: " + in.error);
    if (device_index < 0 || device_index >= static_cast<int32_t>(in.devices.size()))
        throw std::runtime_error("device " + std::to_string(device_index) + " does not exist (" +
                                 std::to_string(in.devices.size()) + " usable Vulkan device(s))");
    physical_ = &in.devices[static_cast<size_t>(device_index)];
    const GlobalFunctions& g = *in.vk;

    // Features we use: device addresses always; the optional ones only when present.
    auto f12 = vk_struct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    f12.bufferDeviceAddress = VK_TRUE;
    f12.shaderFloat16 = features().shader_float16;
    f12.shaderInt8 = features().shader_int8;
    auto f11 = vk_struct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    f11.storageBuffer16BitAccess = features().storage_16bit;
    f11.pNext = &f12;
    auto f2 = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    f2.features.shaderInt64 = features().shader_int64;
    f2.features.shaderFloat64 = features().shader_float64;
    f2.pNext = &f11;

    const float priority = 1.0f;
    auto qci = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    qci.queueFamilyIndex = physical_->compute_queue_family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    auto dci = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    dci.pNext = &f2;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    // The extension is enabled wherever it exists: weights are imported in place only where
    // host_import_usable() (the engine asks through MNEMO_CAP_IMPORT_HOST), but memory tables kept
    // in host memory (--memory-tables host, MNEMO_CAP_MAP_HOST) are imported on any device.
    const char* import_extension = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    const bool import = physical_->features.host_import;
    if (import) {
        dci.enabledExtensionCount = 1;
        dci.ppEnabledExtensionNames = &import_extension;
    }
    check(g.vkCreateDevice(physical_->handle, &dci, nullptr, &device_), "vkCreateDevice");
    std::string why;
    if (!load_device_functions(g, device_, &vk_, &why)) {
        // vkDestroyDevice may be the missing one; nothing else was created.
        throw std::runtime_error(why);
    }
    import_host_ = import && vk_.vkGetMemoryHostPointerPropertiesEXT;
    // MNEMO_VK_COPY_HOST_MEMORY=1 takes NVIDIA's path on any device (tests); read when a context
    // opens, as MNEMO_VK_FORCE_STAGING.
    import_refused_ = import_host_ && (!physical_->features.host_import_file_pages || env_on("MNEMO_VK_COPY_HOST_MEMORY"));
    try {
        vk_.vkGetDeviceQueue(device_, physical_->compute_queue_family, 0, &queue_);

        auto pci = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
        pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        pci.queueFamilyIndex = physical_->compute_queue_family;
        check(vk_.vkCreateCommandPool(device_, &pci, nullptr, &pool_), "vkCreateCommandPool");
        auto fci = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
        check(vk_.vkCreateFence(device_, &fci, nullptr, &fence_), "vkCreateFence");

        VkPhysicalDeviceMemoryProperties mem{};
        g.vkGetPhysicalDeviceMemoryProperties(physical_->handle, &mem);
        memory_type_count_ = mem.memoryTypeCount;
        for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) memory_flags_[i] = mem.memoryTypes[i].propertyFlags;
        // Unified memory: kernels' buffers are mapped and read/written in place, no staging.
        // MNEMO_VK_FORCE_STAGING=1 takes the discrete-GPU path anyway (to test it on lavapipe).
        map_device_buffers_ = features().unified_memory && !env_on("MNEMO_VK_FORCE_STAGING");

        status_ = make_buffer(sizeof(KernelStatus), true, why);
        if (!status_) throw std::runtime_error("status buffer: " + why);
        std::memset(status_->mapped, 0, sizeof(KernelStatus));

        VkDescriptorSetLayoutBinding binding{};
        binding.binding = 0;
        binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        binding.descriptorCount = 1;
        binding.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        auto slci = vk_struct<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
        slci.bindingCount = 1;
        slci.pBindings = &binding;
        check(vk_.vkCreateDescriptorSetLayout(device_, &slci, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
        VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
        auto dpci = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
        dpci.maxSets = 1;
        dpci.poolSizeCount = 1;
        dpci.pPoolSizes = &ps;
        check(vk_.vkCreateDescriptorPool(device_, &dpci, nullptr, &descriptor_pool_), "vkCreateDescriptorPool");
        auto dsai = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
        dsai.descriptorPool = descriptor_pool_;
        dsai.descriptorSetCount = 1;
        dsai.pSetLayouts = &set_layout_;
        check(vk_.vkAllocateDescriptorSets(device_, &dsai, &status_set_), "vkAllocateDescriptorSets");
        VkDescriptorBufferInfo dbi{status_->buffer, 0, VK_WHOLE_SIZE};
        auto w = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
        w.dstSet = status_set_;
        w.descriptorCount = 1;
        w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w.pBufferInfo = &dbi;
        vk_.vkUpdateDescriptorSets(device_, 1, &w, 0, nullptr);

        VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
        auto plci = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
        plci.setLayoutCount = 1;
        plci.pSetLayouts = &set_layout_;
        plci.pushConstantRangeCount = 1;
        plci.pPushConstantRanges = &range;
        check(vk_.vkCreatePipelineLayout(device_, &plci, nullptr, &layout_), "vkCreatePipelineLayout");
        load_pipeline_cache();
    } catch (...) {
        destroy();
        throw;
    }
}

Context::~Context() { destroy(); }

void Context::destroy() {
    if (!device_) return;
    vk_.vkDeviceWaitIdle(device_);
    save_pipeline_cache();
    for (auto& [key, p] : pipelines_) vk_.vkDestroyPipeline(device_, p, nullptr);
    pipelines_.clear();
    if (cache_) vk_.vkDestroyPipelineCache(device_, cache_, nullptr);
    if (layout_) vk_.vkDestroyPipelineLayout(device_, layout_, nullptr);
    if (descriptor_pool_) vk_.vkDestroyDescriptorPool(device_, descriptor_pool_, nullptr);
    if (set_layout_) vk_.vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
    for (auto& [h, b] : buffers_) destroy_buffer(b.get());
    buffers_.clear();
    if (staging_) destroy_buffer(staging_);
    delete staging_;
    if (status_) destroy_buffer(status_);
    delete status_;
    if (upload_cb_) vk_.vkFreeCommandBuffers(device_, pool_, 1, &upload_cb_);
    if (fence_) vk_.vkDestroyFence(device_, fence_, nullptr);
    if (pool_) vk_.vkDestroyCommandPool(device_, pool_, nullptr);
    vk_.vkDestroyDevice(device_, nullptr);
    device_ = VK_NULL_HANDLE;
    staging_ = status_ = nullptr;
}

// ------------------------------------------------------------------ buffers

Buffer* Context::make_buffer(uint64_t size, bool host_side, std::string& why) {
    if (size > features().max_allocation) {
        why = "a buffer of " + std::to_string(size) + " bytes exceeds the device's maxMemoryAllocationSize (" +
              std::to_string(features().max_allocation) + " bytes)";
        return nullptr;
    }
    auto b = std::make_unique<Buffer>();
    b->size = size;
    auto bci = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    bci.size = std::max<uint64_t>(size, 4);
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkResult r = vk_.vkCreateBuffer(device_, &bci, nullptr, &b->buffer);
    if (r != VK_SUCCESS) {
        why = vk_fail("vkCreateBuffer", r);
        return nullptr;
    }
    VkMemoryRequirements req{};
    vk_.vkGetBufferMemoryRequirements(device_, b->buffer, &req);

    // Preference lists: host-side buffers (staging, status) want coherent host memory; kernel
    // buffers want device-local memory, host-visible too on unified-memory devices.
    const bool mapped = host_side || map_device_buffers_;
    std::vector<VkMemoryPropertyFlags> wants;
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if (host_side) wants = {host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, host};
    else if (mapped) wants = {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | host, host};
    else wants = {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0};
    r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    for (VkMemoryPropertyFlags want : wants) {
        for (uint32_t i = 0; i < memory_type_count_; ++i) {
            if (!(req.memoryTypeBits & (1u << i)) || (memory_flags_[i] & want) != want) continue;
            if (mapped && (memory_flags_[i] & host) != host) continue;
            auto flags = vk_struct<VkMemoryAllocateFlagsInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
            flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
            auto mai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
            mai.pNext = &flags;
            mai.allocationSize = req.size;
            mai.memoryTypeIndex = i;
            r = vk_.vkAllocateMemory(device_, &mai, nullptr, &b->memory);
            if (r == VK_SUCCESS) break;
        }
        if (r == VK_SUCCESS) break;
    }
    if (r != VK_SUCCESS) {
        why = "cannot allocate " + std::to_string(size) + " bytes of " + (mapped ? "host-visible" : "device-local") +
              " memory: " + result_name(r);
        vk_.vkDestroyBuffer(device_, b->buffer, nullptr);
        return nullptr;
    }
    r = vk_.vkBindBufferMemory(device_, b->buffer, b->memory, 0);
    if (r == VK_SUCCESS && mapped) r = vk_.vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, reinterpret_cast<void**>(&b->mapped));
    if (r != VK_SUCCESS) {
        why = vk_fail(mapped ? "vkMapMemory" : "vkBindBufferMemory", r);
        vk_.vkDestroyBuffer(device_, b->buffer, nullptr);
        vk_.vkFreeMemory(device_, b->memory, nullptr);
        return nullptr;
    }
    auto ai = vk_struct<VkBufferDeviceAddressInfo>(VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
    ai.buffer = b->buffer;
    b->address = vk_.vkGetBufferDeviceAddress(device_, &ai);
    return b.release();
}

void Context::destroy_buffer(Buffer* b) {
    if (!b) return;
    if (b->mapped && !b->imported) vk_.vkUnmapMemory(device_, b->memory);
    vk_.vkDestroyBuffer(device_, b->buffer, nullptr);
    vk_.vkFreeMemory(device_, b->memory, nullptr);
}

Buffer* Context::alloc(uint64_t size, std::string& why) {
    Buffer* b = make_buffer(size, false, why);
    if (b) buffers_[b].reset(b);
    return b;
}

void Context::release(Buffer* b) {
    auto it = buffers_.find(b);
    if (it == buffers_.end()) return;
    std::string ignored;
    flush(ignored);  // a pending upload may still name this buffer
    destroy_buffer(b);
    buffers_.erase(it);
}

bool Context::owns(const void* handle) const { return buffers_.count(handle) != 0; }

bool Context::end_uploads(std::string& why) {
    const VkResult r = vk_.vkEndCommandBuffer(upload_cb_);
    upload_open_ = false;
    staging_used_ = 0;  // free again once the submission that carries the copies completes
    if (r != VK_SUCCESS) {
        why = vk_fail("vkEndCommandBuffer (uploads)", r);
        return false;
    }
    return true;
}

bool Context::flush(std::string& why) {
    if (!upload_open_) return true;
    return end_uploads(why) && submit_wait(&upload_cb_, 1, why);
}

bool Context::submit_wait(const VkCommandBuffer* cbs, uint32_t n, std::string& why) {
    auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = n;
    si.pCommandBuffers = cbs;
    VkResult r = vk_.vkQueueSubmit(queue_, 1, &si, fence_);
    if (r != VK_SUCCESS) {
        why = vk_fail("vkQueueSubmit", r);
        return false;
    }
    r = vk_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX);
    vk_.vkResetFences(device_, 1, &fence_);
    if (r != VK_SUCCESS) {
        why = vk_fail("vkWaitForFences", r);
        return false;
    }
    return true;
}

bool Context::stage_copy(VkBuffer src, uint64_t src_off, VkBuffer dst, uint64_t dst_off, uint64_t size, std::string& why) {
    if (!upload_cb_) {
        upload_cb_ = new_command_buffer(why);
        if (!upload_cb_) return false;
    }
    if (!upload_open_) {
        auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        const VkResult r = vk_.vkBeginCommandBuffer(upload_cb_, &bi);
        if (r != VK_SUCCESS) {
            why = vk_fail("vkBeginCommandBuffer (uploads)", r);
            return false;
        }
        upload_open_ = true;
    }
    VkBufferCopy region{src_off, dst_off, size};
    vk_.vkCmdCopyBuffer(upload_cb_, src, dst, 1, &region);
    return true;
}

bool Context::write(Buffer* b, uint64_t offset, const void* src, uint64_t size, std::string& why) {
    why = mnemo_backend::range_error("write", offset, size, b->size);
    if (!why.empty()) return false;
    if (b->imported || b->host_copy) {
        why = "the buffer holds weights imported from host memory (read-only); it cannot be written";
        return false;
    }
    if (size == 0) return true;
    if (b->mapped) {
        if (!flush(why)) return false;  // an earlier staged copy to the same bytes must land first
        std::memcpy(b->mapped + offset, src, size);
        return true;
    }
    if (!staging_) {
        staging_ = make_buffer(kStagingBytes, true, why);
        if (!staging_) return false;
    }
    // Small writes (graph inputs) ride along with the next submission; a large one is cut into
    // staging-sized pieces, each flushed when the ring is full.
    const auto* bytes = static_cast<const uint8_t*>(src);
    for (uint64_t done = 0; done < size;) {
        if (staging_used_ >= kStagingBytes && !flush(why)) return false;
        const uint64_t piece = std::min(size - done, kStagingBytes - staging_used_);
        std::memcpy(staging_->mapped + staging_used_, bytes + done, piece);
        if (!stage_copy(staging_->buffer, staging_used_, b->buffer, offset + done, piece, why)) return false;
        staging_used_ = (staging_used_ + piece + 15) & ~uint64_t{15};
        done += piece;
    }
    return true;
}

bool Context::read(Buffer* b, uint64_t offset, void* dst, uint64_t size, std::string& why) {
    why = mnemo_backend::range_error("read", offset, size, b->size);
    if (!why.empty()) return false;
    if (!flush(why)) return false;
    if (size == 0) return true;
    if (b->mapped) {
        std::memcpy(dst, b->mapped + offset, size);
        return true;
    }
    if (!staging_) {
        staging_ = make_buffer(kStagingBytes, true, why);
        if (!staging_) return false;
    }
    auto* out = static_cast<uint8_t*>(dst);
    for (uint64_t done = 0; done < size;) {
        const uint64_t piece = std::min(size - done, kStagingBytes);
        if (!stage_copy(b->buffer, offset + done, staging_->buffer, 0, piece, why)) return false;
        // Make the copy visible to the host before we read the mapping.
        auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
        mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vk_.vkCmdPipelineBarrier(upload_cb_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                                 nullptr, 0, nullptr);
        if (!flush(why)) return false;
        std::memcpy(out + done, staging_->mapped, piece);
        done += piece;
    }
    return true;
}

// ------------------------------------------------------------------ submission

VkCommandBuffer Context::new_command_buffer(std::string& why) {
    auto ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    const VkResult r = vk_.vkAllocateCommandBuffers(device_, &ai, &cb);
    if (r != VK_SUCCESS) {
        why = vk_fail("vkAllocateCommandBuffers", r);
        return VK_NULL_HANDLE;
    }
    return cb;
}

void Context::free_command_buffer(VkCommandBuffer cb) {
    if (cb) vk_.vkFreeCommandBuffers(device_, pool_, 1, &cb);
}

bool Context::run(VkCommandBuffer cb, KernelStatus* status_out, std::string& why) {
    std::memset(status_->mapped, 0, sizeof(KernelStatus));
    VkCommandBuffer cbs[2];
    uint32_t n = 0;
    if (upload_open_) {
        if (!end_uploads(why)) return false;
        cbs[n++] = upload_cb_;  // the graph's first barrier orders these copies before its kernels
    }
    cbs[n++] = cb;
    if (!submit_wait(cbs, n, why)) return false;
    std::memcpy(status_out, status_->mapped, sizeof(KernelStatus));
    return true;
}

// ------------------------------------------------------------------ pipelines

VkPipeline Context::pipeline(const PipelineKey& key, std::string& why) {
    auto it = pipelines_.find(key);
    if (it != pipelines_.end()) return it->second;
    const EmbeddedShader* shader = find_shader(key.shader);
    if (!shader) {
        why = "no shader variant named '" + key.shader + "' is embedded in this module";
        return VK_NULL_HANDLE;
    }
    auto smci = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    smci.codeSize = shader->word_count * 4;
    smci.pCode = shader->words;
    VkShaderModule module = VK_NULL_HANDLE;
    VkResult r = vk_.vkCreateShaderModule(device_, &smci, nullptr, &module);
    if (r != VK_SUCCESS) {
        why = vk_fail(("vkCreateShaderModule(" + key.shader + ")").c_str(), r);
        return VK_NULL_HANDLE;
    }
    // The kernel's own constants are ids 0..n-1; the device-wide ones of shaders/common.glsl
    // follow them in the data (an id a shader does not declare is ignored).
    std::vector<uint32_t> values = key.spec;
    std::vector<VkSpecializationMapEntry> entries;
    for (size_t i = 0; i < key.spec.size(); ++i)
        entries.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(i * 4), 4});
    constexpr uint32_t kHalfByIntegerOpsId = 100;  // HALF_BY_INTEGER_OPS
    entries.push_back({kHalfByIntegerOpsId, static_cast<uint32_t>(values.size() * 4), 4});
    values.push_back(features().half_by_integer_ops ? 1u : 0u);  // a bool constant is 32 bits
    VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(), values.size() * 4, values.data()};
    auto ci = vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &spec;
    ci.layout = layout_;
    VkPipeline p = VK_NULL_HANDLE;
    r = vk_.vkCreateComputePipelines(device_, cache_, 1, &ci, nullptr, &p);
    vk_.vkDestroyShaderModule(device_, module, nullptr);
    if (r != VK_SUCCESS) {
        why = vk_fail(("vkCreateComputePipelines(" + key.shader + ")").c_str(), r);
        return VK_NULL_HANDLE;
    }
    cache_dirty_ = true;
    pipelines_[key] = p;
    return p;
}

}  // namespace mnemo_vk
