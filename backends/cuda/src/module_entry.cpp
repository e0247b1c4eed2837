// The module's C entry point: the mnemo_backend_api table of the CUDA backend. Each function is
// an exception-proof adapter onto Context and the graph code. With no CUDA driver or device the
// module still loads and reports zero devices.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "context.hpp"
#include "devices.hpp"
#include "backend_common.hpp"
#include "graph.hpp"
#include "mnemo/abi/backend_abi.h"

namespace mnemo_cuda {
namespace {

Context* as_ctx(void* ctx) { return static_cast<Context*>(ctx); }

int32_t device_count() { return static_cast<int32_t>(device_list().devices.size()); }

mnemo_status device_info(int32_t index, mnemo_device_info* out) {
    const DeviceList& list = device_list();
    if (!out || index < 0 || index >= static_cast<int32_t>(list.devices.size())) return MNEMO_ERR_INVALID;
    const DeviceProps& d = list.devices[static_cast<size_t>(index)];
    *out = mnemo_device_info{};
    std::snprintf(out->name, sizeof out->name, "%.127s", d.name.c_str());
    std::string blas_why;
    const Blas* blas = load_blas(&blas_why);
    const double bandwidth_gbps = 2.0 * d.memory_clock_khz * 1e3 * (d.memory_bus_width / 8.0) / 1e9;
    const std::string uuid = mnemo_backend::format_uuid(d.uuid);
    std::snprintf(out->description, sizeof out->description,
                  "%s; compute capability %d.%d; %d SMs; %.0f GB/s peak memory; driver %d, runtime %d; %s; uuid %s",
                  d.integrated ? "integrated (unified memory)" : "discrete", d.cc_major, d.cc_minor, d.multiprocessors,
                  bandwidth_gbps, list.driver_version, list.runtime_version,
                  blas ? ("cuBLAS " + blas->library).c_str() : "no cuBLAS", uuid.c_str());
    out->type = d.integrated ? MNEMO_DEVICE_IGPU : MNEMO_DEVICE_GPU;
    out->caps = MNEMO_CAP_F16 | MNEMO_CAP_BF16 | MNEMO_CAP_PROFILE | (d.integrated && d.can_map_host ? MNEMO_CAP_IMPORT_HOST : 0u);
    out->memory_total = d.memory_total;
    std::memcpy(out->uuid, d.uuid, 16);
    out->has_uuid = 1;
    return MNEMO_OK;
}

const char* unavailable_reason() { return device_list().why.c_str(); }

mnemo_status open_ctx(int32_t device, const mnemo_backend_config*, void** out_ctx, mnemo_error* err) {
    if (!out_ctx) return set_error(err, MNEMO_ERR_INVALID, "cuda open: out_ctx is null");
    try {
        *out_ctx = new Context(device);
        return MNEMO_OK;
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cuda open: out of memory");
    } catch (const std::exception& e) {
        return set_error(err, MNEMO_ERR_DEVICE, std::string("cuda open: ") + e.what());
    }
}

void close_ctx(void* ctx) { delete as_ctx(ctx); }

mnemo_status set_threads(void* ctx, int32_t) { return ctx ? MNEMO_OK : MNEMO_ERR_INVALID; }

mnemo_status buffer_alloc(void* ctx, uint64_t size, void** out, mnemo_error* err) {
    if (!ctx || !out) return set_error(err, MNEMO_ERR_INVALID, "cuda buffer_alloc: null argument");
    std::string why;
    if (!as_ctx(ctx)->activate(why)) return set_error(err, MNEMO_ERR_DEVICE, "cuda buffer_alloc: " + why);
    try {
        Buffer* b = as_ctx(ctx)->alloc(size, why);
        if (!b) return set_error(err, MNEMO_ERR_NO_MEMORY, "cuda buffer_alloc: " + why);
        *out = b;
        return MNEMO_OK;
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cuda buffer_alloc: out of host memory");
    }
}

mnemo_status buffer_from_host(void* ctx, void* host, uint64_t size, void** out, mnemo_error* err) {
    if (!ctx || !out || !host) return set_error(err, MNEMO_ERR_INVALID, "cuda buffer_from_host: null argument");
    std::string why;
    if (!as_ctx(ctx)->activate(why)) return set_error(err, MNEMO_ERR_DEVICE, "cuda buffer_from_host: " + why);
    try {
        Buffer* b = as_ctx(ctx)->import_host(host, size, why);
        if (!b) return set_error(err, MNEMO_ERR_UNSUPPORTED, "cuda buffer_from_host: " + why);
        *out = b;
        return MNEMO_OK;
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cuda buffer_from_host: out of host memory");
    }
}

void buffer_free(void* ctx, void* buffer) {
    if (!ctx || !buffer) return;
    std::string ignored;
    as_ctx(ctx)->activate(ignored);
    as_ctx(ctx)->release(static_cast<Buffer*>(buffer));
}

mnemo_status buffer_write(void* ctx, void* buffer, uint64_t offset, const void* src, uint64_t size, mnemo_error* err) {
    if (!ctx || (!src && size)) return set_error(err, MNEMO_ERR_INVALID, "cuda buffer_write: null argument");
    if (!as_ctx(ctx)->owns(buffer)) return set_error(err, MNEMO_ERR_INVALID, "cuda buffer_write: not a buffer of this context");
    std::string why;
    if (!as_ctx(ctx)->activate(why) || !as_ctx(ctx)->write(static_cast<Buffer*>(buffer), offset, src, size, why))
        return set_error(err, MNEMO_ERR_DEVICE, "cuda buffer_write: " + why);
    return MNEMO_OK;
}

mnemo_status buffer_read(void* ctx, void* buffer, uint64_t offset, void* dst, uint64_t size, mnemo_error* err) {
    if (!ctx || (!dst && size)) return set_error(err, MNEMO_ERR_INVALID, "cuda buffer_read: null argument");
    if (!as_ctx(ctx)->owns(buffer)) return set_error(err, MNEMO_ERR_INVALID, "cuda buffer_read: not a buffer of this context");
    std::string why;
    if (!as_ctx(ctx)->activate(why) || !as_ctx(ctx)->read(static_cast<Buffer*>(buffer), offset, dst, size, why))
        return set_error(err, MNEMO_ERR_DEVICE, "cuda buffer_read: " + why);
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
    if (!ctx) return set_error(err, MNEMO_ERR_INVALID, "cuda graph_prepare: context is null");
    return graph_prepare(*as_ctx(ctx), nodes, n_nodes, out_graph, err);
}

mnemo_status run(void* ctx, void* graph, uint64_t* timings_ns, mnemo_error* err) {
    if (!ctx) return set_error(err, MNEMO_ERR_INVALID, "cuda graph_run: context is null");
    try {
        return graph_run(*as_ctx(ctx), graph, timings_ns, err);
    } catch (const std::exception& e) {
        return set_error(err, MNEMO_ERR_DEVICE, std::string("cuda graph_run: ") + e.what());
    }
}

void release(void* ctx, void* graph) {
    if (ctx && graph) graph_release(*as_ctx(ctx), graph);
}

const mnemo_backend_api kApi = {
    MNEMO_ABI_VERSION,
    sizeof(mnemo_backend_api),
    "cuda",
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
}  // namespace mnemo_cuda

extern "C" MNEMO_EXPORT const mnemo_backend_api* mnemo_backend_entry(void) { return &mnemo_cuda::kApi; }
