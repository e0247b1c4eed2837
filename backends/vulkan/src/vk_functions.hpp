// Vulkan entry points, loaded at run time from libvulkan.so.1 (VK_NO_PROTOTYPES): the module
// must load, and report zero devices, on a machine without any Vulkan loader or driver.
#pragma once
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace mnemo_vk {

// X-macro lists: (name). Global ones come from vkGetInstanceProcAddr(NULL, ...).
#define MNEMO_VK_GLOBAL_FUNCTIONS(X) \
    X(vkCreateInstance)              \
    X(vkEnumerateInstanceVersion)    \
    X(vkEnumerateInstanceExtensionProperties)

#define MNEMO_VK_INSTANCE_FUNCTIONS(X)              \
    X(vkDestroyInstance)                            \
    X(vkEnumeratePhysicalDevices)                   \
    X(vkGetPhysicalDeviceProperties)                \
    X(vkGetPhysicalDeviceProperties2)               \
    X(vkGetPhysicalDeviceFeatures2)                 \
    X(vkGetPhysicalDeviceMemoryProperties)          \
    X(vkGetPhysicalDeviceMemoryProperties2)         \
    X(vkGetPhysicalDeviceQueueFamilyProperties)     \
    X(vkGetPhysicalDeviceExternalBufferProperties)  \
    X(vkEnumerateDeviceExtensionProperties)         \
    X(vkCreateDevice)                               \
    X(vkGetDeviceProcAddr)

#define MNEMO_VK_DEVICE_FUNCTIONS(X)       \
    X(vkDestroyDevice)                     \
    X(vkGetDeviceQueue)                    \
    X(vkDeviceWaitIdle)                    \
    X(vkQueueSubmit)                       \
    X(vkQueueWaitIdle)                     \
    X(vkAllocateMemory)                    \
    X(vkFreeMemory)                        \
    X(vkMapMemory)                         \
    X(vkUnmapMemory)                       \
    X(vkCreateBuffer)                      \
    X(vkDestroyBuffer)                     \
    X(vkGetBufferMemoryRequirements)       \
    X(vkBindBufferMemory)                  \
    X(vkGetBufferDeviceAddress)            \
    X(vkCreateCommandPool)                 \
    X(vkDestroyCommandPool)                \
    X(vkAllocateCommandBuffers)            \
    X(vkFreeCommandBuffers)                \
    X(vkBeginCommandBuffer)                \
    X(vkEndCommandBuffer)                  \
    X(vkResetCommandBuffer)                \
    X(vkCmdBindPipeline)                   \
    X(vkCmdBindDescriptorSets)             \
    X(vkCmdPushConstants)                  \
    X(vkCmdDispatch)                       \
    X(vkCmdPipelineBarrier)                \
    X(vkCmdCopyBuffer)                     \
    X(vkCmdFillBuffer)                     \
    X(vkCmdWriteTimestamp)                 \
    X(vkCmdResetQueryPool)                 \
    X(vkCreateFence)                       \
    X(vkDestroyFence)                      \
    X(vkWaitForFences)                     \
    X(vkResetFences)                       \
    X(vkCreateShaderModule)                \
    X(vkDestroyShaderModule)               \
    X(vkCreateComputePipelines)            \
    X(vkDestroyPipeline)                   \
    X(vkCreatePipelineLayout)              \
    X(vkDestroyPipelineLayout)             \
    X(vkCreatePipelineCache)               \
    X(vkDestroyPipelineCache)              \
    X(vkGetPipelineCacheData)              \
    X(vkCreateDescriptorSetLayout)         \
    X(vkDestroyDescriptorSetLayout)        \
    X(vkCreateDescriptorPool)              \
    X(vkDestroyDescriptorPool)             \
    X(vkAllocateDescriptorSets)            \
    X(vkUpdateDescriptorSets)              \
    X(vkCreateQueryPool)                   \
    X(vkDestroyQueryPool)                  \
    X(vkGetQueryPoolResults)

// Entry points of optional device extensions: nullptr when the extension is absent (or was not
// enabled); loading never fails for these, users check the pointer.
#define MNEMO_VK_OPTIONAL_DEVICE_FUNCTIONS(X) \
    X(vkGetMemoryHostPointerPropertiesEXT)  /* VK_EXT_external_memory_host */

#define MNEMO_VK_DECLARE(name) PFN_##name name = nullptr;

struct GlobalFunctions {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
    MNEMO_VK_GLOBAL_FUNCTIONS(MNEMO_VK_DECLARE)
    MNEMO_VK_INSTANCE_FUNCTIONS(MNEMO_VK_DECLARE)
};

struct DeviceFunctions {
    MNEMO_VK_DEVICE_FUNCTIONS(MNEMO_VK_DECLARE)
    MNEMO_VK_OPTIONAL_DEVICE_FUNCTIONS(MNEMO_VK_DECLARE)
};

// A zeroed Vulkan info struct with its sType set.
template <class T>
T vk_struct(VkStructureType type) {
    T v{};
    v.sType = type;
    return v;
}

// Opens libvulkan.so.1 once per process. Returns nullptr (and the reason in *why) when there is
// no loader; never throws.
const GlobalFunctions* load_global_functions(std::string* why);
// Fills the instance-level pointers of *g for `instance`; false when one is missing.
bool load_instance_functions(GlobalFunctions* g, VkInstance instance, std::string* why);
// Fills the required device-level pointers (false when one is missing) and the optional ones
// (left nullptr when the driver does not offer them).
bool load_device_functions(const GlobalFunctions& g, VkDevice device, DeviceFunctions* d, std::string* why);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc. for messages ("VkResult <n>" for a code it does not name).
std::string result_name(VkResult r);
// "<what> failed: <result_name>".
std::string vk_fail(const char* what, VkResult r);

}  // namespace mnemo_vk
