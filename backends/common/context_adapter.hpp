// The C entry points of a backend module that only forward to its C++ Context and graph
// functions, written once for the CPU, Vulkan and CUDA modules: argument checks, making the
// device current, exceptions turned into statuses, and the error text ("<backend> <function>:
// ..."). A module supplies Traits:
//   using Context = ...; using Buffer = ...; static constexpr const char* kName = "vulkan";
// and, in Context's namespace (found by argument-dependent lookup), the functions
// MNEMO_BACKEND_GRAPH_FUNCTIONS(Context) declares.
// Context must offer: Context(int32_t device) or Context(int32_t device, const
// mnemo_backend_config*) (throws), activate(std::string&), alloc, import_host, release, owns,
// write, read (see backends/vulkan/src/context.hpp), and set_threads(int32_t) -> mnemo_status
// where threads run kernels (the CPU).
#pragma once
#include <exception>
#include <new>
#include <string>
#include <type_traits>

#include "backend_common.hpp"

// The graph functions of a module, in its namespace: whether a node runs there; prepare a node
// list once; run it (per-node times into timings_ns when not null); release it.
#define MNEMO_BACKEND_GRAPH_FUNCTIONS(Context)                                                                   \
    bool node_supported(const Context& ctx, const mnemo_node& node);                                             \
    mnemo_status graph_prepare(Context& ctx, const mnemo_node* nodes, int32_t n_nodes, void** out, mnemo_error* err); \
    mnemo_status graph_run(Context& ctx, void* graph, uint64_t* timings_ns, mnemo_error* err);                    \
    void graph_release(Context& ctx, void* graph);

namespace mnemo_backend {

template <class Traits>
struct ContextAdapter {
    using Context = typename Traits::Context;
    using Buffer = typename Traits::Buffer;

    static Context* ctx_of(void* ctx) { return static_cast<Context*>(ctx); }
    static std::string where(const char* fn) { return std::string(Traits::kName) + " " + fn + ": "; }

    static mnemo_status open(int32_t device, const mnemo_backend_config* config, void** out_ctx, mnemo_error* err) {
        if (!out_ctx) return set_error(err, MNEMO_ERR_INVALID, where("open") + "out_ctx is null");
        try {
            if constexpr (std::is_constructible_v<Context, int32_t, const mnemo_backend_config*>)
                *out_ctx = new Context(device, config);
            else
                *out_ctx = new Context(device);
            return MNEMO_OK;
        } catch (const std::bad_alloc&) {
            return set_error(err, MNEMO_ERR_NO_MEMORY, where("open") + "out of memory");
        } catch (const std::exception& e) {
            return set_error(err, MNEMO_ERR_DEVICE, where("open") + e.what());
        }
    }
    static void close(void* ctx) { delete ctx_of(ctx); }
    // GPU modules' host threads only record and submit: nothing to resize there.
    static mnemo_status set_threads(void* ctx, int32_t n_threads) {
        if (!ctx) return MNEMO_ERR_INVALID;
        if constexpr (requires(Context& c) { c.set_threads(n_threads); })
            return ctx_of(ctx)->set_threads(n_threads);
        else
            return MNEMO_OK;
    }

    static mnemo_status buffer_alloc(void* ctx, uint64_t size, void** out, mnemo_error* err) {
        return make_buffer(ctx, out, err, "buffer_alloc", MNEMO_ERR_NO_MEMORY,
                           [&](Context& c, std::string& why) { return c.alloc(size, why); });
    }
    // Weights used in place where the device reads host memory. Any error sends the engine to
    // buffer_alloc + buffer_write: a refused pointer costs a copy, never a failure.
    static mnemo_status buffer_from_host(void* ctx, void* host, uint64_t size, void** out, mnemo_error* err) {
        if (!host) return set_error(err, MNEMO_ERR_INVALID, where("buffer_from_host") + "null argument");
        return make_buffer(ctx, out, err, "buffer_from_host", MNEMO_ERR_UNSUPPORTED,
                           [&](Context& c, std::string& why) { return c.import_host(host, size, why); });
    }
    static void buffer_free(void* ctx, void* buffer) {
        if (!ctx || !buffer) return;
        std::string ignored;
        ctx_of(ctx)->activate(ignored);
        ctx_of(ctx)->release(static_cast<Buffer*>(buffer));
    }
    static mnemo_status buffer_write(void* ctx, void* buffer, uint64_t offset, const void* src, uint64_t size, mnemo_error* err) {
        if (!ctx || (!src && size)) return set_error(err, MNEMO_ERR_INVALID, where("buffer_write") + "null argument");
        return transfer(ctx, buffer, err, "buffer_write",
                        [&](Context& c, std::string& why) { return c.write(static_cast<Buffer*>(buffer), offset, src, size, why); });
    }
    static mnemo_status buffer_read(void* ctx, void* buffer, uint64_t offset, void* dst, uint64_t size, mnemo_error* err) {
        if (!ctx || (!dst && size)) return set_error(err, MNEMO_ERR_INVALID, where("buffer_read") + "null argument");
        return transfer(ctx, buffer, err, "buffer_read",
                        [&](Context& c, std::string& why) { return c.read(static_cast<Buffer*>(buffer), offset, dst, size, why); });
    }

