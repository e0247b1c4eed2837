#include "vk_functions.hpp"

#include <dlfcn.h>

#include <mutex>

namespace mnemo_vk {

namespace {
GlobalFunctions g_functions;
std::string g_load_error;
bool g_loaded = false;
std::once_flag g_once;

void load_once() {
    // The loader's soname; a development symlink (libvulkan.so) is not needed at run time.
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* e = dlerror();
        g_load_error = std::string("no Vulkan loader (libvulkan.so.1): ") + (e ? e : "dlopen failed");
        return;
    }
    g_functions.vkGetInstanceProcAddr =
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!g_functions.vkGetInstanceProcAddr) {
        g_load_error = "libvulkan.so.1 has no vkGetInstanceProcAddr";
        return;
    }
#define MNEMO_VK_LOAD_GLOBAL(name) \
    g_functions.name = reinterpret_cast<PFN_##name>(g_functions.vkGetInstanceProcAddr(nullptr, #name));
    MNEMO_VK_GLOBAL_FUNCTIONS(MNEMO_VK_LOAD_GLOBAL)
#undef MNEMO_VK_LOAD_GLOBAL
    if (!g_functions.vkCreateInstance || !g_functions.vkEnumerateInstanceVersion) {
        g_load_error = "the Vulkan loader is older than Vulkan 1.1 (no vkEnumerateInstanceVersion)";
        return;
    }
    g_loaded = true;  // the library stays open for the life of the process
}
}  // namespace

const GlobalFunctions* load_global_functions(std::string* why) {
    std::call_once(g_once, load_once);
    if (!g_loaded) {
        if (why) *why = g_load_error;
        return nullptr;
    }
    return &g_functions;
}

bool load_instance_functions(GlobalFunctions* g, VkInstance instance, std::string* why) {
#define MNEMO_VK_LOAD_INSTANCE(name)                                                          \
    g->name = reinterpret_cast<PFN_##name>(g->vkGetInstanceProcAddr(instance, #name));       \
    if (!g->name) {                                                                          \
        if (why) *why = "the Vulkan loader lacks " #name;                                    \
        return false;                                                                        \
    }
    MNEMO_VK_INSTANCE_FUNCTIONS(MNEMO_VK_LOAD_INSTANCE)
#undef MNEMO_VK_LOAD_INSTANCE
    return true;
}

bool load_device_functions(const GlobalFunctions& g, VkDevice device, DeviceFunctions* d, std::string* why) {
#define MNEMO_VK_LOAD_DEVICE(name)                                                      \
    d->name = reinterpret_cast<PFN_##name>(g.vkGetDeviceProcAddr(device, #name));      \
    if (!d->name) {                                                                    \
        if (why) *why = "the Vulkan driver lacks " #name;                              \
        return false;                                                                  \
    }
    MNEMO_VK_DEVICE_FUNCTIONS(MNEMO_VK_LOAD_DEVICE)
#undef MNEMO_VK_LOAD_DEVICE
#define MNEMO_VK_LOAD_OPTIONAL(name) d->name = reinterpret_cast<PFN_##name>(g.vkGetDeviceProcAddr(device, #name));
    MNEMO_VK_OPTIONAL_DEVICE_FUNCTIONS(MNEMO_VK_LOAD_OPTIONAL)
#undef MNEMO_VK_LOAD_OPTIONAL
    return true;
}

std::string vk_fail(const char* what, VkResult r) { return std::string(what) + " failed: " + result_name(r); }

std::string result_name(VkResult r) {
    switch (r) {
        case VK_SUCCESS: return "VK_SUCCESS";
        case VK_NOT_READY: return "VK_NOT_READY";
        case VK_TIMEOUT: return "VK_TIMEOUT";
        case VK_INCOMPLETE: return "VK_INCOMPLETE";
        case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
        case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
        case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
        case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
        case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
        case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
        case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
        case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
        case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
        case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
        case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
        case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
        case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
        case VK_ERROR_INVALID_EXTERNAL_HANDLE: return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
        case VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS: return "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS";
        case VK_ERROR_FRAGMENTATION: return "VK_ERROR_FRAGMENTATION";
        case VK_ERROR_UNKNOWN: return "VK_ERROR_UNKNOWN";
        case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
        case VK_PIPELINE_COMPILE_REQUIRED: return "VK_PIPELINE_COMPILE_REQUIRED";
        default: return "VkResult " + std::to_string(static_cast<int>(r));  // a code this list lacks, by number
    }
}

}  // namespace mnemo_vk
