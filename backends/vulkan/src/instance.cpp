#include "instance.hpp"

#include "backend_common.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>

namespace mnemo_vk {

namespace {

Instance g_instance;
std::once_flag g_once;

// The instance lives until the process ends and is deliberately never destroyed: destroying it
// makes the loader unload the driver, and allocations a driver keeps for the life of the process
// (Mesa's lavapipe keeps some) then look like leaks of ours to LeakSanitizer, from an unloaded
// module nobody can name. Contexts, buffers and pipelines are all released by close().

int type_rank(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
        case VK_PHYSICAL_DEVICE_TYPE_OTHER: return 3;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
        default: return 5;
    }
}

// MNEMO_VK_VISIBLE_DEVICES: comma-separated driver indices; unset means all.
bool visible(uint32_t driver_index) {
    const char* env = std::getenv("MNEMO_VK_VISIBLE_DEVICES");
    if (!env) return true;
    std::stringstream s(env);
    for (std::string item; std::getline(s, item, ',');) {
        char* end = nullptr;
        const long v = std::strtol(item.c_str(), &end, 10);
        if (end != item.c_str() && v == static_cast<long>(driver_index)) return true;
    }
    return false;
}

using mnemo_backend::env_on;

std::string gib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

bool has_extension(const GlobalFunctions& vk, VkPhysicalDevice pd, const char* name) {
    uint32_t n = 0;
    if (vk.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return false;
    std::vector<VkExtensionProperties> ext(n);
    if (vk.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data()) != VK_SUCCESS) return false;
    for (uint32_t i = 0; i < n; ++i)
        if (std::strcmp(ext[i].extensionName, name) == 0) return true;
    return false;
}

// Whether buffers with kImportedBufferUsage can be bound to imported host memory, and the
// alignment such imports need; false when the extension or that combination is not offered.
bool host_import_support(const GlobalFunctions& vk, VkPhysicalDevice pd, uint64_t* alignment) {
    if (!has_extension(vk, pd, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) return false;
    auto host = vk_struct<VkPhysicalDeviceExternalMemoryHostPropertiesEXT>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT);
    auto props2 = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    props2.pNext = &host;
    vk.vkGetPhysicalDeviceProperties2(pd, &props2);
    const uint64_t a = host.minImportedHostPointerAlignment;
    if (a == 0 || (a & (a - 1)) != 0) return false;  // the spec promises a power of two
    auto info = vk_struct<VkPhysicalDeviceExternalBufferInfo>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO);
    info.usage = kImportedBufferUsage;
    info.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    auto ext = vk_struct<VkExternalBufferProperties>(VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES);
    vk.vkGetPhysicalDeviceExternalBufferProperties(pd, &info, &ext);
    if (!(ext.externalMemoryProperties.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT)) return false;
    *alignment = a;
    return true;
}

// Reads the properties and features of one device; false (with why) when Mnemo cannot use it.
bool describe(const GlobalFunctions& vk, VkPhysicalDevice pd, PhysicalDevice& d, std::string& why) {
    d.handle = pd;
    vk.vkGetPhysicalDeviceProperties(pd, &d.props);
    if (VK_API_VERSION_MINOR(d.props.apiVersion) < 2 && VK_API_VERSION_MAJOR(d.props.apiVersion) == 1) {
        why = "needs Vulkan 1.2, the driver offers " + std::to_string(VK_API_VERSION_MAJOR(d.props.apiVersion)) + "." +
              std::to_string(VK_API_VERSION_MINOR(d.props.apiVersion));
        return false;
    }

    auto subgroup = vk_struct<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    auto driver = vk_struct<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
    auto ids = vk_struct<VkPhysicalDeviceIDProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES);
    auto m3 = vk_struct<VkPhysicalDeviceMaintenance3Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
    subgroup.pNext = &driver;
    driver.pNext = &ids;
    ids.pNext = &m3;
    auto props2 = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    props2.pNext = &subgroup;
    vk.vkGetPhysicalDeviceProperties2(pd, &props2);

    auto f12 = vk_struct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    auto f11 = vk_struct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    f11.pNext = &f12;
    auto f2 = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    f2.pNext = &f11;
    vk.vkGetPhysicalDeviceFeatures2(pd, &f2);
    if (!f12.bufferDeviceAddress) {
        why = "no bufferDeviceAddress (Mnemo's kernels address tensors by device pointer)";
        return false;
    }

    uint32_t n_families = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_families, nullptr);
    std::vector<VkQueueFamilyProperties> families(n_families);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_families, families.data());
    // Prefer a compute-only family (async compute on discrete GPUs), else any with compute.
    int chosen = -1;
    for (uint32_t i = 0; i < n_families; ++i)
        if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) chosen = static_cast<int>(i);
    if (chosen < 0)
        for (uint32_t i = 0; i < n_families; ++i)
            if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                chosen = static_cast<int>(i);
                break;
            }
    if (chosen < 0) {
        why = "no queue family with compute";
        return false;
    }
    d.compute_queue_family = static_cast<uint32_t>(chosen);

    DeviceFeatures& f = d.features;
    f.api_version = d.props.apiVersion;
    f.subgroup_size = subgroup.subgroupSize;
    const bool compute_subgroups = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    f.subgroup_arithmetic = compute_subgroups && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    f.subgroup_shuffle = compute_subgroups && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    f.shader_float16 = f12.shaderFloat16;
    f.shader_int8 = f12.shaderInt8;
    f.storage_16bit = f11.storageBuffer16BitAccess;
    f.shader_int64 = f2.features.shaderInt64;
    f.shader_float64 = f2.features.shaderFloat64;
    if (env_on("MNEMO_VK_DISABLE_SUBGROUPS")) f.subgroup_arithmetic = f.subgroup_shuffle = false;
    if (env_on("MNEMO_VK_DISABLE_FP16")) f.shader_float16 = false;
    if (env_on("MNEMO_VK_DISABLE_FP64")) f.shader_float64 = false;
