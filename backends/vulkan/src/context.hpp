// One opened Vulkan device: queue, memory, staging, the status word kernels report bad indices
// through, and the lazily created pipelines. A context is used from one thread at a time.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "instance.hpp"
#include "vk_functions.hpp"

namespace mnemo_vk {

// A buffer handed to the engine as its opaque handle. Kernels address it by device pointer.
// The engine's byte 0 is byte base_offset of the VkBuffer: 0, except for imported host memory,
// whose import starts at the aligned page below the engine's pointer.
struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint64_t size = 0;          // bytes the engine sees
    uint64_t address = 0;       // vkGetBufferDeviceAddress: the VkBuffer's byte 0
    uint64_t base_offset = 0;
    uint8_t* mapped = nullptr;  // host pointer of the engine's byte 0 when host-visible
    bool imported = false;      // host memory the engine owns (read-only weights): never written
    bool host_copy = false;     // a host-visible copy of such memory (the driver refused the import): never written
};

// Whether weights on this device are used in place through VK_EXT_external_memory_host: only on
// unified memory (importing into a discrete GPU would make kernels read over PCIe), and not when
// MNEMO_VK_FORCE_STAGING=1 asks for the discrete-GPU path. Read when a context opens.
bool host_import_usable(const PhysicalDevice& d);

// What a kernel writes when it meets a bad index (see shaders/common.glsl).
struct KernelStatus {
    uint32_t code;  // 0: fine; 1: index out of range
    uint32_t node;  // index of the node in its graph
    int32_t value;  // the offending value
    int32_t limit;  // the valid range is 0..limit-1
};

struct PipelineKey {
    std::string shader;
    std::vector<uint32_t> spec;  // specialization constants 0..n-1
    bool operator<(const PipelineKey& o) const { return shader != o.shader ? shader < o.shader : spec < o.spec; }
};

class Context {
public:
    // Throws std::runtime_error with the reason.
    explicit Context(int32_t device_index);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    // How messages name this backend ("... is not supported by the Vulkan backend yet").
    static constexpr const char* kTitle = "Vulkan";

    const PhysicalDevice& physical() const { return *physical_; }
    const DeviceFeatures& features() const { return physical_->features; }
    const DeviceFunctions& vk() const { return vk_; }
    VkDevice device() const { return device_; }

    // Vulkan objects are not bound to a thread: nothing to make current (the CUDA backend has to).
    bool activate(std::string&) const { return true; }

    // Buffers (errors as text in why; nullptr / false on failure).
    Buffer* alloc(uint64_t size, std::string& why);
    // Binds a buffer to the host memory [host, host + size), which the caller keeps alive and
    // unchanged; fails (nullptr, why) when the device lacks VK_EXT_external_memory_host or the
    // driver refuses the pointer. On unified memory (host_import_usable) the engine imports every
    // weight so; elsewhere only memory tables it was asked to keep in host memory.
    // A driver that takes the pointer but refuses to import its pages gets a read-only copy in
    // host-visible memory instead (import_host_pages is the import itself).
    Buffer* import_host(const void* host, uint64_t size, std::string& why);
    void release(Buffer* b);
    bool owns(const void* handle) const;
    bool write(Buffer* b, uint64_t offset, const void* src, uint64_t size, std::string& why);
    bool read(Buffer* b, uint64_t offset, void* dst, uint64_t size, std::string& why);

    // Command buffers from the context's pool.
    VkCommandBuffer new_command_buffer(std::string& why);
    void free_command_buffer(VkCommandBuffer cb);
    // Submits the pending uploads and then `cb` in one batch, waits for both, and checks the
    // kernels' status word (status_out gets it; the caller turns a nonzero code into a message).
    bool run(VkCommandBuffer cb, KernelStatus* status_out, std::string& why);

    VkPipeline pipeline(const PipelineKey& key, std::string& why);
    VkPipelineLayout pipeline_layout() const { return layout_; }
    VkDescriptorSet status_set() const { return status_set_; }

    static constexpr uint32_t kPushConstantBytes = 128;

private:
    Buffer* import_host_pages(const void* host, uint64_t size, std::string& why);
    void destroy();    // releases everything; safe to call twice
    bool flush(std::string& why);  // submit pending uploads and wait
    bool end_uploads(std::string& why);  // close the pending-upload command buffer
    bool stage_copy(VkBuffer src, uint64_t src_off, VkBuffer dst, uint64_t dst_off, uint64_t size, std::string& why);
    bool submit_wait(const VkCommandBuffer* cbs, uint32_t n, std::string& why);
    void load_pipeline_cache();
    void save_pipeline_cache();
    std::string cache_path() const;
    Buffer* make_buffer(uint64_t size, bool host_side, std::string& why);
    void destroy_buffer(Buffer* b);

    const PhysicalDevice* physical_ = nullptr;
    DeviceFunctions vk_{};
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkMemoryPropertyFlags memory_flags_[VK_MAX_MEMORY_TYPES] = {};
    uint32_t memory_type_count_ = 0;
    bool map_device_buffers_ = false;  // UMA: kernels' buffers are host-visible, read/written in place
    bool import_host_ = false;         // VK_EXT_external_memory_host enabled and its entry point loaded
    bool import_refused_ = false;      // the driver refused an import: copy into host-visible memory from then on

    // Staging for device-only buffers: writes are copied here and uploaded with the next
    // submission (no wait for small writes); reads copy through it and wait.
    Buffer* staging_ = nullptr;
    uint64_t staging_used_ = 0;
    VkCommandBuffer upload_cb_ = VK_NULL_HANDLE;
    bool upload_open_ = false;

    Buffer* status_ = nullptr;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
    VkDescriptorSet status_set_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    bool cache_dirty_ = false;
    std::map<PipelineKey, VkPipeline> pipelines_;
    std::map<const void*, std::unique_ptr<Buffer>> buffers_;
};

}  // namespace mnemo_vk
