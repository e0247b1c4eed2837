/*
 * Backend module ABI. A backend is a shared library (libmnemo-backend-<name>.so) that exports
 *
 *     MNEMO_EXPORT const mnemo_backend_api* mnemo_backend_entry(void);
 *
 * The engine loads it with dlopen, calls the entry point and refuses the module when
 * api->abi_version != MNEMO_ABI_VERSION. A backend knows ops, never models.
 *
 * Life cycle: device_count/device_info may be called before anything is opened and must not
 * fail when the driver is missing (report zero devices instead). open() creates a context bound
 * to one device; every other call takes that context. A context is used from one thread at a
 * time; the backend may use worker threads internally.
 */
#ifndef MNEMO_BACKEND_ABI_H
#define MNEMO_BACKEND_ABI_H

#include "mnemo_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mnemo_device_type {
    MNEMO_DEVICE_CPU = 0,
    MNEMO_DEVICE_GPU = 1,  /* discrete */
    MNEMO_DEVICE_IGPU = 2, /* integrated, shares host memory */
    MNEMO_DEVICE_OTHER = 3
} mnemo_device_type;

/* Capability bits of mnemo_device_info.caps */
#define MNEMO_CAP_HOST_MEMORY (1u << 0) /* buffers are host addresses: weights can be used in place */
#define MNEMO_CAP_F16 (1u << 1)         /* f16 weights supported */
#define MNEMO_CAP_BF16 (1u << 2)        /* bf16 weights supported */
#define MNEMO_CAP_PROFILE (1u << 3)     /* per-node timings in graph_run */
/* buffer_from_host works for read-only weights (mmapped checkpoints): the device imports the host
 * pages and kernels read them in place, though its own buffers are not host addresses (Vulkan on
 * unified memory). It may still refuse a given pointer; the engine then uploads a copy. */
#define MNEMO_CAP_IMPORT_HOST (1u << 4)
/* buffer_from_host works on this device even where reading host memory is slower than its own
 * (a discrete GPU reading pinned host pages over the bus): what `--memory-tables host` uses for the
 * memory layers' value tables, of which a step reads only the selected rows. Implied by
 * MNEMO_CAP_HOST_MEMORY and MNEMO_CAP_IMPORT_HOST. */
#define MNEMO_CAP_MAP_HOST (1u << 5)
/* Block-quantized weights (q8_0, q4_0, q4_k, q5_k, q6_k) in MATMUL, GET_ROWS and the memory-layer
 * and MoE ops that take weight tables, decoded by the kernels (docs/ops.md lists op by op). */
#define MNEMO_CAP_QUANT (1u << 6)

typedef struct mnemo_device_info {
    char name[128];        /* short, e.g. "AMD EPYC 7B13" */
    char description[256]; /* free text: driver, ISA features, ... */
    int32_t type;          /* mnemo_device_type */
    uint32_t caps;         /* MNEMO_CAP_* */
    uint64_t memory_total; /* bytes; 0 when unknown */
    uint64_t memory_free;  /* bytes; 0 when unknown */
    /* The physical device's UUID when has_uuid: the same GPU reached through two backends (Vulkan
     * and CUDA on an NVIDIA card) reports the same UUID, so front ends can show it once. */
    uint8_t uuid[16];
    int32_t has_uuid;
} mnemo_device_info;

typedef struct mnemo_backend_config {
    int32_t n_threads; /* host threads the backend may use; <= 0 means its own default */
} mnemo_backend_config;

typedef struct mnemo_backend_api {
    uint32_t abi_version; /* MNEMO_ABI_VERSION the module was built against */
    uint32_t struct_size; /* sizeof(mnemo_backend_api) as built */
    const char* name;     /* "cpu", "vulkan", "cuda" */

    int32_t (*device_count)(void);
    mnemo_status (*device_info)(int32_t index, mnemo_device_info* out);

    mnemo_status (*open)(int32_t device, const mnemo_backend_config* config, void** out_ctx,
                         mnemo_error* err);
    void (*close)(void* ctx);
    mnemo_status (*set_threads)(void* ctx, int32_t n_threads);

    /* Buffers. Contents of a new buffer are unspecified. */
    mnemo_status (*buffer_alloc)(void* ctx, uint64_t size, void** out_buffer, mnemo_error* err);
    /* Wrap host memory the caller keeps alive (read-only use, e.g. mmapped weights). Optional:
     * NULL when the backend cannot; the engine then allocates and uploads. */
    mnemo_status (*buffer_from_host)(void* ctx, void* host, uint64_t size, void** out_buffer,
                                     mnemo_error* err);
    void (*buffer_free)(void* ctx, void* buffer);
    mnemo_status (*buffer_write)(void* ctx, void* buffer, uint64_t offset, const void* src,
                                 uint64_t size, mnemo_error* err);
    mnemo_status (*buffer_read)(void* ctx, void* buffer, uint64_t offset, void* dst,
                                uint64_t size, mnemo_error* err);

    /* 1 when the node (op, dtypes, shapes, params) can run here, else 0. */
    int32_t (*supports_node)(void* ctx, const mnemo_node* node);

    /*
     * Graphs. prepare() sees the node list once (its buffers, offsets and shapes never change
     * afterwards: only the contents of input buffers do), so the backend may record command
     * buffers, pick kernels and size scratch memory there. run() executes the nodes in order and
     * returns after they are complete. When timings_ns is not NULL it receives one duration per
     * node. The node array may be freed by the caller after prepare() returns.
     */
    mnemo_status (*graph_prepare)(void* ctx, const mnemo_node* nodes, int32_t n_nodes,
                                  void** out_graph, mnemo_error* err);
    mnemo_status (*graph_run)(void* ctx, void* graph, uint64_t* timings_ns, mnemo_error* err);
    void (*graph_release)(void* ctx, void* graph);

    /* Optional (may be NULL): when device_count() is 0, why ("no CUDA driver", "no Vulkan loader");
     * a static string owned by the module. */
    const char* (*unavailable_reason)(void);
} mnemo_backend_api;

typedef const mnemo_backend_api* (*mnemo_backend_entry_fn)(void);
#define MNEMO_BACKEND_ENTRY_SYMBOL "mnemo_backend_entry"

#ifdef __cplusplus
}
#endif
#endif /* MNEMO_BACKEND_ABI_H */
