// The module's C entry point: the mnemo_backend_api table of the Vulkan backend. Each function
// is an exception-proof adapter onto Context and the graph code. With no Vulkan loader or no
// usable device the module still loads and reports zero devices.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "context.hpp"
#include "backend_common.hpp"
#include "context_adapter.hpp"
#include "graph.hpp"
#include "instance.hpp"
#include "mnemo/abi/backend_abi.h"

namespace mnemo_vk {
namespace {

int32_t device_count() { return static_cast<int32_t>(instance().devices.size()); }

const char* type_name(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
        default: return "other";
    }
}

mnemo_status device_info(int32_t index, mnemo_device_info* out) {
    const Instance& in = instance();
    if (!out || index < 0 || index >= static_cast<int32_t>(in.devices.size())) return MNEMO_ERR_INVALID;
    const PhysicalDevice& d = in.devices[static_cast<size_t>(index)];
    const DeviceFeatures& f = d.features;
    *out = mnemo_device_info{};
    std::snprintf(out->name, sizeof out->name, "%.127s", d.props.deviceName);
    const std::string uuid = mnemo_backend::format_uuid(d.uuid);
    std::snprintf(out->description, sizeof out->description,
                  "%s; Vulkan %u.%u; driver %s %s; subgroup %u%s; fp16 %s%s; int8 %s; 16-bit storage %s; %s; uuid %s",
                  type_name(d.props.deviceType), VK_API_VERSION_MAJOR(f.api_version), VK_API_VERSION_MINOR(f.api_version),
                  d.driver_name.c_str(), d.driver_info.c_str(), f.subgroup_size, f.subgroup_arithmetic ? " (arithmetic)" : "",
                  f.shader_float16 ? "yes" : "no",
                  f.half_by_integer_ops ? " (f16 widened by integer ops: driver workaround)" : "", f.shader_int8 ? "yes" : "no", f.storage_16bit ? "yes" : "no", d.heaps.c_str(), uuid.c_str());
    switch (d.props.deviceType) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: out->type = MNEMO_DEVICE_GPU; break;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: out->type = MNEMO_DEVICE_IGPU; break;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: out->type = MNEMO_DEVICE_CPU; break;
        default: out->type = MNEMO_DEVICE_OTHER; break;
    }
    out->caps = MNEMO_CAP_F16 | MNEMO_CAP_BF16 | MNEMO_CAP_QUANT | (f.timestamps ? MNEMO_CAP_PROFILE : 0u) |
                (host_import_usable(d) ? MNEMO_CAP_IMPORT_HOST : 0u) | (f.host_import ? MNEMO_CAP_MAP_HOST : 0u);
    out->memory_total = d.device_local_bytes;
    std::memcpy(out->uuid, d.uuid, 16);
    out->has_uuid = 1;
    return MNEMO_OK;
}

// Why there is no device: no loader, no instance, or every device lacks what Mnemo needs.
const char* unavailable_reason() {
    static const std::string why = [] {
        const Instance& in = instance();
        if (!in.error.empty()) return in.error;
        if (!in.devices.empty()) return std::string();
        if (in.skipped.empty()) return std::string("the Vulkan loader lists no device (no driver installed)");
        std::string s = "no usable device:";
        for (const std::string& k : in.skipped) s += " " + k + ";";
        return s;
    }();
    return why.c_str();
}

}  // namespace
}  // namespace mnemo_vk

MNEMO_BACKEND_MODULE(mnemo_vk::Context, mnemo_vk::Buffer, "vulkan", mnemo_vk::device_count, mnemo_vk::device_info, mnemo_vk::unavailable_reason)
