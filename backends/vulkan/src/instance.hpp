// The process-wide Vulkan instance and the physical devices Mnemo can use, in the order the
// backend numbers them: discrete GPUs first, then integrated, virtual, and CPU implementations
// (lavapipe/SwiftShader) last, so device 0 — the automatic choice — is never a CPU
// implementation when a real GPU exists. MNEMO_VK_VISIBLE_DEVICES="i,j" keeps only those
// indices of the driver's own enumeration order (as `vulkaninfo --summary` lists them).
// Feature switches for testing fallbacks and working around driver bugs (set to 1):
//   MNEMO_VK_DISABLE_SUBGROUPS  kernels use shared-memory reductions instead of subgroup ops
//   MNEMO_VK_DISABLE_FP16       no f16 arithmetic (f16 weights are still read and widened)
//   MNEMO_VK_DISABLE_FP64       no double arithmetic (kernels take their f32-only paths)
//   MNEMO_VK_DISABLE_HOST_IMPORT  weights are copied into device buffers even on unified memory
//                                 (VK_EXT_external_memory_host is not used)
//   MNEMO_VK_HALF_BY_INTEGER_OPS  f16 is widened by integer arithmetic, as on lavapipe for AArch64
//                                 (so that path is tested on any device)
//   MNEMO_VK_DISABLE_CPU_TUNING   a CPU implementation gets the kernel shapes of a GPU (so those
//                                 are tested on lavapipe)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "vk_functions.hpp"

namespace mnemo_vk {

// What a physical device offers that the kernels care about.
struct DeviceFeatures {
    uint32_t api_version = 0;
    uint32_t subgroup_size = 0;
    bool subgroup_arithmetic = false;  // subgroupAdd/Max in compute shaders
    bool subgroup_shuffle = false;
    bool shader_float16 = false;       // f16 arithmetic
    bool shader_int8 = false;
    bool storage_16bit = false;        // 16-bit loads from storage buffers
    bool shader_int64 = false;
    bool shader_float64 = false;       // double arithmetic (exact top-k score sums; see PK_TOPK)
    // Shaders widen f16 with integer arithmetic instead of unpackHalf2x16 (the HALF_BY_INTEGER_OPS
    // specialization constant of shaders/common.glsl): llvmpipe on AArch64 aborts compiling the
    // built-in or miscompiles it (Mesa 22.3, LLVM 15; docs/edge.md).
    bool half_by_integer_ops = false;
    bool unified_memory = false;       // integrated / CPU: device memory is host memory
    // A CPU implementation (lavapipe, SwiftShader): a subgroup is the SIMD lanes of one core and a
    // workgroup a coroutine, so kernels prefer few workgroups of one subgroup each, doing more
    // work per lane, over the many small workgroups that hide a GPU's memory latency.
    bool cpu_device = false;
    // VK_EXT_external_memory_host with buffers importable from host allocations (usable by
    // storage buffers with device addresses); the start and size of an import must be multiples
    // of host_import_alignment (minImportedHostPointerAlignment).
    bool host_import = false;
    uint64_t host_import_alignment = 0;
    // Whether an import of a read-only file mapping (the mmapped checkpoint) may be tried. Not on
    // NVIDIA's driver: it refuses those pages (vkAllocateMemory: VK_ERROR_OUT_OF_DEVICE_MEMORY),
    // and after one refusal the device creates no more pipelines (VK_ERROR_UNKNOWN; driver 580 on
    // an H100). Such memory goes into host-visible copies there (Context::import_host).
    bool host_import_file_pages = false;
    uint32_t max_shared_memory = 0;    // bytes per workgroup
    uint32_t max_workgroup_invocations = 0;
    uint32_t max_workgroup_count[3] = {};
    uint32_t max_push_constants = 0;
    uint64_t max_allocation = 0;       // maxMemoryAllocationSize
    uint64_t max_storage_range = 0;    // maxStorageBufferRange (not binding: kernels address by pointer)
    bool timestamps = false;
    float timestamp_period_ns = 1.0f;
};

// Usage of buffers bound to imported host memory (weights): kernels read them by address, and a
// buffer_read copies out of them; nothing ever writes them.
constexpr VkBufferUsageFlags kImportedBufferUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;

struct PhysicalDevice {
    VkPhysicalDevice handle = VK_NULL_HANDLE;
    uint32_t driver_index = 0;  // index in the driver's enumeration
    VkPhysicalDeviceProperties props{};
    std::string driver_name;    // "NVIDIA", "llvmpipe", ...
    std::string driver_info;
    uint8_t uuid[16] = {};
    uint32_t compute_queue_family = 0;
    uint64_t device_local_bytes = 0;
    std::string heaps;          // "heap 0: 24.0 GiB device-local; heap 1: ..."
    DeviceFeatures features;
};

struct Instance {
    const GlobalFunctions* vk = nullptr;  // nullptr when Vulkan is absent
    VkInstance handle = VK_NULL_HANDLE;
    std::vector<PhysicalDevice> devices;  // usable devices, in backend order
    std::vector<std::string> skipped;     // "<name>: why it is not usable"
    std::string error;                    // why there is no instance at all
};

// Created on first use; never throws. With no loader or driver, devices is empty.
const Instance& instance();

}  // namespace mnemo_vk