#if defined(__aarch64__)
    f.half_by_integer_ops = driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE;
#endif
    if (env_on("MNEMO_VK_HALF_BY_INTEGER_OPS")) f.half_by_integer_ops = true;
    f.unified_memory = d.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                       d.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    f.cpu_device = d.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && !env_on("MNEMO_VK_DISABLE_CPU_TUNING");
    f.host_import = host_import_support(vk, pd, &f.host_import_alignment);
    if (env_on("MNEMO_VK_DISABLE_HOST_IMPORT")) f.host_import = false;
    f.host_import_file_pages = f.host_import && driver.driverID != VK_DRIVER_ID_NVIDIA_PROPRIETARY;
    f.max_shared_memory = d.props.limits.maxComputeSharedMemorySize;
    f.max_workgroup_invocations = d.props.limits.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; ++i) f.max_workgroup_count[i] = d.props.limits.maxComputeWorkGroupCount[i];
    f.max_push_constants = d.props.limits.maxPushConstantsSize;
    f.max_allocation = m3.maxMemoryAllocationSize;
    f.max_storage_range = d.props.limits.maxStorageBufferRange;
    f.timestamps = d.props.limits.timestampComputeAndGraphics && families[d.compute_queue_family].timestampValidBits > 0;
    f.timestamp_period_ns = d.props.limits.timestampPeriod;
    if (f.max_push_constants < 128) {
        why = "maxPushConstantsSize below 128";
        return false;
    }

    d.driver_name = driver.driverName;
    d.driver_info = driver.driverInfo;
    std::memcpy(d.uuid, ids.deviceUUID, 16);

    VkPhysicalDeviceMemoryProperties mem{};
    vk.vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    std::ostringstream heaps;
    for (uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
        const bool local = mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
        if (local) d.device_local_bytes = std::max<uint64_t>(d.device_local_bytes, mem.memoryHeaps[i].size);
        heaps << (i ? "; " : "") << "heap " << i << ": " << gib(mem.memoryHeaps[i].size) << (local ? " device-local" : " host");
    }
    d.heaps = heaps.str();
    return true;
}

void create_once() {
    Instance& in = g_instance;
    std::string why;
    const GlobalFunctions* global = load_global_functions(&why);
    if (!global) {
        in.error = why;
        return;
    }
    static GlobalFunctions functions = *global;  // instance-level pointers are filled in below
    uint32_t loader_version = 0;
    if (functions.vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS || loader_version < VK_API_VERSION_1_2) {
        in.error = "the Vulkan loader supports version " + std::to_string(VK_API_VERSION_MAJOR(loader_version)) + "." +
                   std::to_string(VK_API_VERSION_MINOR(loader_version)) + "; Mnemo needs 1.2";
        return;
    }
    auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "mnemo";
    app.pEngineName = "mnemo";
    app.apiVersion = VK_API_VERSION_1_2;
    auto ci = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    ci.pApplicationInfo = &app;
    const VkResult r = functions.vkCreateInstance(&ci, nullptr, &in.handle);
    if (r != VK_SUCCESS) {
        in.error = std::string("vkCreateInstance failed: ") + result_name(r);
        in.handle = VK_NULL_HANDLE;
        return;
    }
    if (!load_instance_functions(&functions, in.handle, &why)) {
        in.error = why;
        return;
    }
    in.vk = &functions;
    uint32_t n = 0;
    if (functions.vkEnumeratePhysicalDevices(in.handle, &n, nullptr) != VK_SUCCESS) return;
    std::vector<VkPhysicalDevice> handles(n);
    if (functions.vkEnumeratePhysicalDevices(in.handle, &n, handles.data()) != VK_SUCCESS) return;
    handles.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
        if (!visible(i)) continue;
        PhysicalDevice d;
        d.driver_index = i;
        if (describe(functions, handles[i], d, why)) in.devices.push_back(d);
        else in.skipped.push_back(std::string(d.props.deviceName) + ": " + why);
    }
    std::stable_sort(in.devices.begin(), in.devices.end(), [](const PhysicalDevice& a, const PhysicalDevice& b) {
        return type_rank(a.props.deviceType) < type_rank(b.props.deviceType);
    });
}

}  // namespace

const Instance& instance() {
    std::call_once(g_once, create_once);
    return g_instance;
}

}  // namespace mnemo_vk