    static int32_t supports(void* ctx, const mnemo_node* node) {
        if (!ctx || !node) return 0;
        try {
            return node_supported(*ctx_of(ctx), *node) ? 1 : 0;
        } catch (...) {
            return 0;
        }
    }
    static mnemo_status prepare(void* ctx, const mnemo_node* nodes, int32_t n_nodes, void** out_graph, mnemo_error* err) {
        if (!ctx) return set_error(err, MNEMO_ERR_INVALID, where("graph_prepare") + "context is null");
        if (!out_graph || n_nodes < 0 || (n_nodes > 0 && !nodes))
            return set_error(err, MNEMO_ERR_INVALID, where("graph_prepare") + "invalid node list (" + std::to_string(n_nodes) + " nodes)");
        try {
            return graph_prepare(*ctx_of(ctx), nodes, n_nodes, out_graph, err);
        } catch (const std::bad_alloc&) {
            return set_error(err, MNEMO_ERR_NO_MEMORY, where("graph_prepare") + "out of host memory");
        } catch (const std::exception& e) {
            return set_error(err, MNEMO_ERR_DEVICE, where("graph_prepare") + e.what());
        }
    }
    static mnemo_status run(void* ctx, void* graph, uint64_t* timings_ns, mnemo_error* err) {
        if (!ctx) return set_error(err, MNEMO_ERR_INVALID, where("graph_run") + "context is null");
        try {
            return graph_run(*ctx_of(ctx), graph, timings_ns, err);
        } catch (const std::exception& e) {
            return set_error(err, MNEMO_ERR_DEVICE, where("graph_run") + e.what());
        }
    }
    static void release(void* ctx, void* graph) {
        if (ctx && graph) graph_release(*ctx_of(ctx), graph);
    }

    // The module's table; the device functions are the module's own.
    static mnemo_backend_api table(int32_t (*device_count)(void), mnemo_status (*device_info)(int32_t, mnemo_device_info*),
                                   const char* (*unavailable_reason)(void)) {
        return mnemo_backend_api{MNEMO_ABI_VERSION, sizeof(mnemo_backend_api), Traits::kName, device_count, device_info, open,
                                 close, set_threads, buffer_alloc, buffer_from_host, buffer_free, buffer_write, buffer_read,
                                 supports, prepare, run, release, unavailable_reason};
    }

private:
    template <class Make>
    static mnemo_status make_buffer(void* ctx, void** out, mnemo_error* err, const char* fn, mnemo_status on_fail, Make make) {
        if (!ctx || !out) return set_error(err, MNEMO_ERR_INVALID, where(fn) + "null argument");
        try {
            std::string why;
            if (!ctx_of(ctx)->activate(why)) return set_error(err, MNEMO_ERR_DEVICE, where(fn) + why);
            Buffer* b = make(*ctx_of(ctx), why);
            if (!b) return set_error(err, on_fail, where(fn) + why);
            *out = b;
            return MNEMO_OK;
        } catch (const std::bad_alloc&) {
            return set_error(err, MNEMO_ERR_NO_MEMORY, where(fn) + "out of host memory");
        }
    }
    template <class Move>
    static mnemo_status transfer(void* ctx, void* buffer, mnemo_error* err, const char* fn, Move move) {
        if (!ctx_of(ctx)->owns(buffer)) return set_error(err, MNEMO_ERR_INVALID, where(fn) + "not a buffer of this context");
        std::string why;
        if (!ctx_of(ctx)->activate(why) || !move(*ctx_of(ctx), why)) return set_error(err, MNEMO_ERR_DEVICE, where(fn) + why);
        return MNEMO_OK;
    }
};

}  // namespace mnemo_backend

// A module's exported entry point, mnemo_backend_entry(): the table ContextAdapter makes over the
// module's Context and Buffer types and its own device functions (used once, at global scope, in
// the module's module_entry.cpp).
#define MNEMO_BACKEND_MODULE(ContextT, BufferT, name, device_count, device_info, unavailable_reason)                        \
    namespace {                                                                                                     \
    struct ModuleTraits {                                                                                           \
        using Context = ContextT;                                                                                   \
        using Buffer = BufferT;                                                                                     \
        static constexpr const char* kName = name;                                                                  \
    };                                                                                                              \
    }                                                                                                               \
    extern "C" MNEMO_EXPORT const mnemo_backend_api* mnemo_backend_entry(void) {                                    \
        static const mnemo_backend_api api =                                                                        \
            ::mnemo_backend::ContextAdapter<ModuleTraits>::table(device_count, device_info, unavailable_reason);      \
        return &api;                                                                                                \
    }
