// The module's C entry point: the mnemo_backend_api table of the CPU backend. Every function
// here is a thin, exception-proof adapter onto the C++ parts (buffers, graph, thread pool).
#include <exception>
#include <memory>
#include <new>

#include "context.hpp"
#include "device_info.hpp"
#include "graph.hpp"
#include "mnemo/abi/backend_abi.h"

namespace mnemo_cpu {
namespace {

CpuContext* as_ctx(void* ctx) { return static_cast<CpuContext*>(ctx); }

int32_t device_count() { return 1; }

mnemo_status device_info(int32_t index, mnemo_device_info* out) {
    if (index != 0 || !out) return MNEMO_ERR_INVALID;
    try {
        fill_device_info(out);
    } catch (...) {
        return MNEMO_ERR_DEVICE;
    }
    return MNEMO_OK;
}

int thread_count(int32_t requested) { return requested > 0 ? requested : default_thread_count(); }

mnemo_status open_ctx(int32_t device, const mnemo_backend_config* config, void** out_ctx, mnemo_error* err) {
    if (device != 0) return set_error(err, MNEMO_ERR_INVALID, "cpu open: device %d does not exist (only 0)", device);
    if (!out_ctx) return set_error(err, MNEMO_ERR_INVALID, "cpu open: out_ctx is null");
    try {
        auto ctx = std::make_unique<CpuContext>();
        ctx->isa = best_isa();
        ctx->pool = std::make_unique<ThreadPool>(thread_count(config ? config->n_threads : 0));
        *out_ctx = ctx.release();
        return MNEMO_OK;
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cpu open: out of memory");
    } catch (const std::exception& e) {
        return set_error(err, MNEMO_ERR_DEVICE, "cpu open: cannot start worker threads: %s", e.what());
    }
}

void close_ctx(void* ctx) { delete as_ctx(ctx); }

mnemo_status set_threads(void* ctx, int32_t n_threads) {
    if (!ctx) return MNEMO_ERR_INVALID;
    const int n = thread_count(n_threads);
    if (as_ctx(ctx)->pool && as_ctx(ctx)->pool->size() == n) return MNEMO_OK;
    try {
        as_ctx(ctx)->pool.reset();  // join the old workers before starting new ones
        as_ctx(ctx)->pool = std::make_unique<ThreadPool>(n);
    } catch (...) {
        try {
            as_ctx(ctx)->pool = std::make_unique<ThreadPool>(1);  // the calling thread alone
        } catch (...) {
            return MNEMO_ERR_NO_MEMORY;
        }
        return MNEMO_ERR_NO_MEMORY;
    }
    return MNEMO_OK;
}

mnemo_status buffer_alloc(void* ctx, uint64_t size, void** out, mnemo_error* err) {
    if (!ctx || !out) return set_error(err, MNEMO_ERR_INVALID, "cpu buffer_alloc: null argument");
    return as_ctx(ctx)->buffers.alloc(size, out, err);
}

mnemo_status buffer_from_host(void* ctx, void* host, uint64_t size, void** out, mnemo_error* err) {
    if (!ctx || !out) return set_error(err, MNEMO_ERR_INVALID, "cpu buffer_from_host: null argument");
    return as_ctx(ctx)->buffers.wrap(host, size, out, err);
}

void buffer_free(void* ctx, void* buffer) {
    if (ctx && buffer) as_ctx(ctx)->buffers.release(buffer);
}

mnemo_status buffer_write(void* ctx, void* buffer, uint64_t offset, const void* src, uint64_t size, mnemo_error* err) {
    if (!ctx || (!src && size)) return set_error(err, MNEMO_ERR_INVALID, "cpu buffer_write: null argument");
    return as_ctx(ctx)->buffers.write(buffer, offset, src, size, err);
}

mnemo_status buffer_read(void* ctx, void* buffer, uint64_t offset, void* dst, uint64_t size, mnemo_error* err) {
    if (!ctx || (!dst && size)) return set_error(err, MNEMO_ERR_INVALID, "cpu buffer_read: null argument");
    return as_ctx(ctx)->buffers.read(buffer, offset, dst, size, err);
}

int32_t supports(void* ctx, const mnemo_node* node) { return node ? supports_node(*node) : 0; }

mnemo_status prepare(void* ctx, const mnemo_node* nodes, int32_t n_nodes, void** out_graph, mnemo_error* err) {
    if (!ctx) return set_error(err, MNEMO_ERR_INVALID, "cpu graph_prepare: context is null");
    try {
        return graph_prepare(*as_ctx(ctx), nodes, n_nodes, out_graph, err);
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cpu graph_prepare: out of memory");
    }
}

mnemo_status run(void* ctx, void* graph, uint64_t* timings_ns, mnemo_error* err) {
    if (!ctx) return set_error(err, MNEMO_ERR_INVALID, "cpu graph_run: context is null");
    return graph_run(*as_ctx(ctx), graph, timings_ns, err);
}

void release(void* ctx, void* graph) { graph_release(graph); }

const mnemo_backend_api kApi = {
    MNEMO_ABI_VERSION,
    sizeof(mnemo_backend_api),
    "cpu",
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
    nullptr,  // unavailable_reason: the CPU is always there
};

}  // namespace
}  // namespace mnemo_cpu

extern "C" MNEMO_EXPORT const mnemo_backend_api* mnemo_backend_entry(void) { return &mnemo_cpu::kApi; }
