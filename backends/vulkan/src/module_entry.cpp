// The module's C entry point: the mnemo_backend_api table of the Vulkan backend. Each function
// is an exception-proof adapter onto Context and the graph code. With no Vulkan loader or no
// usable device the module still loads and reports zero devices.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "context.hpp"
#include "backend_common.hpp"
#include "graph.hpp"
#include "instance.hpp"
#include "mnemo/abi/backend_abi.h"

namespace mnemo_vk {
namespace {

Context* as_ctx(void* ctx) { return static_cast<Context*>(ctx); }

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
                  "%s; Vulkan %u.%u; driver %s %s; subgroup %u%s; fp16 %s; int8 %s; 16-bit storage %s; %s; uuid %s",
                  type_name(d.props.deviceType), VK_API_VERSION_MAJOR(f.api_version), VK_API_VERSION_MINOR(f.api_version),
                  d.driver_name.c_str(), d.driver_info.c_str(), f.subgroup_size, f.subgroup_arithmetic ? " (arithmetic)" : "",
                  f.shader_float16 ? "yes" : "no", f.shader_int8 ? "yes" : "no", f.storage_16bit ? "yes" : "no", d.heaps.c_str(), uuid.c_str());
    switch (d.props.deviceType) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: out->type = MNEMO_DEVICE_GPU; break;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: out->type = MNEMO_DEVICE_IGPU; break;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: out->type = MNEMO_DEVICE_CPU; break;
        default: out->type = MNEMO_DEVICE_OTHER; break;
    }
    out->caps = MNEMO_CAP_F16 | MNEMO_CAP_BF16 | (f.timestamps ? MNEMO_CAP_PROFILE : 0u) |
                (host_import_usable(d) ? MNEMO_CAP_IMPORT_HOST : 0u);
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

mnemo_status open_ctx(int32_t device, const mnemo_backend_config*, void** out_ctx, mnemo_error* err) {
    if (!out_ctx) return set_error(err, MNEMO_ERR_INVALID, "vulkan open: out_ctx is null");
    try {
        *out_ctx = new Context(device);
        return MNEMO_OK;
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "vulkan open: out of memory");
    } catch (const std::exception& e) {
        return set_error(err, MNEMO_ERR_DEVICE, std::string("vulkan open: ") + e.what());
    }
}

void close_ctx(void* ctx) { delete as_ctx(ctx); }

// Host threads only record and submit; nothing to resize.
mnemo_status set_threads(void* ctx, int32_t) { return ctx ? MNEMO_OK : MNEMO_ERR_INVALID; }

mnemo_status buffer_alloc(void* ctx, uint64_t size, void** out, mnemo_error* err) {
    if (!ctx || !out) return set_error(err, MNEMO_ERR_INVALID, "vulkan buffer_alloc: null argument");
    try {
        std::string why;
        Buffer* b = as_ctx(ctx)->alloc(size, why);
        if (!b) return set_error(err, MNEMO_ERR_NO_MEMORY, "vulkan buffer_alloc: " + why);
        *out = b;
        return MNEMO_OK;
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "vulkan buffer_alloc: out of host memory");
    }
}

// Weights used in place on unified memory (VK_EXT_external_memory_host). An error sends the
// engine to buffer_alloc + buffer_write, so a refused pointer costs a copy, never a failure.
mnemo_status buffer_from_host(void* ctx, void* host, uint64_t size, void** out, mnemo_error* err) {
    if (!ctx || !host || !out) return set_error(err, MNEMO_ERR_INVALID, "vulkan buffer_from_host: null argument");
    try {
        std::string why;
        Buffer* b = as_ctx(ctx)->import_host(host, size, why);
        if (!b) return set_error(err, MNEMO_ERR_DEVICE, "vulkan buffer_from_host: " + why);
        *out = b;
        return MNEMO_OK;
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "vulkan buffer_from_host: out of host memory");
    }
}

void buffer_free(void* ctx, void* buffer) {
    if (ctx && buffer) as_ctx(ctx)->release(static_cast<Buffer*>(buffer));
}

mnemo_status buffer_write(void* ctx, void* buffer, uint64_t offset, const void* src, uint64_t size, mnemo_error* err) {
    if (!ctx || (!src && size)) return set_error(err, MNEMO_ERR_INVALID, "vulkan buffer_write: null argument");
    if (!as_ctx(ctx)->owns(buffer)) return set_error(err, MNEMO_ERR_INVALID, "vulkan buffer_write: not a buffer of this context");
    std::string why;
    if (!as_ctx(ctx)->write(static_cast<Buffer*>(buffer), offset, src, size, why))
        return set_error(err, MNEMO_ERR_DEVICE, "vulkan buffer_write: " + why);
    return MNEMO_OK;
}

mnemo_status buffer_read(void* ctx, void* buffer, uint64_t offset, void* dst, uint64_t size, mnemo_error* err) {
    if (!ctx || (!dst && size)) return set_error(err, MNEMO_ERR_INVALID, "vulkan buffer_read: null argument");
    if (!as_ctx(ctx)->owns(buffer)) return set_error(err, MNEMO_ERR_INVALID, "vulkan buffer_read: not a buffer of this context");
    std::string why;
    if (!as_ctx(ctx)->read(static_cast<Buffer*>(buffer), offset, dst, size, why))
        return set_error(err, MNEMO_ERR_DEVICE, "vulkan buffer_read: " + why);
    return MNEMO_OK;
}

int32_t supports(void* ctx, const mnemo_node* node) {
    if (!ctx || !node) return 0;
    try {
        return node_supported(*as_ctx(ctx), *node) ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

mnemo_status prepare(void* ctx, const mnemo_node* nodes, int32_t n_nodes, void** out_graph, mnemo_error* err) {
    if (!ctx) return set_error(err, MNEMO_ERR_INVALID, "vulkan graph_prepare: context is null");
    return graph_prepare(*as_ctx(ctx), nodes, n_nodes, out_graph, err);
}

mnemo_status run(void* ctx, void* graph, uint64_t* timings_ns, mnemo_error* err) {
    if (!ctx) return set_error(err, MNEMO_ERR_INVALID, "vulkan graph_run: context is null");
    try {
        return graph_run(*as_ctx(ctx), graph, timings_ns, err);
    } catch (const std::exception& e) {
        return set_error(err, MNEMO_ERR_DEVICE, std::string("vulkan graph_run: ") + e.what());
    }
}

void release(void* ctx, void* graph) {
    if (ctx && graph) graph_release(*as_ctx(ctx), graph);
}

const mnemo_backend_api kApi = {
    MNEMO_ABI_VERSION,
    sizeof(mnemo_backend_api),
    "vulkan",
    device_count,
    device_info,
    open_ctx,
    close_ctx,
    set_threads,
    buffer_alloc,
    buffer_from_host,
    buffer_free,
    buffer_write,
    buffer_read,
    supports,
    prepare,
    run,
    release,
    unavailable_reason,
};

}  // namespace
}  // namespace mnemo_vk

extern "C" MNEMO_EXPORT const mnemo_backend_api* mnemo_backend_entry(void) { return &mnemo_vk::kApi; }
